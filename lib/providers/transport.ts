/**
 * The thin HTTP layer every provider shares: one `fetch` with the three timeouts (first byte, idle between
 * chunks, total), client-disconnect propagation, and the mapping of transport failures to 502/504.
 *
 * Provider modules build the vendor request and translate the answer; this module only moves bytes and
 * decides what a failure means.
 *
 * @module
 */
import { badGateway, GatewayError, gatewayTimeout } from "../errors.ts";
import type { UpstreamCall } from "./types.ts";

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
  /** The body; reading it applies the idle timeout, cancelling it aborts the upstream request. */
  body: ReadableStream<Uint8Array>;
  /** Reads the whole body as text (non-stream answers), under the total timeout. */
  text(): Promise<string>;
}

/** Thrown, and used as abort reason, when the client went away; the server logs it and sends nothing. */
export class ClientGoneError extends GatewayError {
  constructor() {
    super(499, "The client closed the request.", {
      type: "invalid_request_error",
      code: "client_closed_request",
    });
  }
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
  const onClientGone = () => abort(new ClientGoneError());
  if (call.signal.aborted) throw new ClientGoneError();
  call.signal.addEventListener("abort", onClientGone, { once: true });

  const totalTimer = setTimeout(
    () => abort(gatewayTimeout(`Provider "${provider}" did not finish within ${totalMs} ms.`)),
    totalMs,
  );
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  const cleanup = () => {
    clearTimeout(totalTimer);
    clearTimeout(idleTimer);
    call.signal.removeEventListener("abort", onClientGone);
  };

  idleTimer = setTimeout(
    () => abort(gatewayTimeout(`Provider "${provider}" sent no response within ${firstByteMs} ms.`)),
    firstByteMs,
  );
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: request.method ?? "POST",
      headers: request.headers,
      body: request.body,
      signal: controller.signal,
      redirect: "manual",
    });
  } catch {
    cleanup();
    throw failure ?? badGateway(`Provider "${provider}" could not be reached.`, "upstream_unreachable");
  } finally {
    clearTimeout(idleTimer);
  }

  const upstreamBody = response.body;
  const reader = upstreamBody?.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(out) {
      if (reader === undefined) {
        cleanup();
        out.close();
        return;
      }
      // The idle clock runs only while we wait on the upstream, not while the client is slow to read.
      idleTimer = setTimeout(
        () => abort(gatewayTimeout(`Provider "${provider}" sent nothing for ${idleMs} ms.`)),
        idleMs,
      );
      try {
        const { done, value } = await reader.read();
        if (done) {
          cleanup();
          out.close();
        } else {
          out.enqueue(value);
        }
      } catch {
        cleanup();
        out.error(failure ?? badGateway(`Provider "${provider}" closed the connection mid-response.`));
      } finally {
        clearTimeout(idleTimer);
      }
    },
    async cancel(reason) {
      cleanup();
      controller.abort(reason);
      await reader?.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });

  return {
    status: response.status,
    headers: response.headers,
    body,
    async text() {
      const chunks: Uint8Array[] = [];
      const r = body.getReader();
      while (true) {
        const { done, value } = await r.read();
        if (done) break;
        chunks.push(value);
      }
      const decoder = new TextDecoder();
      let text = "";
      for (const chunk of chunks) text += decoder.decode(chunk, { stream: true });
      return text + decoder.decode();
    },
  };
}
