/**
 * An OTLP/HTTP receiver (a stand-in OpenTelemetry collector) for end-to-end tests of the gateway's telemetry
 * export. It serves `POST /v1/traces`, `/v1/metrics` and `/v1/logs` on 127.0.0.1, keeps every raw body (so a
 * test can search every exported byte for a secret), and decodes traces and metrics into plain shapes.
 *
 * Decoding uses the official opentelemetry-proto definitions, not a hand-written wire parser: the static
 * protobufjs module that the OpenTelemetry JS project generated from the official `.proto` files and shipped
 * in `@opentelemetry/otlp-transformer@0.216.0` (the last release that still carried it for traces and
 * metrics; later ones encode by hand). A hand-written decoder would share the exporter's possible mistakes;
 * a reference decoder catches them. OTLP/JSON goes through the same definitions: its hex trace and span ids
 * are turned into bytes (the OTLP/JSON spec's one departure from the proto3 JSON mapping) and the rest is
 * read by the generated `fromObject`, so both encodings end in one normaliser and compare equal.
 *
 * `hang: true` reads and records each request, then never answers until {@linkcode OtlpReceiver.stop}
 * (which answers the held requests so the server can close); `status` answers every request with that
 * status, to test a failing collector; `trickle: true` answers 200 at once and then sends its body a byte at a
 * time, never ending it, until {@linkcode OtlpReceiver.heal} (a collector that answers slowly, then recovers).
 *
 * @module
 */
import otlpRoot from "@opentelemetry/otlp-transformer/build/src/generated/root.js";
import { BACKSTOP_MS } from "./backstop.ts";

/** An attribute value as OTLP's `AnyValue` carries it (`intValue` as a number; `bytesValue` as bytes). */
export type AttributeValue =
  | string
  | number
  | boolean
  | Uint8Array
  | null
  | AttributeValue[]
  | { [key: string]: AttributeValue };

/** Attributes by key. */
export type Attributes = Record<string, AttributeValue>;

/** A span's kind, OTLP's `SPAN_KIND_` enum name without the prefix. */
export type SpanKindName = "UNSPECIFIED" | "INTERNAL" | "SERVER" | "CLIENT" | "PRODUCER" | "CONSUMER";

/** A span's status code, OTLP's `STATUS_CODE_` enum name without the prefix. */
export type StatusCodeName = "UNSET" | "OK" | "ERROR";

/** One exported span, the same whichever encoding carried it. Ids are lower-case hex. */
export interface DecodedSpan {
  traceId: string;
  spanId: string;
  /** `""` for a root span. */
  parentSpanId: string;
  traceState: string;
  name: string;
  kind: SpanKindName;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Attributes;
  events: { name: string; timeUnixNano: bigint; attributes: Attributes }[];
  links: { traceId: string; spanId: string; attributes: Attributes }[];
  status: { code: StatusCodeName; message: string };
  /** The resource's attributes (`service.name` and the like). */
  resource: Attributes;
  scope: { name: string; version: string };
  /** Which encoding carried it, to tell a test's two exporters apart. */
  encoding: OtlpEncoding;
}

/** One data point of a metric: `value` for sums and gauges, the rest for histograms. */
export interface DecodedPoint {
  attributes: Attributes;
  startTimeUnixNano: bigint;
  timeUnixNano: bigint;
  /** Sum and gauge points (`asDouble` or `asInt`). */
  value?: number;
  /** Histogram points. */
  count?: number;
  sum?: number;
  min?: number;
  max?: number;
  /** Histogram points: `bucketCounts[i]` counts values up to `explicitBounds[i]`; the last one, the rest. */
  explicitBounds?: number[];
  bucketCounts?: number[];
}

/** One exported metric (one per export that carried it: a periodic reader sends the same name again). */
export interface DecodedMetric {
  name: string;
  unit: string;
  description: string;
  kind: "histogram" | "sum" | "gauge" | "exponentialHistogram" | "summary";
  /** Sums and histograms: `"DELTA"` or `"CUMULATIVE"`. */
  temporality?: Temporality;
  /** Sums only. */
  monotonic?: boolean;
  points: DecodedPoint[];
  resource: Attributes;
  scope: { name: string; version: string };
  encoding: OtlpEncoding;
}

/** How a sum or histogram aggregates over time, OTLP's `AGGREGATION_TEMPORALITY_` enum name without the prefix. */
export type Temporality = "UNSPECIFIED" | "DELTA" | "CUMULATIVE";

/** The two OTLP/HTTP encodings. */
export type OtlpEncoding = "protobuf" | "json";

/** One request as received. */
export interface ReceivedRequest {
  path: string;
  contentType: string;
  /** The body after any `Content-Encoding: gzip` was undone, so a search sees the exported text. */
  bytes: Uint8Array;
  /** Why the body could not be decoded (the receiver answered 400), if it could not. */
  error?: string;
}

/** How the receiver answers. */
export interface OtlpReceiverOptions {
  /** Never answer (until stop()): a collector that accepts the connection and then hangs. */
  hang?: boolean;
  /** Answer every export with this status instead of 200. */
  status?: number;
  /**
   * Answer 200 at once, then trickle the body a byte every 50 ms, never ending it: only the client closing the
   * connection (or stop()) ends such an answer. heal() makes later answers whole and immediate.
   */
  trickle?: boolean;
}

/** A trickled answer: to which path, and whether the client has closed it. */
export interface TrickledAnswer {
  path: string;
  closed: boolean;
}

/** A running receiver. */
export interface OtlpReceiver {
  /** Base URL, e.g. `http://127.0.0.1:PORT`; exporters post to `${url}/v1/traces` and `${url}/v1/metrics`. */
  url: string;
  /** Every span decoded so far, in arrival order. */
  spans(): DecodedSpan[];
  /** Every metric decoded so far, in arrival order. */
  metrics(): DecodedMetric[];
  /** Every request received, decodable or not, in arrival order. */
  requests: ReceivedRequest[];
  /** The answers a `trickle` receiver trickled, in arrival order. */
  trickled: TrickledAnswer[];
  /** A `trickle` receiver answers at once from now on (the ones already trickling go on). */
  heal(): void;
  /**
   * Resolves with all spans once `until` holds (a predicate over all spans so far, or a minimum count);
   * rejects after `timeoutMs` (default {@linkcode BACKSTOP_MS}: a backstop, never a timing claim) with the span
   * names seen, or when the receiver stops.
   */
  waitForSpans(
    until: number | ((spans: DecodedSpan[]) => boolean),
    timeoutMs?: number,
  ): Promise<DecodedSpan[]>;
  /** As {@linkcode OtlpReceiver.waitForSpans}, over metrics. */
  waitForMetrics(
    until: number | ((metrics: DecodedMetric[]) => boolean),
    timeoutMs?: number,
  ): Promise<DecodedMetric[]>;
  /** Answers any held request, then closes the server. Safe to call twice. */
  stop(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------
// The generated module, typed just as far as used. Its `.d.ts` declares only `protobuf.Root`, so the
// message classes are looked up by their proto package path and checked at run time.

interface MessageClass {
  decode(bytes: Uint8Array): unknown;
  fromObject(object: Record<string, unknown>): unknown;
  toObject(message: unknown, options: Record<string, unknown>): Record<string, unknown>;
}

function messageClass(path: string): MessageClass {
  let node: unknown = otlpRoot;
  for (const part of path.split(".")) node = isRecord(node) ? node[part] : undefined;
  if (
    typeof node !== "function" || !("decode" in node) || !("fromObject" in node) || !("toObject" in node)
  ) {
    throw new Error(`otlp_receiver: ${path} is not a message in the generated OTLP module`);
  }
  return node as unknown as MessageClass;
}

const TRACE_REQUEST = messageClass("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");
const METRICS_REQUEST = messageClass("opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest");

/**
 * 64-bit integers as decimal strings (no precision lost on nanosecond timestamps), enums by name, and every
 * field present with its default, so the normaliser need not guess at absent fields.
 */
const TO_OBJECT = { longs: String, enums: String, defaults: true, arrays: true, oneofs: true };

// ---------------------------------------------------------------------------------------------------------
// Narrowing helpers for the generated `toObject` output.

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    !(value instanceof Uint8Array);
}

function rec(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function num(value: unknown): number {
  return typeof value === "number" ? value : typeof value === "string" && value !== "" ? Number(value) : 0;
}

function nanos(value: unknown): bigint {
  return typeof value === "string" && value !== ""
    ? BigInt(value)
    : typeof value === "number"
    ? BigInt(value)
    : 0n;
}

function hex(value: unknown): string {
  if (!(value instanceof Uint8Array)) return "";
  return Array.from(value, (b) => b.toString(16).padStart(2, "0")).join("");
}

function enumName(value: unknown, prefix: string): string {
  const name = str(value);
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

// ---------------------------------------------------------------------------------------------------------
// Normalisation (from the generated `toObject` shape, shared by both encodings).

function anyValue(value: unknown): AttributeValue {
  const v = rec(value);
  // With `oneofs: true` the generated code names the set field of the `value` oneof.
  switch (v.value) {
    case "stringValue":
      return str(v.stringValue);
    case "boolValue":
      return v.boolValue === true;
    case "intValue":
    case "doubleValue":
      return num(v[v.value]);
    case "bytesValue":
      return v.bytesValue instanceof Uint8Array ? new Uint8Array(v.bytesValue) : new Uint8Array();
    case "arrayValue":
      return list(rec(v.arrayValue).values).map(anyValue);
    case "kvlistValue":
      return attributes(rec(v.kvlistValue).values);
    default:
      return null;
  }
}

function attributes(keyValues: unknown): Attributes {
  const out: Attributes = {};
  for (const kv of list(keyValues)) out[str(rec(kv).key)] = anyValue(rec(kv).value);
  return out;
}

function scopeOf(scope: unknown): { name: string; version: string } {
  return { name: str(rec(scope).name), version: str(rec(scope).version) };
}

function normaliseSpans(request: Record<string, unknown>, encoding: OtlpEncoding): DecodedSpan[] {
  const out: DecodedSpan[] = [];
  for (const resourceSpans of list(request.resourceSpans)) {
    const resource = attributes(rec(rec(resourceSpans).resource).attributes);
    for (const scopeSpans of list(rec(resourceSpans).scopeSpans)) {
      const scope = scopeOf(rec(scopeSpans).scope);
      for (const item of list(rec(scopeSpans).spans)) {
        const span = rec(item);
        const status = rec(span.status);
        out.push({
          traceId: hex(span.traceId),
          spanId: hex(span.spanId),
          parentSpanId: hex(span.parentSpanId),
          traceState: str(span.traceState),
          name: str(span.name),
          kind: enumName(span.kind, "SPAN_KIND_") as SpanKindName,
          startTimeUnixNano: nanos(span.startTimeUnixNano),
          endTimeUnixNano: nanos(span.endTimeUnixNano),
          attributes: attributes(span.attributes),
          events: list(span.events).map((e) => ({
            name: str(rec(e).name),
            timeUnixNano: nanos(rec(e).timeUnixNano),
            attributes: attributes(rec(e).attributes),
          })),
          links: list(span.links).map((l) => ({
            traceId: hex(rec(l).traceId),
            spanId: hex(rec(l).spanId),
            attributes: attributes(rec(l).attributes),
          })),
          // An absent status is UNSET (the proto default).
          status: {
            code: (enumName(status.code, "STATUS_CODE_") || "UNSET") as StatusCodeName,
            message: str(status.message),
          },
          resource,
          scope,
          encoding,
        });
      }
    }
  }
  return out;
}

function numberPoint(point: Record<string, unknown>): DecodedPoint {
  return {
    attributes: attributes(point.attributes),
    startTimeUnixNano: nanos(point.startTimeUnixNano),
    timeUnixNano: nanos(point.timeUnixNano),
    value: point.value === "asInt" ? num(point.asInt) : num(point.asDouble),
  };
}

function histogramPoint(point: Record<string, unknown>): DecodedPoint {
  // sum, min and max are proto3 `optional`: present only when the exporter set them.
  const optional = (field: string) => point[`_${field}`] === field ? num(point[field]) : undefined;
  return {
    attributes: attributes(point.attributes),
    startTimeUnixNano: nanos(point.startTimeUnixNano),
    timeUnixNano: nanos(point.timeUnixNano),
    count: num(point.count),
    sum: optional("sum"),
    min: optional("min"),
    max: optional("max"),
    explicitBounds: list(point.explicitBounds).map(num),
    bucketCounts: list(point.bucketCounts).map(num),
  };
}

function normaliseMetrics(request: Record<string, unknown>, encoding: OtlpEncoding): DecodedMetric[] {
  const out: DecodedMetric[] = [];
  for (const resourceMetrics of list(request.resourceMetrics)) {
    const resource = attributes(rec(rec(resourceMetrics).resource).attributes);
    for (const scopeMetrics of list(rec(resourceMetrics).scopeMetrics)) {
      const scope = scopeOf(rec(scopeMetrics).scope);
      for (const item of list(rec(scopeMetrics).metrics)) {
        const metric = rec(item);
        const base = {
          name: str(metric.name),
          unit: str(metric.unit),
          description: str(metric.description),
          resource,
          scope,
          encoding,
        };
        const kind = str(metric.data) as DecodedMetric["kind"];
        const data = rec(metric[kind]);
        const temporality = enumName(data.aggregationTemporality, "AGGREGATION_TEMPORALITY_") as Temporality;
        const points = list(data.dataPoints).map(rec);
        switch (kind) {
          case "sum":
            out.push({
              ...base,
              kind,
              temporality,
              monotonic: data.isMonotonic === true,
              points: points.map(numberPoint),
            });
            break;
          case "gauge":
            out.push({ ...base, kind, points: points.map(numberPoint) });
            break;
          case "histogram":
            out.push({ ...base, kind, temporality, points: points.map(histogramPoint) });
            break;
          case "exponentialHistogram":
          case "summary":
            // Kept by kind so a test notices them; the gateway exports neither.
            out.push({
              ...base,
              kind,
              points: points.map((p) => ({
                attributes: attributes(p.attributes),
                startTimeUnixNano: nanos(p.startTimeUnixNano),
                timeUnixNano: nanos(p.timeUnixNano),
                count: num(p.count),
                sum: num(p.sum),
              })),
            });
            break;
          default:
            throw new Error(`metric ${base.name} carries no data`);
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// OTLP/JSON → the generated classes.

/** The fields OTLP/JSON writes as hex (spans, links, exemplars and log records), unlike proto3 JSON's base64. */
const HEX_ID_FIELDS = new Set(["traceId", "spanId", "parentSpanId"]);

/** Copies an OTLP/JSON value, turning hex ids into bytes; rejects an id that is not hex (say, base64). */
function hexIdsToBytes(value: unknown, key = ""): unknown {
  if (Array.isArray(value)) return value.map((v) => hexIdsToBytes(v));
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = hexIdsToBytes(v, k);
    return out;
  }
  if (HEX_ID_FIELDS.has(key) && typeof value === "string") {
    if (!/^(?:[0-9a-fA-F]{2})*$/.test(value)) throw new Error(`${key} ${JSON.stringify(value)} is not hex`);
    return Uint8Array.from(value.match(/../g) ?? [], (pair) => parseInt(pair, 16));
  }
  return value;
}

function decodeBody(type: MessageClass, bytes: Uint8Array, encoding: OtlpEncoding): Record<string, unknown> {
  if (encoding === "protobuf") return type.toObject(type.decode(bytes), TO_OBJECT);
  const json: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  if (!isRecord(json)) throw new Error("the JSON body is not an object");
  return type.toObject(type.fromObject(rec(hexIdsToBytes(json))), TO_OBJECT);
}

async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes.slice()]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// ---------------------------------------------------------------------------------------------------------

interface Waiter {
  check(): void;
  fail(reason: Error): void;
}

/** Starts a receiver on 127.0.0.1 on a free port. */
export function startOtlpReceiver(options: OtlpReceiverOptions = {}): OtlpReceiver {
  const spans: DecodedSpan[] = [];
  const metrics: DecodedMetric[] = [];
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<Waiter>();
  /** Held answers of a hanging receiver, released by stop(). */
  const held = new Set<PromiseWithResolvers<void>>();
  const trickled: TrickledAnswer[] = [];
  /** Ends the trickling answers still open (stop()). */
  const trickling = new Set<() => void>();
  let healed = false;
  let stopping: Promise<void> | undefined;

  function wait<T>(
    items: T[],
    what: string,
    describe: (item: T) => string,
    until: number | ((items: T[]) => boolean),
    timeoutMs: number,
  ): Promise<T[]> {
    const done = typeof until === "number" ? (all: T[]) => all.length >= until : until;
    const { promise, resolve, reject } = Promise.withResolvers<T[]>();
    // A test that gave up on this wait (it failed first, then stopped the receiver in `finally`) must not
    // have its real error replaced by an unhandled rejection; an awaiting caller still sees the rejection.
    promise.catch(() => {});
    const waiter: Waiter = {
      check() {
        if (!done(items)) return;
        finish();
        resolve([...items]);
      },
      fail(reason) {
        finish();
        reject(reason);
      },
    };
    const timer = setTimeout(() => {
      const seen = items.map(describe).join(", ") || "none";
      waiter.fail(new Error(`otlp_receiver: no matching ${what} within ${timeoutMs} ms; got: ${seen}`));
    }, timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      waiters.delete(waiter);
    };
    if (stopping) waiter.fail(new Error("otlp_receiver: stopped"));
    else {
      waiters.add(waiter);
      waiter.check();
    }
    return promise;
  }

  async function handler(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    const signal = ({ "/v1/traces": "traces", "/v1/metrics": "metrics", "/v1/logs": "logs" } as const)[path];
    if (!signal) return new Response("not found", { status: 404 });
    if (request.method !== "POST") return new Response("method not allowed", { status: 405 });
    const contentType = request.headers.get("content-type") ?? "";
    const mediaType = contentType.split(";")[0].trim().toLowerCase();
    const encoding: OtlpEncoding | undefined = mediaType === "application/x-protobuf" ||
        mediaType === "application/protobuf"
      ? "protobuf"
      : mediaType === "application/json"
      ? "json"
      : undefined;

    let bytes: Uint8Array = await request.bytes();
    const received: ReceivedRequest = { path, contentType, bytes };
    requests.push(received);
    if (!encoding) {
      received.error = `unsupported content-type ${JSON.stringify(contentType)}`;
      return new Response(received.error, { status: 415 });
    }
    try {
      if (request.headers.get("content-encoding")?.toLowerCase() === "gzip") {
        received.bytes = bytes = await gunzip(bytes);
      }
      if (signal === "traces") {
        spans.push(...normaliseSpans(decodeBody(TRACE_REQUEST, bytes, encoding), encoding));
      }
      if (signal === "metrics") {
        metrics.push(...normaliseMetrics(decodeBody(METRICS_REQUEST, bytes, encoding), encoding));
      }
    } catch (error) {
      received.error = error instanceof Error ? error.message : String(error);
      return new Response(received.error, { status: 400 });
    } finally {
      for (const waiter of [...waiters]) waiter.check();
    }

    if (options.hang && !stopping) {
      const release = Promise.withResolvers<void>();
      held.add(release);
      await release.promise;
      held.delete(release);
      return new Response(null, { status: 503 });
    }
    if (options.trickle && !healed && !stopping) return trickleAnswer(path);
    // An empty Export*ServiceResponse: no bytes in protobuf (all fields default), `{}` in JSON.
    return encoding === "json"
      ? new Response("{}", { status: options.status ?? 200, headers: { "content-type": "application/json" } })
      : new Response(null, {
        status: options.status ?? 200,
        headers: { "content-type": "application/x-protobuf" },
      });
  }

  /** 200 at once, then a space every 50 ms until the client goes away (its cancel) or stop() ends it. */
  function trickleAnswer(path: string): Response {
    const answer: TrickledAnswer = { path, closed: false };
    trickled.push(answer);
    let timer: ReturnType<typeof setInterval> | undefined;
    let end = () => {};
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        timer = setInterval(() => {
          try {
            controller.enqueue(new Uint8Array([32]));
          } catch { /* the stream is closing */ }
        }, 50);
        end = () => {
          clearInterval(timer);
          trickling.delete(end);
          try {
            controller.close();
          } catch { /* already cancelled */ }
        };
        trickling.add(end);
      },
      cancel() {
        clearInterval(timer);
        trickling.delete(end);
        answer.closed = true;
      },
    });
    return new Response(body, { status: 200, headers: { "content-type": "application/x-protobuf" } });
  }

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);

  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    spans: () => [...spans],
    metrics: () => [...metrics],
    requests,
    trickled,
    heal() {
      healed = true;
    },
    waitForSpans: (until, timeoutMs = BACKSTOP_MS) =>
      wait(spans, "spans", (s) => `${s.name} (${s.kind}, ${s.encoding})`, until, timeoutMs),
    waitForMetrics: (until, timeoutMs = BACKSTOP_MS) =>
      wait(metrics, "metrics", (m) => `${m.name} (${m.kind}, ${m.encoding})`, until, timeoutMs),
    stop() {
      stopping ??= (async () => {
        for (const waiter of [...waiters]) waiter.fail(new Error("otlp_receiver: stopped"));
        // Deno's shutdown waits for in-flight handlers, so a hanging receiver answers its held requests
        // first (their clients have usually given up already; the answer then goes nowhere).
        for (const release of held) release.resolve();
        for (const end of [...trickling]) end();
        await server.shutdown();
      })();
      return stopping;
    },
  };
}
