/**
 * Proves the OTLP receiver against the real OpenTelemetry JS SDK and exporters the gateway uses: what the
 * exporters send over protobuf and over JSON must decode to the spans and metrics that were recorded, with
 * ids, parent links, kinds, attributes, events, status and resource intact, and the same either way.
 */
import assert from "node:assert/strict";
import {
  type Attributes as ApiAttributes,
  context,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import { OTLPMetricExporter as OTLPMetricExporterJson } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as OTLPMetricExporterProto } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPTraceExporter as OTLPTraceExporterJson } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as OTLPTraceExporterProto } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  MeterProvider,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from "@opentelemetry/sdk-metrics";
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import {
  type DecodedSpan,
  type OtlpEncoding,
  type OtlpReceiver,
  startOtlpReceiver,
} from "./otlp_receiver.ts";
import { backstop } from "./backstop.ts";

const SERVICE = "otlp-receiver-test";
const SCOPE = "gateway-test-scope";
const SECRET = "sk-live-should-never-be-exported";

const CLIENT_ATTRIBUTES: ApiAttributes = {
  "gen_ai.request.model": "gpt-ok",
  "gen_ai.usage.input_tokens": 12,
  "gen_ai.request.temperature": 0.5,
  "gateway.cache.hit": false,
  "gateway.providers": ["openai", "azure"],
};

function traceExporter(encoding: OtlpEncoding, url: string, timeoutMillis = 5000): SpanExporter {
  const config = { url: `${url}/v1/traces`, timeoutMillis };
  return encoding === "protobuf" ? new OTLPTraceExporterProto(config) : new OTLPTraceExporterJson(config);
}

function metricExporter(encoding: OtlpEncoding, url: string): PushMetricExporter {
  const config = { url: `${url}/v1/metrics` };
  return encoding === "protobuf" ? new OTLPMetricExporterProto(config) : new OTLPMetricExporterJson(config);
}

/** Records a server span with a failing client child through `exporter`; returns the ids the SDK gave them. */
async function exportSpanTree(exporter: SpanExporter) {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": SERVICE }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 60_000 })],
  });
  try {
    const tracer = provider.getTracer(SCOPE, "1.2.3");
    const server = tracer.startSpan("POST /v1/chat/completions", {
      kind: SpanKind.SERVER,
      attributes: { "http.request.method": "POST", "http.response.status_code": 502 },
    });
    // No context manager is registered in a test, so the parent goes in by an explicit context.
    const client = tracer.startSpan(
      "chat gpt-ok",
      { kind: SpanKind.CLIENT, attributes: CLIENT_ATTRIBUTES },
      trace.setSpan(context.active(), server),
    );
    client.addEvent("upstream.retry", { attempt: 2, "error.type": "500" });
    client.setStatus({ code: SpanStatusCode.ERROR, message: "upstream answered 500" });
    client.end();
    server.end();
    await provider.forceFlush();
    return {
      traceId: server.spanContext().traceId,
      server: server.spanContext().spanId,
      client: client.spanContext().spanId,
    };
  } finally {
    await provider.shutdown();
  }
}

function assertSpanTree(spans: DecodedSpan[], ids: { traceId: string; server: string; client: string }) {
  assert.equal(spans.length, 2);
  const server = spans.find((s) => s.kind === "SERVER");
  const client = spans.find((s) => s.kind === "CLIENT");
  assert.ok(server && client, `kinds: ${spans.map((s) => s.kind)}`);
  assert.match(ids.traceId, /^[0-9a-f]{32}$/);
  assert.deepEqual([server.traceId, client.traceId], [ids.traceId, ids.traceId]);
  assert.deepEqual([server.spanId, client.spanId], [ids.server, ids.client]);
  assert.deepEqual(server.parentSpanId, "");
  assert.deepEqual(client.parentSpanId, server.spanId);

  assert.deepEqual(server.name, "POST /v1/chat/completions");
  assert.deepEqual(server.attributes, { "http.request.method": "POST", "http.response.status_code": 502 });
  assert.deepEqual(server.status, { code: "UNSET", message: "" });
  assert.deepEqual(server.events, []);

  assert.deepEqual(client.name, "chat gpt-ok");
  assert.deepEqual(client.attributes, CLIENT_ATTRIBUTES);
  assert.deepEqual(client.status, { code: "ERROR", message: "upstream answered 500" });
  assert.deepEqual(client.events.map((e) => [e.name, e.attributes]), [
    ["upstream.retry", { attempt: 2, "error.type": "500" }],
  ]);
  assert.ok(client.events[0].timeUnixNano >= client.startTimeUnixNano);

  for (const span of spans) {
    assert.ok(span.startTimeUnixNano > 1_600_000_000_000_000_000n, "a nanosecond Unix time");
    assert.ok(span.endTimeUnixNano >= span.startTimeUnixNano);
    assert.deepEqual(span.resource["service.name"], SERVICE);
    assert.deepEqual(span.scope, { name: SCOPE, version: "1.2.3" });
  }
}

for (const encoding of ["protobuf", "json"] as const) {
  Deno.test(`otlp receiver: a span tree exported over ${encoding} decodes intact`, async () => {
    const receiver = startOtlpReceiver();
    try {
      const ids = await exportSpanTree(traceExporter(encoding, receiver.url));
      const spans = await receiver.waitForSpans(2);
      assertSpanTree(spans, ids);
      assert.deepEqual(spans.map((s) => s.encoding), [encoding, encoding]);

      assert.deepEqual(receiver.requests.length, 1);
      const [request] = receiver.requests;
      assert.deepEqual(request.path, "/v1/traces");
      assert.deepEqual(request.error, undefined);
      assert.match(
        request.contentType,
        encoding === "json" ? /^application\/json/ : /^application\/x-protobuf/,
      );
      // The raw bytes are kept: a test can search them (here for an attribute value, and for a secret).
      const body = new TextDecoder().decode(request.bytes);
      assert.ok(body.includes("upstream answered 500"));
      assert.ok(!body.includes(SECRET));
      if (encoding === "json") assert.ok(body.includes(ids.traceId), "OTLP/JSON writes ids as hex");
    } finally {
      await receiver.stop();
    }
  });

  Deno.test(`otlp receiver: a counter and a histogram exported over ${encoding} decode intact`, async () => {
    const receiver = startOtlpReceiver();
    const provider = new MeterProvider({
      resource: resourceFromAttributes({ "service.name": SERVICE }),
      readers: [
        new PeriodicExportingMetricReader({
          exporter: metricExporter(encoding, receiver.url),
          exportIntervalMillis: 60_000,
        }),
      ],
    });
    try {
      const meter = provider.getMeter(SCOPE);
      const counter = meter.createCounter("gateway.requests", {
        description: "Requests served",
        unit: "{request}",
      });
      const histogram = meter.createHistogram("gateway.request.duration", {
        unit: "s",
        advice: { explicitBucketBoundaries: [0.1, 1, 10] },
      });
      counter.add(3, { route: "chat" });
      counter.add(2, { route: "chat" });
      counter.add(1, { route: "embeddings" });
      histogram.record(0.25, { route: "chat" });
      histogram.record(1.5, { route: "chat" });
      await provider.forceFlush();

      const metrics = await receiver.waitForMetrics(2);
      const sum = metrics.find((m) => m.name === "gateway.requests");
      const hist = metrics.find((m) => m.name === "gateway.request.duration");
      assert.ok(sum && hist, `metrics: ${metrics.map((m) => m.name)}`);

      assert.deepEqual([sum.kind, sum.unit, sum.description, sum.temporality, sum.monotonic], [
        "sum",
        "{request}",
        "Requests served",
        "CUMULATIVE",
        true,
      ]);
      assert.deepEqual(
        sum.points.map((p) => [p.attributes, p.value]).sort((a, b) =>
          String(a[1]).localeCompare(String(b[1]))
        ),
        [[{ route: "embeddings" }, 1], [{ route: "chat" }, 5]],
      );

      assert.deepEqual([hist.kind, hist.unit, hist.temporality], ["histogram", "s", "CUMULATIVE"]);
      assert.deepEqual(hist.points.length, 1);
      const [point] = hist.points;
      assert.deepEqual(point.attributes, { route: "chat" });
      assert.deepEqual([point.count, point.sum, point.min, point.max], [2, 1.75, 0.25, 1.5]);
      assert.deepEqual(point.explicitBounds, [0.1, 1, 10]);
      assert.deepEqual(point.bucketCounts, [0, 1, 1, 0]);
      assert.ok(point.timeUnixNano >= point.startTimeUnixNano && point.startTimeUnixNano > 0n);

      for (const metric of metrics) {
        assert.deepEqual(metric.resource["service.name"], SERVICE);
        assert.deepEqual(metric.scope.name, SCOPE);
        assert.deepEqual(metric.encoding, encoding);
      }
      assert.deepEqual(receiver.requests.map((r) => [r.path, r.error]), [["/v1/metrics", undefined]]);
    } finally {
      await provider.shutdown();
      await receiver.stop();
    }
  });
}

/**
 * Exports one span through `exporter` and reports the export's result, which the SDK otherwise only logs
 * (and, for a failure, throws from forceFlush).
 */
async function exportOneSpan(exporter: SpanExporter): Promise<ExportResult> {
  const results: ExportResult[] = [];
  const recording: SpanExporter = {
    export: (spans, done) =>
      exporter.export(spans, (result) => {
        results.push(result);
        done(result);
      }),
    shutdown: () => exporter.shutdown(),
  };
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: recording })] });
  try {
    provider.getTracer(SCOPE).startSpan("doomed").end();
    await provider.forceFlush().catch(() => {});
  } finally {
    await provider.shutdown();
  }
  assert.equal(results.length, 1);
  return results[0];
}

Deno.test("otlp receiver: a hanging receiver makes the export fail by its timeout, and still stops", async () => {
  const receiver = startOtlpReceiver({ hang: true });
  try {
    // Held until stop(), which comes after: only the exporter's own 300 ms deadline can end this export (an
    // export that waited for the answer would hang to the backstop).
    const result = await backstop(
      exportOneSpan(traceExporter("protobuf", receiver.url, 300)),
      "the export to a hanging receiver ends",
    );
    assert.deepEqual(result.code, ExportResultCode.FAILED);
    assert.match(String(result.error?.message), /timed out/, "ended by its timeout, not by an answer");
    // The body was read and decoded before the receiver went silent.
    assert.deepEqual(receiver.spans().map((s) => s.name), ["doomed"]);
  } finally {
    await backstop(receiver.stop(), "stop() of a receiver holding a request");
  }
});

Deno.test("otlp receiver: `status` answers every export with it", async () => {
  const receiver = startOtlpReceiver({ status: 400 });
  try {
    const result = await exportOneSpan(traceExporter("json", receiver.url));
    assert.deepEqual(result.code, ExportResultCode.FAILED);
    assert.deepEqual(receiver.requests.length, 1, "400 is not retryable");
    assert.deepEqual(receiver.spans().map((s) => s.name), ["doomed"]);
  } finally {
    await receiver.stop();
  }
});

Deno.test("otlp receiver: raw requests — base64 ids refused, gzip undone, logs accepted", async () => {
  const receiver = startOtlpReceiver();
  try {
    const post = async (path: string, body: BodyInit, headers: Record<string, string>) => {
      const response = await fetch(`${receiver.url}${path}`, { method: "POST", body, headers });
      return { status: response.status, text: await response.text() };
    };
    const json = { "content-type": "application/json" };
    const span = (traceId: string) =>
      JSON.stringify({
        resourceSpans: [{
          scopeSpans: [{
            spans: [{ traceId, spanId: "00f067aa0ba902b7", name: "raw", kind: 3, startTimeUnixNano: "1" }],
          }],
        }],
      });

    // Proto3's JSON mapping would write bytes as base64; OTLP/JSON requires hex, so base64 is an exporter bug.
    const bad = await post("/v1/traces", span("S/kvNXezTaajzpKdDg5HNg=="), json);
    assert.deepEqual(bad.status, 400);
    assert.match(receiver.requests[0].error ?? "", /traceId .* is not hex/);

    const gzipped = await new Response(
      new Blob([span("4BF92F3577B34DA6A3CE929D0E0E4736")]).stream().pipeThrough(
        new CompressionStream("gzip"),
      ),
    ).bytes();
    assert.deepEqual(await post("/v1/traces", gzipped, { ...json, "content-encoding": "gzip" }), {
      status: 200,
      text: "{}",
    });
    assert.deepEqual(receiver.spans().map((s) => [s.traceId, s.spanId, s.kind, s.startTimeUnixNano]), [
      ["4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "CLIENT", 1n],
    ]);
    assert.ok(
      new TextDecoder().decode(receiver.requests[1].bytes).includes('"name":"raw"'),
      "kept ungzipped",
    );

    assert.deepEqual(await post("/v1/logs", new Uint8Array(), { "content-type": "application/x-protobuf" }), {
      status: 200,
      text: "",
    });
    assert.deepEqual((await post("/v1/traces", "x", { "content-type": "text/plain" })).status, 415);
    assert.equal((await post("/v1/other", "x", json)).status, 404);
  } finally {
    await receiver.stop();
  }
});

Deno.test("otlp receiver: waitForSpans times out with what it saw, and rejects once stopped", async () => {
  const receiver: OtlpReceiver = startOtlpReceiver();
  await assert.rejects(receiver.waitForSpans(1, 50), /no matching spans within 50 ms; got: none/);
  const pending = receiver.waitForSpans((spans) => spans.some((s) => s.name === "never"), 10_000);
  await receiver.stop();
  await assert.rejects(pending, /stopped/);
  await assert.rejects(receiver.waitForSpans(0), /stopped/);
});
