/**
 * Telemetry's settings: the file's `telemetry:` block merged with the OpenTelemetry environment variables.
 * Apart from the exporters (telemetry.ts) so that a gateway with telemetry off decides so without loading the
 * OpenTelemetry SDK, which cost the Bun binary 7–12 ms of start-up.
 *
 * @module
 */
import { isCollectorUrl, parseOtlpHeaders, type TelemetryConfig } from "../config/telemetry_schema.ts";

/**
 * An `OTEL_EXPORTER_OTLP_*ENDPOINT` variable the gateway will not use: thrown at start (and by `check`) so the
 * operator hears which variable is wrong. The message never holds the value, which may hold a password.
 */
export class TelemetrySetupError extends Error {
  constructor(readonly variable: string) {
    super(
      `${variable} must be an http:// or https:// URL without credentials, query or fragment ` +
        `(put a collector's key in OTEL_EXPORTER_OTLP_HEADERS or telemetry.otlp.headers); its value is not shown`,
    );
    this.name = "TelemetrySetupError";
  }
}

/** The endpoint variable `name` as given, held to the rule the file's `telemetry.otlp.endpoint` is held to. */
function endpointVariable(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
): string | undefined {
  const value = env[name];
  if (value !== undefined && !isCollectorUrl(value)) throw new TelemetrySetupError(name);
  return value;
}

/**
 * The URL as a log line may show it: origin and path. The endpoints carry no credentials or query (refused
 * above and by the schema); this keeps it so should a rule ever loosen.
 */
export function loggableUrl(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

/** Where and how to export, once the file and the environment are merged. */
export interface TelemetrySettings {
  tracesUrl: string;
  metricsUrl: string;
  protocol: "http/protobuf" | "http/json";
  headers: Record<string, string>;
  sampleRatio: number;
  timeoutMs: number;
  maxQueue: number;
  intervalMs: number;
  captureContent: boolean;
  maxContentSize: number;
  serviceName: string;
  semconvOptIn: string | undefined;
}

/**
 * The export settings from the file's block and the environment (the OpenTelemetry variables fill in whatever
 * the block leaves out; without a block, `OTEL_EXPORTER_OTLP_ENDPOINT` or a per-signal endpoint turns export
 * on). Null when telemetry is off. Throws {@linkcode TelemetrySetupError} for an endpoint variable it would use
 * that carries credentials, a query or a fragment, or is no http(s) URL.
 */
export function telemetrySettings(
  config: TelemetryConfig | null,
  env: Readonly<Record<string, string | undefined>>,
): TelemetrySettings | null {
  // The file's endpoint, when set, is the only one used: the variables are checked only when they are read.
  const fromEnv = config?.otlp.endpoint === undefined;
  const base = config?.otlp.endpoint ??
    (fromEnv ? endpointVariable(env, "OTEL_EXPORTER_OTLP_ENDPOINT") : undefined);
  const traces = fromEnv ? endpointVariable(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") : undefined;
  if (config === null && base === undefined && traces === undefined) return null;
  const metrics = fromEnv ? endpointVariable(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") : undefined;
  const root = (base ?? "http://localhost:4318").replace(/\/+$/, "");
  const envProtocol = env.OTEL_EXPORTER_OTLP_PROTOCOL === "http/json" ? "http/json" : "http/protobuf";
  const samplerArg = Number(env.OTEL_TRACES_SAMPLER_ARG);
  const ratioSampler = /traceidratio$/.test(env.OTEL_TRACES_SAMPLER ?? "");
  return {
    tracesUrl: traces ?? `${root}/v1/traces`,
    metricsUrl: metrics ?? `${root}/v1/metrics`,
    protocol: config?.otlp.protocol ?? envProtocol,
    headers: config?.otlp.headers ?? parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    sampleRatio: config?.otlp.sample_ratio ??
      (ratioSampler && samplerArg >= 0 && samplerArg <= 1 ? samplerArg : 1),
    timeoutMs: config?.otlp.timeout ?? 10_000,
    maxQueue: config?.otlp.max_queue ?? 4_096,
    intervalMs: config?.otlp.interval ?? 1_000,
    captureContent: config?.capture_content ?? false,
    maxContentSize: config?.max_content_size ?? 16 * 1024,
    serviceName: config?.service_name ?? env.OTEL_SERVICE_NAME ?? "model-gateway",
    semconvOptIn: env.OTEL_SEMCONV_STABILITY_OPT_IN,
  };
}
