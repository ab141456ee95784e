/**
 * Telemetry's settings: the file's `telemetry:` block merged with the OpenTelemetry environment variables.
 * Apart from the exporters (telemetry.ts) so that a gateway with telemetry off decides so without loading the
 * OpenTelemetry SDK, which cost the Bun binary 7–12 ms of start-up.
 *
 * @module
 */
import { isCollectorUrl, parseOtlpHeaders, type TelemetryConfig } from "../config/telemetry_schema.ts";

/**
 * An `OTEL_*` variable the gateway will not use: thrown at start (and by `check`) so the operator hears which
 * variable is wrong. An endpoint's message never holds the value, which may hold a password.
 */
export class TelemetrySetupError extends Error {
  constructor(
    readonly variable: string,
    message = `${variable} must be an http:// or https:// URL without credentials, query or fragment ` +
      `(put a collector's key in OTEL_EXPORTER_OTLP_HEADERS or telemetry.otlp.headers); its value is not shown`,
  ) {
    super(message);
    this.name = "TelemetrySetupError";
  }
}

/** A variable's value; empty counts as unset, as the OpenTelemetry environment specification has it. */
function variable(env: Readonly<Record<string, string | undefined>>, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === "" ? undefined : value;
}

/** Whether `OTEL_SDK_DISABLED` turns telemetry off (`true`, any case: the specification's only true value). */
export function sdkDisabled(env: Readonly<Record<string, string | undefined>>): boolean {
  return variable(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true";
}

/** The protocols the gateway exports in (OTLP/HTTP); `grpc`, which the variable may also name, it does not speak. */
const PROTOCOLS = ["http/protobuf", "http/json"] as const;

/**
 * `OTEL_TRACES_SAMPLER`'s values the gateway honours: whether an incoming `traceparent`'s decision is kept, and
 * the share of new traces kept (undefined: `OTEL_TRACES_SAMPLER_ARG`'s, 1 without one).
 */
const SAMPLERS: Readonly<Record<string, { parentBased: boolean; ratio?: number }>> = {
  always_on: { parentBased: false, ratio: 1 },
  always_off: { parentBased: false, ratio: 0 },
  traceidratio: { parentBased: false },
  parentbased_always_on: { parentBased: true, ratio: 1 },
  parentbased_always_off: { parentBased: true, ratio: 0 },
  parentbased_traceidratio: { parentBased: true },
};

/**
 * The protocol from the variables: one the gateway does not speak (`grpc`) is refused, not replaced: exporting
 * OTLP/HTTP to a collector's gRPC port would lose every span without a word. Values are read in any case (the
 * specification's rule for enumerations). Traces and metrics go in one protocol: the one the variables name
 * (a per-signal variable set alone names it for both, which any OTLP/HTTP collector takes), `http/protobuf`
 * when none does; two that disagree are refused, naming both.
 */
function protocolVariable(
  env: Readonly<Record<string, string | undefined>>,
  inFile: boolean,
): typeof PROTOCOLS[number] {
  const named: { name: string; value: typeof PROTOCOLS[number] }[] = [];
  for (
    const name of [
      "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
      "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    ]
  ) {
    const value = variable(env, name)?.toLowerCase();
    if (value === undefined) continue;
    if (!(PROTOCOLS as readonly string[]).includes(value)) {
      throw new TelemetrySetupError(
        name,
        `${name} is ${JSON.stringify(value.slice(0, 64))}: the gateway exports OTLP over HTTP only ` +
          `(http/protobuf or http/json; point it at the collector's OTLP/HTTP port, 4318 by default` +
          (inFile ? ", or set telemetry.otlp.protocol in the file, which wins over the variable" : "") + ")",
      );
    }
    named.push({ name, value: value as typeof PROTOCOLS[number] });
  }
  const [first, ...rest] = named;
  const other = rest.find((n) => n.value !== first.value);
  if (other !== undefined) {
    throw new TelemetrySetupError(
      other.name,
      `${other.name} is ${other.value} but ${first.name} is ${first.value}: the gateway exports traces and ` +
        `metrics in one protocol (set OTEL_EXPORTER_OTLP_PROTOCOL alone)`,
    );
  }
  return first?.value ?? "http/protobuf";
}

/**
 * The sampler from `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`. A value the gateway does not know, or an
 * argument out of range, is ignored with a note (the specification's rule for both), as if it were not set.
 */
function samplerVariables(
  env: Readonly<Record<string, string | undefined>>,
  notes: string[],
): { parentBased: boolean; ratio: number } {
  const name = variable(env, "OTEL_TRACES_SAMPLER");
  if (name === undefined) return { parentBased: true, ratio: 1 };
  const key = name.toLowerCase();
  const known = Object.hasOwn(SAMPLERS, key) ? SAMPLERS[key] : undefined; // never Object.prototype's names
  if (known === undefined) {
    notes.push(
      `OTEL_TRACES_SAMPLER ${JSON.stringify(name.slice(0, 64))} is not one the gateway knows (${
        Object.keys(SAMPLERS).join(", ")
      }): ignored, every new trace is kept`,
    );
    return { parentBased: true, ratio: 1 };
  }
  if (known.ratio !== undefined) return { parentBased: known.parentBased, ratio: known.ratio };
  const arg = variable(env, "OTEL_TRACES_SAMPLER_ARG");
  const ratio = arg === undefined ? 1 : Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    notes.push(
      `OTEL_TRACES_SAMPLER_ARG ${
        JSON.stringify(arg!.slice(0, 64))
      } is no share between 0 and 1: ignored, 1 used`,
    );
    return { parentBased: known.parentBased, ratio: 1 };
  }
  return { parentBased: known.parentBased, ratio };
}

/** The endpoint variable `name` as given, held to the rule the file's `telemetry.otlp.endpoint` is held to. */
function endpointVariable(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
): string | undefined {
  const value = variable(env, name);
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
  protocol: typeof PROTOCOLS[number];
  headers: Record<string, string>;
  /** The share of new traces kept. */
  sampleRatio: number;
  /** Whether an incoming `traceparent`'s sampled flag decides for its trace (`parentbased_*`, and the file's). */
  parentBased: boolean;
  timeoutMs: number;
  maxQueue: number;
  intervalMs: number;
  captureContent: boolean;
  maxContentSize: number;
  serviceName: string;
  semconvOptIn: string | undefined;
  /** Variables ignored (an unknown sampler, an argument out of range): logged at start, shown by `check`. */
  notes: string[];
}

/**
 * The export settings from the file's block and the environment (the OpenTelemetry variables fill in whatever
 * the block leaves out; without a block, `OTEL_EXPORTER_OTLP_ENDPOINT` or a per-signal endpoint turns export
 * on). Null when telemetry is off, and when `OTEL_SDK_DISABLED=true` turns it off whatever the file says (the
 * specification's switch for every signal). Throws {@linkcode TelemetrySetupError} for an endpoint variable it
 * would use that carries credentials, a query or a fragment, or is no http(s) URL, and for a protocol variable
 * it would use that names one the gateway does not speak.
 */
export function telemetrySettings(
  config: TelemetryConfig | null,
  env: Readonly<Record<string, string | undefined>>,
): TelemetrySettings | null {
  if (sdkDisabled(env)) return null;
  // The file's endpoint, when set, is the only one used: the variables are checked only when they are read.
  const fromEnv = config?.otlp.endpoint === undefined;
  const base = config?.otlp.endpoint ??
    (fromEnv ? endpointVariable(env, "OTEL_EXPORTER_OTLP_ENDPOINT") : undefined);
  const traces = fromEnv ? endpointVariable(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") : undefined;
  if (config === null && base === undefined && traces === undefined) return null;
  const metrics = fromEnv ? endpointVariable(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") : undefined;
  const root = (base ?? "http://localhost:4318").replace(/\/+$/, "");
  const notes: string[] = [];
  const disabled = variable(env, "OTEL_SDK_DISABLED");
  if (disabled !== undefined && disabled.toLowerCase() !== "false") {
    notes.push(
      `OTEL_SDK_DISABLED ${JSON.stringify(disabled.slice(0, 64))} is not true or false: telemetry stays on`,
    );
  }
  // The file's ratio is parent-based (docs/observability.md); without it the variables choose the sampler.
  const fileRatio = config?.otlp.sample_ratio;
  const sampler = fileRatio !== undefined
    ? { parentBased: true, ratio: fileRatio }
    : samplerVariables(env, notes);
  return {
    tracesUrl: traces ?? `${root}/v1/traces`,
    metricsUrl: metrics ?? `${root}/v1/metrics`,
    protocol: config?.otlp.protocol ?? protocolVariable(env, config !== null),
    headers: config?.otlp.headers ?? parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    sampleRatio: sampler.ratio,
    parentBased: sampler.parentBased,
    timeoutMs: config?.otlp.timeout ?? 10_000,
    maxQueue: config?.otlp.max_queue ?? 4_096,
    intervalMs: config?.otlp.interval ?? 1_000,
    captureContent: config?.capture_content ?? false,
    maxContentSize: config?.max_content_size ?? 16 * 1024,
    serviceName: config?.service_name ?? env.OTEL_SERVICE_NAME ?? "model-gateway",
    semconvOptIn: env.OTEL_SEMCONV_STABILITY_OPT_IN,
    notes,
  };
}
