/**
 * OpenTelemetry export, set up once per process from `telemetry:` and the standard `OTEL_*` variables: a
 * tracer whose spans go through a bounded queue (span_queue.ts) to an OTLP/HTTP exporter (protobuf or JSON),
 * a ratio sampler, parent-based unless `OTEL_TRACES_SAMPLER` says otherwise (an incoming `traceparent` then
 * decides for its own trace), W3C trace-context
 * propagation, and the GenAI client metrics exported on a timer. The official OpenTelemetry JS packages do the
 * work; this module only wires them, bounds them and counts what they drop.
 *
 * Nothing here runs unless telemetry is configured: `createTelemetry` returns null, the request path checks one
 * property, and no span, timer or connection exists.
 *
 * @module
 */
import type { Histogram, Meter } from "@opentelemetry/api";
import { ExportResultCode, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter as ProtoTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  MeterProvider,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
} from "@opentelemetry/sdk-metrics";
import { ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from "@opentelemetry/sdk-trace";
import type { Counter } from "../metrics/registry.ts";
import { BUCKETS, GATEWAY, GENAI_SEMCONV_VERSION, semconvNames } from "./semconv.ts";
import { BoundedSpanQueue } from "./span_queue.ts";
import { fetchTransport, sendingThrough } from "./otlp_transport.ts";
import { capturedJson } from "./captured_content.ts";
import {
  type GenAiCall,
  RequestTrace,
  type SpanScrubber,
  type TelemetryCore,
  type TracedRecord,
} from "./request_trace.ts";
import type { TelemetrySettings } from "./settings.ts";
import type { ClientRequest } from "../runtime/types.ts";
import { BoundedValues, ERROR_CODE_SHAPE } from "../metrics/bounded_values.ts";

/** The process's telemetry. */
export interface Telemetry {
  readonly settings: TelemetrySettings;
  /**
   * The spans of one request; `scrubber`: that of the config it started with, which masks what an upstream
   * wrote into them (a reload while it runs brings another).
   */
  startRequest(request: ClientRequest, requestId: string, scrubber: SpanScrubber): RequestTrace;
  /** Exports what is queued within `graceMs`, then drops the rest (counted) and stops. */
  shutdown(graceMs: number): Promise<void>;
}

/** How far above max_content_size the span attribute length limit is. */
const ATTRIBUTE_MARGIN = 1_024;

/** How long past otlp.timeout the span queue waits for an export its transport should have ended already. */
const EXPORT_BACKSTOP_MS = 1_000;

/** Counts an exporter's failed exports as dropped (`signal="metrics"`), keeping its results. */
function counting(exporter: PushMetricExporter, dropped: () => void): PushMetricExporter {
  return {
    export(metrics, done) {
      exporter.export(metrics, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) dropped();
        done(result);
      });
    },
    forceFlush: () => exporter.forceFlush(),
    shutdown: () => exporter.shutdown(),
    selectAggregationTemporality: exporter.selectAggregationTemporality?.bind(exporter),
  };
}

/** Sets telemetry up; null when it is off (see settings.ts). */
export function createTelemetry(options: {
  settings: TelemetrySettings | null;
  dropped: Counter<readonly ["signal"]>;
}): Telemetry | null {
  const settings = options.settings;
  if (settings === null) return null;
  const resource = resourceFromAttributes({
    "service.name": settings.serviceName,
    // One per serving thread: with `serve --workers N` each worker exports its own running totals, and a
    // collector told them apart by nothing else took N series for one, each overwriting the others.
    "service.instance.id": crypto.randomUUID(),
    "telemetry.sdk.language": "webjs",
    "gateway.semconv.gen_ai": GENAI_SEMCONV_VERSION,
  });
  const json = settings.protocol === "http/json";
  const contentType = json ? "application/json" : "application/x-protobuf";
  // The SDK's exporters serialize; the gateway's transport sends, each export ended by its deadline
  // (otlp_transport.ts), and one at a time: a collector that is slow holds one connection, never a pile.
  const traceTransport = fetchTransport({ url: settings.tracesUrl, headers: settings.headers, contentType });
  const traceOptions = {
    url: settings.tracesUrl,
    headers: settings.headers,
    timeoutMillis: settings.timeoutMs,
    concurrencyLimit: 1,
  };
  const traceExporter = sendingThrough(
    json ? new JsonTraceExporter(traceOptions) : new ProtoTraceExporter(traceOptions),
    traceTransport,
  );
  const queue = new BoundedSpanQueue({
    exporter: traceExporter,
    maxQueue: settings.maxQueue,
    // Capped at half of max_queue by the queue itself, so a small queue still sends early.
    maxBatch: 512,
    intervalMs: settings.intervalMs,
    // The transport ends an export at otlp.timeout; the queue's own bound is only a backstop behind it, so
    // the queue never gives up on an export (and starts the next) while that one is still being ended.
    timeoutMs: settings.timeoutMs + EXPORT_BACKSTOP_MS,
    dropped: (n) => options.dropped.inc(["traces"], n),
  });
  const provider = new TracerProvider({
    resource,
    // A backstop for attributes nothing else bounds: captured messages are cut to max_content_size UTF-8
    // bytes (as many characters at most) as valid JSON, and an answer's id, model and finish reasons far
    // shorter (request_trace.ts); the SDK would cut a longer value blindly, so the limit stays above both.
    spanLimits: { attributeValueLengthLimit: settings.maxContentSize + ATTRIBUTE_MARGIN },
    sampler: settings.parentBased
      ? new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) })
      : new TraceIdRatioBasedSampler(settings.sampleRatio),
    spanProcessors: [queue],
  });
  // Metrics speak the protocol traces speak: a collector (or backend) that takes only JSON takes both. The
  // reader gives up on an export when its transport ends it, so the next collection finds the exporter free.
  const metricInterval = Math.max(settings.intervalMs, 1_000);
  const metricTimeout = Math.min(settings.timeoutMs, metricInterval);
  const metricTransport = fetchTransport({
    url: settings.metricsUrl,
    headers: settings.headers,
    contentType,
  });
  const metricOptions = { ...traceOptions, url: settings.metricsUrl, timeoutMillis: metricTimeout };
  const metricExporter = counting(
    sendingThrough(
      json ? new JsonMetricExporter(metricOptions) : new ProtoMetricExporter(metricOptions),
      metricTransport,
    ),
    () => options.dropped.inc(["metrics"]),
  );
  const meterProvider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: metricExporter,
        exportIntervalMillis: metricInterval,
        exportTimeoutMillis: metricTimeout,
      }),
    ],
  });
  const names = semconvNames(settings.semconvOptIn);
  const instruments = genAiInstruments(meterProvider.getMeter("model-gateway"), names);
  const core: TelemetryCore = {
    tracer: provider.getTracer("model-gateway"),
    propagator: new W3CTraceContextPropagator(),
    names,
    captureContent: settings.captureContent,
    content: (messages, scrubber) =>
      capturedJson(messages, settings.maxContentSize, (t) => scrubber.scrub(t)),
    recordMetrics: (call, record, model, genAiProvider, scrubber) =>
      instruments.record(call, record, model, genAiProvider, scrubber),
  };
  return {
    settings,
    startRequest: (request, requestId, scrubber) => new RequestTrace(core, request, requestId, scrubber),
    async shutdown(graceMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((resolve) => timer = setTimeout(resolve, graceMs));
      await Promise.race([
        Promise.allSettled([provider.shutdown(), meterProvider.shutdown()]),
        late,
      ]);
      clearTimeout(timer);
      queue.abandon();
      // An export still under way when the grace is over is ended, not waited for (it would hold the process).
      traceTransport.shutdown();
      metricTransport.shutdown();
    },
  };
}

/** Distinct response models and error types a GenAI metric keeps; later ones read `_OTHER`. */
const MAX_LABEL_VALUES = 50;
/** What a model name looks like (`gpt-4o-2024-08-06`, `models/gemini-2.5-pro`, `anthropic.claude-…:0`). */
const MODEL_SHAPE = /^[A-Za-z0-9_.:\/@-]{1,128}$/;

/**
 * The GenAI client metrics (OTel conventions), recorded from each finished request that made a GenAI call, under
 * that call's operation; the request's scrubber masks its config's secrets in the attributes an upstream wrote.
 */
function genAiInstruments(meter: Meter, names: ReturnType<typeof semconvNames>) {
  // The answer's model and an error code are an upstream's words: bounded as the Prometheus labels are, so an
  // upstream naming a new model (or error) per answer cannot grow the series without limit.
  const models = new BoundedValues(MAX_LABEL_VALUES, [], MODEL_SHAPE);
  const errorTypes = new BoundedValues(MAX_LABEL_VALUES, [], ERROR_CODE_SHAPE);
  const duration: Histogram = meter.createHistogram(names.metricDuration, {
    unit: "s",
    description: "Duration of GenAI operations through the gateway.",
    advice: { explicitBucketBoundaries: BUCKETS.duration },
  });
  const tokens: Histogram = meter.createHistogram(names.metricTokens, {
    unit: "{token}",
    description: "Tokens per GenAI operation, by type.",
    advice: { explicitBucketBoundaries: BUCKETS.tokens },
  });
  const firstChunk: Histogram = meter.createHistogram(names.metricFirstChunk, {
    unit: "s",
    description: "Time to the first chunk of a streamed GenAI answer.",
    advice: { explicitBucketBoundaries: BUCKETS.firstChunk },
  });
  const perChunk: Histogram = meter.createHistogram(names.metricPerChunk, {
    unit: "s",
    description:
      "Time per output token after the first chunk of a streamed answer (tokens stand in for chunks).",
    advice: { explicitBucketBoundaries: BUCKETS.perChunk },
  });
  return {
    record(
      call: GenAiCall,
      record: TracedRecord,
      model: string | undefined,
      genAiProvider: string | undefined,
      scrubber: SpanScrubber,
    ) {
      const attributes: Record<string, string> = {
        [names.operation]: call.operation,
        [names.requestModel]: call.alias,
      };
      // The conventions' name of the vendor, and the config's name of the entry (bounded by the config).
      if (genAiProvider !== undefined) attributes[names.provider] = genAiProvider;
      if (record.provider !== undefined) attributes[GATEWAY.provider] = record.provider;
      // The answer's model and an error code may be an upstream's words, which may quote a key.
      const responseModel = model ?? record.upstream_model;
      if (responseModel !== undefined) {
        attributes[names.responseModel] = models.get(scrubber.scrub(responseModel));
      }
      const withError = record.error_code
        ? { ...attributes, [names.errorType]: errorTypes.get(scrubber.scrub(String(record.error_code))) }
        : attributes;
      if (record.latency_ms !== undefined) duration.record(record.latency_ms / 1000, withError);
      if ((record.prompt_tokens ?? 0) > 0) {
        tokens.record(record.prompt_tokens!, { ...attributes, "gen_ai.token.type": "input" });
      }
      if ((record.completion_tokens ?? 0) > 0) {
        tokens.record(record.completion_tokens!, { ...attributes, "gen_ai.token.type": "output" });
      }
      if (record.stream && record.ttft_ms !== undefined) {
        firstChunk.record(record.ttft_ms / 1000, attributes);
        const output = record.completion_tokens ?? 0;
        if (output > 1 && record.latency_ms !== undefined) {
          perChunk.record(Math.max(0, record.latency_ms - record.ttft_ms) / 1000 / (output - 1), attributes);
        }
      }
    },
  };
}
