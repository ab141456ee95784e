/**
 * Reads a request body as a JSON object while enforcing the size limit as the bytes arrive, so a client
 * cannot make the gateway buffer more than the limit, undoes its `Content-Encoding` within the same limit
 * (body_encoding.ts), and every way a body can be wrong gets its own clear 4xx in OpenAI's error shape.
 *
 * @module
 */
import { GatewayError, invalidRequest } from "../errors.ts";
import { DeadlineQueue } from "../timers/deadlines.ts";
import type { JsonObject } from "../openai/types.ts";
import { jsonDepthExceeds } from "./json_depth.ts";
import type { ClientRequest } from "../runtime/types.ts";
import { bodyTooLarge, type ContentCoding, contentCodings, decodeBody } from "./body_encoding.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * True for `application/json` and `application/*+json`, with or without parameters, and for
 * `application/x-www-form-urlencoded`: `curl -d '{…}'` sends that by default, and refusing the most common way
 * people first try an API would help nobody (the body must still be JSON).
 */
function isJsonMediaType(contentType: string): boolean {
  const mediaType = contentType.split(";", 1)[0].trim().toLowerCase();
  return mediaType === "application/json" || mediaType === "application/x-www-form-urlencoded" ||
    /^application\/[a-z0-9.+-]+\+json$/.test(mediaType);
}

/**
 * OpenAI answers every body it cannot parse with this 400 (code and param null); the gateway does the same
 * for malformed, truncated, empty and non-UTF-8 bodies, adding only what exactly was wrong.
 */
function unparseable(detail: string): GatewayError {
  return invalidRequest(
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your " +
      "HTTP library correctly. The API expects a JSON payload, but what was sent was not valid JSON.)" +
      (detail ? ` ${detail}` : ""),
  );
}

/**
 * The 400 of a JSON text nested deeper than `max` levels (`server.max_json_depth`): a body's, or a WebSocket
 * message's, which is checked the same way before it is parsed.
 */
export function jsonTooDeep(max: number): GatewayError {
  return invalidRequest(
    `The JSON body is nested too deeply: at most ${max} levels of nested arrays and objects are accepted.`,
    null,
    "json_too_deep",
  );
}

/** A body not in full by the deadline: the client stalled, so its connection is not reused either. */
function bodyTimeout(ms: number): GatewayError {
  const seconds = ms / 1000;
  return new GatewayError(
    408,
    `The request body did not arrive in time: it must arrive within ${seconds} s.`,
    {
      type: "invalid_request_error",
      code: "request_timeout",
      headers: { connection: "close" },
    },
  );
}

function unreadable(cause: unknown): GatewayError {
  // The client went away or broke its framing mid-body: a client error, not a gateway bug.
  return new GatewayError(400, "The request body could not be read completely.", {
    type: "invalid_request_error",
    cause,
  });
}

/**
 * Body deadlines share one runtime timer per duration: one `setTimeout` per request would cost more than the
 * rest of reading a small body.
 */
const deadlines = new DeadlineQueue();

/**
 * Calls `stop` with the reason once `signal` aborts (the client went away, or the gateway is ending the request
 * at shutdown): a body still arriving then is given up at once, with that reason rather than as unreadable.
 */
function onAbort(signal: AbortSignal | undefined, stop: (reason: unknown) => void): () => void {
  if (signal === undefined) return () => {};
  if (signal.aborted) {
    stop(signal.reason);
    return () => {};
  }
  const listener = () => stop(signal.reason);
  signal.addEventListener("abort", listener, { once: true });
  return () => signal.removeEventListener("abort", listener);
}

/**
 * Reads the body chunk by chunk (so the limit holds however the body is framed, and a stalled body can be
 * abandoned): at most `limit` bytes, and only until `timeoutMs` has passed, after which the reader is cancelled
 * and a 408 thrown; or until `signal` aborts, when its reason is thrown.
 *
 * Each read is copied into one buffer of our own, the first read's size and doubling (never past the limit) as
 * the body grows, so what is held is about the body's bytes however it was cut. Keeping the reads themselves cost ~700
 * bytes per read: a chunked body sent a byte per HTTP chunk made a million reads of its megabyte, and each one
 * a view with its own object and buffer (a 300 KB body in one-byte chunks took 200 MB).
 */
async function readLimited(
  request: ClientRequest,
  limit: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  const expected = declared === null ? -1 : Number(declared);
  if (expected > limit) throw bodyTooLarge(limit);
  if (expected >= 0) return await readDeclared(request, expected, timeoutMs, signal);
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  /** Why the read was given up: the deadline's 408, or the abort's reason. */
  let stopped: unknown;
  const stop = (reason: unknown) => {
    stopped ??= reason;
    // Settles the pending read (done, or an error): the loop below then reports why.
    reader.cancel().catch(() => {});
  };
  const deadline = deadlines.arm(timeoutMs, () => stop(bodyTimeout(timeoutMs)));
  const unlisten = onAbort(signal, stop);
  let held = new Uint8Array(0);
  let size = 0;
  try {
    while (true) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        throw stopped ?? unreadable(err);
      }
      if (stopped !== undefined) throw stopped;
      const { done, value } = chunk;
      if (done) break;
      const needed = size + value.byteLength;
      if (needed > limit) {
        await reader.cancel().catch(() => {});
        throw bodyTooLarge(limit);
      }
      if (needed > held.byteLength) {
        // The first read exactly (a body in one read, the usual case, costs one small copy, not a 16 KiB buffer
        // per request: that was +7–20% of the gateway's cost per request in bench/hot_path_ab.ts), then doubling.
        const grown = new Uint8Array(Math.min(limit, Math.max(needed, held.byteLength * 2)));
        grown.set(held.subarray(0, size));
        held = grown;
      }
      held.set(value, size);
      size = needed;
    }
  } finally {
    deadline.cancel();
    unlisten();
  }
  return held.subarray(0, size);
}

/**
 * A body of declared length (checked within the limit): HTTP framing ends it there, so it is read whole in
 * one call of the runtime rather than through a stream reader (on Bun a stream and a read per chunk cost more
 * than the rest of reading a small body), still only until `timeoutMs` has passed or `signal` aborts.
 */
async function readDeclared(
  request: ClientRequest,
  expected: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Uint8Array> {
  if (expected === 0) return new Uint8Array(0);
  let stopped: unknown;
  let reject = (_reason: unknown) => {};
  const given = new Promise<never>((_, r) => reject = r);
  given.catch(() => {});
  const stop = (reason: unknown) => {
    stopped ??= reason;
    reject(stopped);
  };
  const deadline = deadlines.arm(timeoutMs, () => stop(bodyTimeout(timeoutMs)));
  const unlisten = onAbort(signal, stop);
  try {
    return await Promise.race([request.bytes(), given]);
  } catch (err) {
    throw stopped ?? unreadable(err);
  } finally {
    deadline.cancel();
    unlisten();
  }
}

function jsonKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/** The server settings {@linkcode readJsonBody} enforces (a subset of `server` in the config). */
export interface BodyLimits {
  /** Bytes at most. */
  readonly max_body_size: number;
  /** Levels of nested arrays and objects at most. */
  readonly max_json_depth: number;
  /** Milliseconds the whole body may take to arrive. */
  readonly connections: { readonly body_timeout: number };
}

/**
 * Returns the body as a JSON object or throws a {@linkcode GatewayError}: 415 for a non-JSON content type
 * (a missing one, or curl's default form type, is read as JSON) or a content coding the gateway does not
 * decode, 413 over `max_body_size` bytes (as it arrived, or once decoded), 408 when it has not arrived within
 * `body_timeout`, 400 for a body that could not be read or decoded, invalid UTF-8, JSON nested deeper than
 * `max_json_depth` (checked on the raw text, before anything recurses into it), malformed JSON, or JSON that
 * is not an object. A body without `Content-Encoding` costs one header lookup more than it did before.
 */
export async function readJsonBody(
  request: ClientRequest,
  limits: BodyLimits,
  /** The request's in-flight signal: a body still arriving when it aborts is given up with its reason. */
  signal?: AbortSignal,
): Promise<JsonObject> {
  const contentType = request.headers.get("content-type");
  if (contentType !== null && !isJsonMediaType(contentType)) {
    throw new GatewayError(415, "Unsupported Content-Type: send the request body as application/json.", {
      type: "invalid_request_error",
      code: "unsupported_media_type",
    });
  }
  const encoding = request.headers.get("content-encoding");
  // Checked before the body is read: a coding the gateway cannot undo is refused without reading it.
  const codings: ContentCoding[] | null = encoding === null ? null : contentCodings(encoding);
  const sent = await readLimited(request, limits.max_body_size, limits.connections.body_timeout, signal);
  const bytes = codings === null || codings.length === 0
    ? sent
    : decodeBody(sent, codings, limits.max_body_size);
  if (bytes.byteLength === 0) throw unparseable("(The request body is empty.)");
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw unparseable("(The request body is not valid UTF-8.)");
  }
  if (jsonDepthExceeds(text, limits.max_json_depth)) throw jsonTooDeep(limits.max_json_depth);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw unparseable("");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw invalidRequest(
      `Invalid type for the request body: expected a JSON object, but got ${jsonKind(value)} instead.`,
    );
  }
  return value as JsonObject;
}
