/**
 * A local OTLP/HTTP sink for benches, run as a Worker so its own work (accepting, reading bodies) stays off
 * the gateway's thread: `Deno.serve` on 127.0.0.1 at a free port, every request's body read and discarded,
 * answered 200 with an empty protobuf body (an empty `Export*ServiceResponse`: all is accepted).
 *
 * Protocol with the parent: the worker posts `{ port }` once listening; to any message it answers with its
 * {@linkcode SinkCounts}. Spans are counted by walking the protobuf envelope of `/v1/traces`
 * (`ExportTraceServiceRequest.resource_spans` → `scope_spans` → `spans`), the spans' own bytes skipped.
 *
 * @module
 */

/** What the sink has received so far. */
export interface SinkCounts {
  /** Requests to `/v1/traces`. */
  traceRequests: number;
  /** Spans in them. */
  spans: number;
  /** Requests to `/v1/metrics`. */
  metricRequests: number;
  /** Requests to any other path, or whose body was not protobuf. */
  other: number;
  /** Body bytes received, all paths. */
  bytes: number;
}

/** One varint at `at`: its value and the offset after it. */
function varint(buf: Uint8Array, at: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (at >= buf.length) throw new Error("truncated varint");
    const byte = buf[at++];
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, at];
    scale *= 128;
  }
}

/** Calls `each(field, start, end)` for every length-delimited field in `buf[from, to)`; skips the others. */
function fields(
  buf: Uint8Array,
  from: number,
  to: number,
  each: (field: number, start: number, end: number) => void,
) {
  let at = from;
  while (at < to) {
    const [key, next] = varint(buf, at);
    at = next;
    const wire = key & 7;
    if (wire === 0) at = varint(buf, at)[1];
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const [length, start] = varint(buf, at);
      at = start + length;
      each(key >>> 3, start, at);
    } else throw new Error(`wire type ${wire}`);
  }
}

/** Spans in an `ExportTraceServiceRequest`. */
export function countSpans(buf: Uint8Array): number {
  let spans = 0;
  fields(buf, 0, buf.length, (f1, s1, e1) => {
    if (f1 !== 1) return; // resource_spans
    fields(buf, s1, e1, (f2, s2, e2) => {
      if (f2 !== 2) return; // scope_spans
      fields(buf, s2, e2, (f3) => {
        if (f3 === 2) spans++; // spans
      });
    });
  });
  return spans;
}

const counts: SinkCounts = { traceRequests: 0, spans: 0, metricRequests: 0, other: 0, bytes: 0 };

/** Runs the sink in this worker. */
function serveSink(post: (message: unknown) => void): void {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const body = new Uint8Array(await request.arrayBuffer());
    counts.bytes += body.length;
    const path = new URL(request.url).pathname;
    const protobuf = request.headers.get("content-type") === "application/x-protobuf";
    if (protobuf && path === "/v1/traces") {
      counts.traceRequests++;
      counts.spans += countSpans(body);
    } else if (protobuf && path === "/v1/metrics") counts.metricRequests++;
    else counts.other++;
    return new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } });
  });
  post({ port: server.addr.port });
}

// Only in a Worker: `WorkerGlobalScope` (and `postMessage` on the global) exist there alone.
const scope = globalThis as unknown as {
  WorkerGlobalScope?: unknown;
  postMessage(message: unknown): void;
  onmessage: ((event: MessageEvent) => void) | null;
};
if (scope.WorkerGlobalScope !== undefined) {
  const post = (message: unknown) => scope.postMessage(message);
  scope.onmessage = () => post({ ...counts });
  serveSink(post);
}

/** Starts the sink in a Worker; returns its port, a way to read its counts, and to stop it. */
export async function startSink(): Promise<{ port: number; counts(): Promise<SinkCounts>; stop(): void }> {
  const worker = new Worker(import.meta.url, { type: "module" });
  const replies: ((message: unknown) => void)[] = [];
  worker.onmessage = (event: MessageEvent) => replies.shift()?.(event.data);
  const ask = () => new Promise<unknown>((resolve) => replies.push(resolve));
  const first = ask();
  const { port } = await first as { port: number };
  return {
    port,
    counts() {
      const reply = ask();
      worker.postMessage("counts");
      return reply as Promise<SinkCounts>;
    },
    stop: () => worker.terminate(),
  };
}
