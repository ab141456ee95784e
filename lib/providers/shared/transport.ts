/**
 * The thin HTTP layer every provider shares: one `fetch` with the three timeouts (first byte, idle between
 * chunks, total), client-disconnect propagation, the bound on what a whole answer may weigh, and the mapping of
 * transport failures to 502/504.
 *
 * Provider modules build the vendor request and translate the answer; this module only moves bytes and
 * decides what a failure means.
 *
 * @module
 */
import type { UpstreamLimits } from "../../config/types.ts";
import { badGateway, ClientGoneError, GatewayError, gatewayTimeout } from "../../errors.ts";
import { type Deadline, DeadlineQueue } from "../../timers/deadlines.ts";
import type { UpstreamCall } from "../types.ts";
import { readWithin } from "../../streams/read_within.ts";
import type { ChunkSource } from "../../streams/pull_through.ts";

/** The schema's `server.upstream_limits` defaults, for targets built without limits (tests). */
export const DEFAULT_UPSTREAM_LIMITS: UpstreamLimits = Object.freeze({
  maxBodyBytes: 32 * 1024 * 1024,
  maxEventBytes: 16 * 1024 * 1024,
});

/** The limits that apply to `call`. */
export function upstreamLimits(call: UpstreamCall): UpstreamLimits {
  return call.target.limits ?? DEFAULT_UPSTREAM_LIMITS;
}

/** The 502 for an upstream answer bigger than the gateway reads (`key` names the limit); the target counts as failed. */
export function upstreamTooLarge(
  provider: string,
  what: string,
  limit: number,
  key = "server.upstream_limits",
): GatewayError {
  return badGateway(
    `Provider "${provider}" sent ${what} larger than the gateway's limit of ${limit} bytes (${key}).`,
    "upstream_response_too_large",
  );
}

/** Every upstream call's timeouts, on shared timers (one per distinct duration). */
const deadlines = new DeadlineQueue();

/** A request to an upstream, already in the vendor's format. */
export interface UpstreamRequest {
  url: string;
  method?: string;
  headers: Record<string, string>;
  body?: string | Uint8Array<ArrayBuffer>;
}

/** An upstream response whose body is guarded by the idle and total timeouts. */
export interface UpstreamResponse {
  status: number;
  headers: Headers;
  /**
   * The body, read chunk by chunk by the stream stages; each read applies the idle timeout, cancelling it aborts
   * the upstream request. A reader rather than a `ReadableStream`: one stream layer fewer per open stream.
   */
  body: ChunkSource<Uint8Array>;
  /**
   * Reads the whole body as text (non-stream answers and error bodies), under the total timeout, and at most
   * `server.upstream_limits.max_body_size` bytes of it after decompression: past that the upstream request is
   * aborted and a 502 `upstream_response_too_large` thrown.
   */
  text(): Promise<string>;
}

/**
 * Sends `request` upstream for `call`. Resolves once response headers arrive (or throws 502/504/499);
 * whatever the status, the caller decides what a non-2xx means.
 */
export async function sendUpstream(request: UpstreamRequest, call: UpstreamCall): Promise<UpstreamResponse> {
  const { firstByteMs, idleMs, totalMs } = call.target.timeouts;
  const provider = call.target.provider;
  const controller = new AbortController();
  let failure: GatewayError | undefined;
  const abort = (reason: GatewayError) => {
    failure ??= reason;
    controller.abort(reason);
  };
  const onClientGone = () => abort(abortReason(call.signal));
  if (call.signal.aborted) throw abortReason(call.signal);
  call.signal.addEventListener("abort", onClientGone, { once: true });

  const totalTimer = deadlines.arm(
    totalMs,
    () => abort(gatewayTimeout(`Provider "${provider}" did not finish within ${totalMs} ms.`)),
  );
  const cleanup = () => {
    totalTimer.cancel();
    call.signal.removeEventListener("abort", onClientGone);
  };

  const firstByteTimer = deadlines.arm(
    firstByteMs,
    () => abort(gatewayTimeout(`Provider "${provider}" sent no response within ${firstByteMs} ms.`)),
  );
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: request.method ?? "POST",
      headers: call.trace ? { ...request.headers, ...call.trace.headers } : request.headers,
      body: request.body,
      signal: controller.signal,
      redirect: "manual",
    });
  } catch {
    cleanup();
    throw failure ?? badGateway(`Provider "${provider}" could not be reached.`, "upstream_unreachable");
  } finally {
    firstByteTimer.cancel();
  }

  call.trace?.answered(request.url, response.status);
  let wrapped: ChunkSource<Uint8Array> | undefined;
  return {
    status: response.status,
    headers: response.headers,
    get body() {
      wrapped ??= guardedBody(response, {
        abort,
        cleanup,
        controller,
        failure: () => failure,
        idleMs,
        provider,
        maxStreamBytes: upstreamLimits(call).maxStreamBytes ?? Infinity,
      });
      return wrapped;
    },
    async text() {
      // A whole (non-stream) answer: read under the total timeout, counting bytes as they arrive. `fetch`
      // decompresses gzip/br/deflate, so these are decompressed bytes: a small bomb stops at the limit too.
      const limit = upstreamLimits(call).maxBodyBytes;
      if (isFramedWithin(response.headers, limit)) {
        // Declared within the limit and not compressed: HTTP framing ends the body at that length, so it can be
        // read in one native call (the common case; reading chunk by chunk costs a buffer per read on Deno).
        try {
          return await response.text();
        } catch {
          throw failure ?? badGateway(`Provider "${provider}" closed the connection mid-response.`);
        } finally {
          cleanup();
        }
      }
      if (response.body === null) {
        cleanup();
        return "";
      }
      // Into blocks of its own (lib/streams/read_within.ts): kept as the runtime's chunks, 32 MiB of a gzip
      // answer held 512 MiB on Deno.
      let bytes: Uint8Array<ArrayBuffer> | undefined;
      try {
        bytes = await readWithin(response.body, limit);
      } catch {
        throw failure ?? badGateway(`Provider "${provider}" closed the connection mid-response.`);
      } finally {
        cleanup();
      }
      if (bytes === undefined) {
        // The body is cancelled already; aborting ends the upstream request too, wherever it stands.
        abort(upstreamTooLarge(provider, "an answer", limit));
        throw failure;
      }
      return utf8.decode(bytes);
    },
  };
}

const utf8 = new TextDecoder();

/** True when the body's length is declared, within `limit`, and what arrives is what is read (no encoding). */
function isFramedWithin(headers: Headers, limit: number): boolean {
  const length = headers.get("content-length");
  if (length === null || !/^\d{1,15}$/.test(length) || Number(length) > limit) return false;
  const encoding = headers.get("content-encoding");
  return encoding === null || encoding === "" || encoding.toLowerCase() === "identity";
}

/**
 * Why the call is being given up when its signal aborts: the signal's own reason when that is a
 * `GatewayError` (the server shutting down says so), else the client went away.
 */
function abortReason(signal: AbortSignal): GatewayError {
  return signal.reason instanceof GatewayError ? signal.reason : new ClientGoneError();
}

interface GuardContext {
  abort(reason: GatewayError): void;
  cleanup(): void;
  controller: AbortController;
  failure(): GatewayError | undefined;
  idleMs: number;
  provider: string;
  /** `server.upstream_limits.max_stream_size`, Infinity when it is not set. */
  maxStreamBytes: number;
}

/**
 * Bytes a streamed upstream body's pending read holds. Deno's fetch body is a byte stream that, read the default
 * way, allocates 64 KiB for every read, however small the chunk: a stream waiting for its next event would hold
 * 64 KiB, and a 200-byte chunk would cost 64 KiB of allocation (and the garbage collections it brings). Read
 * into our own buffer, a stream waiting holds this much: one token's event is a few hundred bytes. 1 KiB
 * instead of 4 KiB took about 5 KB off each open stream at 5,000 streams on Deno (bench/README.md).
 */
export const STREAM_WAIT_BYTES = 1024;

/**
 * The most one read takes. A read that fills its buffer means more is waiting (a long event, or events that
 * queued up): the next read gets a buffer four times larger, up to this, so a 100 KB event is not a hundred
 * reads; reads that get less go back down (`nextReadBytes`).
 */
export const STREAM_READ_MAX_BYTES = 16_384;

/**
 * The buffer for the next read, from what the last one got: four times larger when it filled its buffer (up to
 * {@linkcode STREAM_READ_MAX_BYTES}), else the smallest of 1, 4 and 16 KiB that would have held it. A stream
 * whose reads settle at one size keeps one buffer; a stream waiting for tokens keeps 1 KiB.
 */
function nextReadBytes(got: number, size: number): number {
  if (got === size) return Math.min(size * 4, STREAM_READ_MAX_BYTES);
  if (got <= STREAM_WAIT_BYTES) return STREAM_WAIT_BYTES;
  return got <= STREAM_WAIT_BYTES * 4 ? STREAM_WAIT_BYTES * 4 : STREAM_READ_MAX_BYTES;
}

/** Reads a body chunk by chunk, into buffers of our size where the runtime allows it. */
function chunkReader(body: ReadableStream<Uint8Array>): ChunkSource<Uint8Array> {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream here (Bun's fetch body, for one): its own reads are already sized to the data.
    return body.getReader();
  }
  // One buffer per stream, handed back by each read (a BYOB read transfers it) and read into again while its
  // size is right; what was read is passed on as a copy of its own size. A fresh buffer per read cost more on
  // Deno (about 1 µs each, for a chunk of a few hundred bytes) than copying the chunk.
  let buffer = new ArrayBuffer(STREAM_WAIT_BYTES);
  return {
    async read() {
      const result = await byob.read(new Uint8Array(buffer));
      if (result.done) return { done: true, value: undefined };
      const view = result.value as Uint8Array<ArrayBuffer>;
      const size = view.buffer.byteLength;
      const next = nextReadBytes(view.byteLength, size);
      buffer = next === size ? view.buffer : new ArrayBuffer(next);
      return { done: false, value: view.slice() };
    },
    cancel: (reason) => byob.cancel(reason),
  };
}

/** Why a streamed upstream call is aborted when its reader is cancelled without a reason (the stream is over). */
const STREAM_CANCELLED = new DOMException("The stream was cancelled.", "AbortError");

/**
 * The upstream body for streaming: every read is guarded by the idle timeout (the clock runs only while we wait
 * on the upstream, not while the client is slow to read), and cancelling it aborts the upstream request. Its one
 * reader is the stage runner, which reads only once the previous read settled.
 */
function guardedBody(response: Response, g: GuardContext): ChunkSource<Uint8Array> {
  const reader = response.body === null ? undefined : chunkReader(response.body);
  const onIdle = () => g.abort(gatewayTimeout(`Provider "${g.provider}" sent nothing for ${g.idleMs} ms.`));
  /**
   * The body was read to its end or failed. A cancel after that does nothing, as on a closed or errored stream
   * (what this reader was before it was one): the request is over, there is nothing to abort.
   */
  let settled = false;
  const settle = () => {
    settled = true;
    g.cleanup();
  };
  /** Bytes read so far: a stream past `max_stream_size` ends, as an answer past `max_body_size` does. */
  let received = 0;
  return {
    async read() {
      if (reader === undefined) {
        settle();
        return { done: true, value: undefined };
      }
      const idleTimer: Deadline = deadlines.arm(g.idleMs, onIdle);
      try {
        const result = await reader.read();
        if (result.done) settle();
        else if ((received += result.value.byteLength) > g.maxStreamBytes) {
          // Aborting makes this the failure the catch below throws, and ends the upstream request.
          g.abort(
            upstreamTooLarge(
              g.provider,
              "a stream",
              g.maxStreamBytes,
              "server.upstream_limits.max_stream_size",
            ),
          );
          throw g.failure();
        }
        return result;
      } catch {
        settle();
        throw g.failure() ?? badGateway(`Provider "${g.provider}" closed the connection mid-response.`);
      } finally {
        idleTimer.cancel();
      }
    },
    async cancel(reason) {
      if (settled) return;
      settle();
      // A stream read to its end is cancelled without a reason, and `abort()` without one builds a DOMException,
      // stack trace and all (about 10 µs, on every stream): one made once serves every such end.
      g.controller.abort(reason ?? STREAM_CANCELLED);
      await reader?.cancel(reason).catch(() => {});
    },
  };
}
