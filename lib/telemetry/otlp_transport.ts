/**
 * How the OTLP exporters send: the SDK serializes a batch (protobuf or JSON) and this transport POSTs it with
 * `fetch`, the whole exchange (connecting, sending, the status, the response body) under one hard deadline that
 * aborts the request, and with the response body read up to a small cap.
 *
 * The SDK's own node-http transport bounds an export with `req.setTimeout`, an idle-socket timeout: a collector
 * that answers 200 and then trickles its body a byte at a time never trips it, so each export stayed open for
 * good, the exporter's concurrent-export limit filled, and no span or metric was exported again until restart.
 * An aborted fetch closes its connection on Deno and on Bun alike.
 *
 * @module
 */

/** What a transport tells the SDK's export delegate (the shape of its `ExportResponse`). */
export type ExportResponse =
  | { status: "success"; data?: Uint8Array }
  | { status: "failure"; error: Error }
  | { status: "retryable"; error?: Error; retryInMillis?: number };

/** The SDK's `IExporterTransport`, which the gateway puts in place of the node-http one. */
export interface OtlpTransport {
  send(data: Uint8Array, timeoutMillis: number): Promise<ExportResponse>;
  /** Aborts the export under way and any later one: shutdown's grace is over. */
  shutdown(): void;
}

/**
 * The most of a collector's answer that is read. A collector answers an export with an (almost always empty)
 * `Export*ServiceResponse`; past this its answer is no longer read, and never kept whole in memory.
 */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** Options of {@linkcode fetchTransport}. */
export interface FetchTransportOptions {
  url: string;
  headers: Readonly<Record<string, string>>;
  /** `application/x-protobuf` or `application/json`, as the SDK's serializer wrote the body. */
  contentType: string;
  maxResponseBytes?: number;
  /** The signal that ends an export after `ms` (tests pass one they control). */
  deadline?: (ms: number) => AbortSignal;
}

/** A transport that POSTs each export with `fetch`, ended by its deadline whatever the collector does. */
export function fetchTransport(options: FetchTransportOptions): OtlpTransport {
  /** Aborts of the exports under way (at most one: the exporter's concurrency limit is 1). */
  const underWay = new Set<() => void>();
  let closed = false;
  const deadline = options.deadline ?? ((ms: number) => AbortSignal.timeout(ms));
  const cap = options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  const headers = { ...options.headers, "content-type": options.contentType };
  return {
    async send(data, timeoutMillis) {
      if (closed) return { status: "failure", error: new Error("the exporter was shut down") };
      // One controller per export, ended by its deadline or by shutdown, and let go of when it is over
      // (AbortSignal.any over a process-long shutdown signal would hang a dependant on it per export in some
      // runtimes, an export every interval for the process's life).
      const controller = new AbortController();
      const end = () => controller.abort();
      const due = deadline(timeoutMillis);
      due.addEventListener("abort", end, { once: true });
      underWay.add(end);
      try {
        return await exchange(options.url, headers, data, controller.signal, cap);
      } finally {
        underWay.delete(end);
        due.removeEventListener("abort", end);
      }
    },
    shutdown() {
      closed = true;
      for (const end of underWay) end();
    },
  };
}

/** One export's POST and the collector's answer, all of it under `signal`. */
async function exchange(
  url: string,
  headers: Record<string, string>,
  data: Uint8Array,
  signal: AbortSignal,
  cap: number,
): Promise<ExportResponse> {
  // The serializer's bytes live in an ordinary ArrayBuffer (never a shared one, which fetch would refuse).
  const body = data as Uint8Array<ArrayBuffer>;
  let response: Response;
  try {
    // A redirect is not followed: it would carry the batch and the (secret) export headers to wherever the
    // collector, or anything on its path, points (fetch drops only `authorization` across origins). A 3xx is a
    // failed export, as a redirect is for the providers' and the alerts' transports.
    response = await fetch(url, { method: "POST", headers, body, signal, redirect: "manual" });
  } catch (err) {
    return { status: "failure", error: asError(err) };
  }
  // The body is read (so a kept-alive connection can be reused) but never past the cap or the deadline.
  const answer = await readCapped(response, cap);
  if (response.ok) return answer === undefined ? { status: "success" } : { status: "success", data: answer };
  // Not retried here: the next batch is the retry, and an export never outlives its deadline.
  return { status: "failure", error: new Error(`the collector answered ${response.status}`) };
}

/** The response body up to `cap` bytes; undefined when it was longer, or cut by the deadline. */
async function readCapped(response: Response, cap: number): Promise<Uint8Array | undefined> {
  const reader = response.body?.getReader();
  if (reader === undefined) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > cap) {
        await reader.cancel().catch(() => {});
        return undefined;
      }
      chunks.push(value);
    }
  } catch {
    // Aborted by the deadline while the body trickled in: the status is the collector's answer.
    return undefined;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * Has an OTLP exporter of the SDK send through `transport`. The SDK offers no option for it, so its export
 * delegate's transport is replaced; the versions are pinned, and a release that moved it fails here, at start,
 * rather than exporting through the idle-timeout transport again.
 */
export function sendingThrough<E extends object>(exporter: E, transport: OtlpTransport): E {
  const delegate = (exporter as { _delegate?: { _transport?: unknown } })._delegate;
  const current = delegate?._transport as { send?: unknown } | undefined;
  if (delegate === undefined || typeof current?.send !== "function") {
    throw new Error("the OpenTelemetry OTLP exporter has no transport to replace (an SDK update changed it)");
  }
  delegate._transport = transport;
  return exporter;
}
