/**
 * The OTLP transport: an export is ended by its deadline whatever the collector does (a body trickled a byte
 * at a time included), a collector's answer is read only up to the cap, and the SDK's exporter, sending
 * through it, has one export out at a time. The deadline is the test's to fire, so no clock is waited on.
 */
import assert from "node:assert/strict";
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { type ExportResponse, fetchTransport, type OtlpTransport, sendingThrough } from "./otlp_transport.ts";

/** A collector answering 200 and then a byte at a time, never ending; `cancelled` once the client closed it. */
function tricklingCollector() {
  const cancelled = Promise.withResolvers<void>();
  const answering = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.arrayBuffer();
    let timer: ReturnType<typeof setInterval> | undefined;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array([32]));
        answering.resolve();
        // A byte now and then, as a slow collector sends them (a write is also how the server sees it closed).
        timer = setInterval(() => controller.enqueue(new Uint8Array([32])), 20);
      },
      cancel() {
        clearInterval(timer);
        cancelled.resolve();
      },
    });
    return new Response(body, { status: 200 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1/traces`,
    server,
    answering: answering.promise,
    cancelled: cancelled.promise,
  };
}

/** A transport whose deadlines the test fires. */
function controlled(url: string, maxResponseBytes?: number) {
  const deadlines: AbortController[] = [];
  const transport = fetchTransport({
    url,
    headers: {},
    contentType: "application/x-protobuf",
    maxResponseBytes,
    deadline: () => {
      const controller = new AbortController();
      deadlines.push(controller);
      return controller.signal;
    },
  });
  return { transport, deadlines };
}

Deno.test("otlp transport: an answer trickled a byte at a time is ended at the deadline, its connection closed", async () => {
  const collector = tricklingCollector();
  try {
    const { transport, deadlines } = controlled(collector.url);
    const sent = transport.send(new Uint8Array([1, 2, 3]), 60_000);
    await collector.answering;
    // The body trickles and would never end: only the deadline ends the export.
    deadlines[0].abort();
    const result = await sent;
    assert.ok(result.status === "success" || result.status === "failure", result.status);
    await collector.cancelled;
  } finally {
    await collector.server.shutdown();
  }
});

Deno.test("otlp transport: shutdown ends the export under way (the grace is over), its connection closed", async () => {
  const collector = tricklingCollector();
  try {
    const { transport } = controlled(collector.url);
    const sent = transport.send(new Uint8Array([1, 2, 3]), 60_000);
    await collector.answering;
    transport.shutdown();
    await sent;
    await collector.cancelled;
  } finally {
    await collector.server.shutdown();
  }
});

Deno.test("otlp transport: a collector's answer is read up to the cap, no further", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.arrayBuffer();
    return new Response(new Uint8Array(10_000), { status: 200 });
  });
  try {
    const url = `http://127.0.0.1:${server.addr.port}/v1/traces`;
    const small = await controlled(url, 100_000).transport.send(new Uint8Array([1]), 60_000);
    assert.deepEqual(small, { status: "success", data: new Uint8Array(10_000) });
    const capped = await controlled(url, 1_000).transport.send(new Uint8Array([1]), 60_000);
    assert.deepEqual(capped, { status: "success" }, "an answer past the cap is not kept");
  } finally {
    await server.shutdown();
  }
});

Deno.test("otlp transport: a refusal and an unreachable collector are failures; after shutdown nothing is sent", async () => {
  let received = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    received++;
    await request.arrayBuffer();
    return new Response("busy", { status: 503 });
  });
  try {
    const { transport } = controlled(`http://127.0.0.1:${server.addr.port}/v1/traces`);
    assert.equal((await transport.send(new Uint8Array([1]), 60_000)).status, "failure");
    assert.equal(received, 1);
    transport.shutdown();
    assert.equal((await transport.send(new Uint8Array([1]), 60_000)).status, "failure");
    assert.equal(received, 1, "a shut-down transport sends nothing");
    const unreachable = controlled("http://127.0.0.1:1/v1/traces").transport;
    assert.equal((await unreachable.send(new Uint8Array([1]), 60_000)).status, "failure");
  } finally {
    await server.shutdown();
  }
});

Deno.test("otlp transport: a redirect is a failed export; the batch and the secret headers never reach its target", async () => {
  const elsewhere: Headers[] = [];
  const other = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    elsewhere.push(request.headers);
    await request.arrayBuffer();
    return new Response(null, { status: 200 });
  });
  // The configured collector (hostile, or anything on its path) points every export at another origin.
  const collector = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.arrayBuffer();
    const location = `http://localhost:${other.addr.port}${new URL(request.url).pathname}`;
    return new Response(null, { status: 307, headers: { location } });
  });
  try {
    const transport = fetchTransport({
      url: `http://127.0.0.1:${collector.addr.port}/v1/traces`,
      headers: { "x-api-key": "otlp-backend-secret-5a4b3c2d1e" },
      contentType: "application/x-protobuf",
      deadline: () => new AbortController().signal,
    });
    const result = await transport.send(new Uint8Array([1, 2, 3]), 60_000);
    assert.equal(result.status, "failure");
    assert.match(String(result.error), /307/);
    assert.equal(elsewhere.length, 0, "nothing is sent where the redirect points");
  } finally {
    await collector.shutdown();
    await other.shutdown();
  }
});

Deno.test("otlp transport: the SDK's exporter sends its serialized batch through it, one export at a time", async () => {
  const pending: PromiseWithResolvers<ExportResponse>[] = [];
  const sent: Uint8Array[] = [];
  const transport: OtlpTransport = {
    send(data) {
      sent.push(data);
      const answer = Promise.withResolvers<ExportResponse>();
      pending.push(answer);
      return answer.promise;
    },
    shutdown() {},
  };
  const exporter = sendingThrough(
    new OTLPTraceExporter({ url: "http://127.0.0.1:1/v1/traces", concurrencyLimit: 1 }),
    transport,
  );
  const memory = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: memory })] });
  provider.getTracer("test").startSpan("marker-span").end();
  const spans = memory.getFinishedSpans();
  const results: ExportResult[] = [];
  exporter.export(spans, (r) => results.push(r));
  exporter.export(spans, (r) => results.push(r));
  assert.equal(sent.length, 1, "the second export is not sent while the first is out");
  assert.ok(new TextDecoder().decode(sent[0]).includes("marker-span"), "the SDK's protobuf body");
  assert.equal(results[0]?.code, ExportResultCode.FAILED, "refused at once, not queued");
  pending[0].resolve({ status: "success" });
  await exporter.forceFlush();
  assert.equal(results[1]?.code, ExportResultCode.SUCCESS);
  await provider.shutdown();
  assert.throws(() => sendingThrough({}, transport), /no transport to replace/);
});
