/**
 * The names the gateway's spans and metrics carry: one table, so a convention's rename is one edit here.
 *
 * GenAI names follow the OpenTelemetry GenAI semantic conventions at the version pinned below (the first with
 * `gen_ai.provider.name`). The conventions are still in development; as their transition plan asks, the
 * pinned names are what is emitted unless `OTEL_SEMCONV_STABILITY_OPT_IN` lists `gen_ai_latest_experimental`,
 * which switches to the latest names this gateway knows (the `latest` column). HTTP names are the stable HTTP
 * conventions. The gateway's own facts are under `gateway.*`.
 *
 * @module
 */

/** The GenAI semantic-conventions version the pinned names are from. */
export const GENAI_SEMCONV_VERSION = "1.37.0";

/** A name at the pinned version, and its latest experimental spelling (the same where nothing moved). */
type Name = { readonly pinned: string; readonly latest: string };
const same = (name: string): Name => ({ pinned: name, latest: name });

/** Every attribute, event and metric name the telemetry emits. */
export const NAMES = {
  operation: same("gen_ai.operation.name"),
  provider: same("gen_ai.provider.name"),
  requestModel: same("gen_ai.request.model"),
  responseModel: same("gen_ai.response.model"),
  maxTokens: same("gen_ai.request.max_tokens"),
  temperature: same("gen_ai.request.temperature"),
  topP: same("gen_ai.request.top_p"),
  finishReasons: same("gen_ai.response.finish_reasons"),
  responseId: same("gen_ai.response.id"),
  inputTokens: same("gen_ai.usage.input_tokens"),
  outputTokens: same("gen_ai.usage.output_tokens"),
  cachedInputTokens: same("gen_ai.usage.cache_read.input_tokens"),
  reasoningOutputTokens: {
    pinned: "gen_ai.usage.output_tokens.reasoning",
    latest: "gen_ai.usage.reasoning.output_tokens",
  },
  inputMessages: same("gen_ai.input.messages"),
  outputMessages: same("gen_ai.output.messages"),
  firstChunkEvent: same("gen_ai.first_chunk"),
  timeToFirstChunk: same("gen_ai.response.time_to_first_chunk"),
  errorType: same("error.type"),
  httpMethod: same("http.request.method"),
  httpRoute: same("http.route"),
  httpStatus: same("http.response.status_code"),
  urlPath: same("url.path"),
  urlFull: same("url.full"),
  serverAddress: same("server.address"),
  serverPort: same("server.port"),
  metricDuration: same("gen_ai.client.operation.duration"),
  metricTokens: same("gen_ai.client.token.usage"),
  metricFirstChunk: same("gen_ai.client.operation.time_to_first_chunk"),
  metricPerChunk: same("gen_ai.client.operation.time_per_output_chunk"),
} as const satisfies Record<string, Name>;

/**
 * The bucket boundaries the GenAI metric conventions advise (ExplicitBucketBoundaries): the SDK's default
 * ([0, 5, 10, …, 10000], made for milliseconds) would put nearly every duration in seconds into one bucket.
 * The client time-to-first-chunk and time-per-output-chunk metrics take the duration's list, as the conventions
 * say for each (not the server time-to-first-token / time-per-output-token lists).
 */
const SECONDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
export const BUCKETS = {
  duration: SECONDS,
  // 1, 4, 16, … 67108864 (4¹³), as the conventions list them.
  tokens: Array.from({ length: 14 }, (_, i) => 4 ** i),
  firstChunk: SECONDS,
  perChunk: SECONDS,
} satisfies Record<string, readonly number[]>;

/** The gateway's own attributes. */
export const GATEWAY = {
  alias: "gateway.alias",
  token: "gateway.token.name",
  environment: "gateway.token.environment",
  clientApi: "gateway.client_api",
  outcome: "gateway.policy.outcome",
  rule: "gateway.policy.rule",
  cache: "gateway.cache",
  attempts: "gateway.attempts",
  attemptOutcome: "gateway.attempt.outcome",
  /** The provider entry's name in config (`gen_ai.provider.name` is the conventions' name of its vendor). */
  provider: "gateway.provider",
  requestId: "gateway.request_id",
  stream: "gateway.stream",
  dropped: "gateway.dropped",
} as const;

/** The names to emit under `OTEL_SEMCONV_STABILITY_OPT_IN` (a comma-separated list). */
export function semconvNames(optIn: string | undefined): Readonly<Record<keyof typeof NAMES, string>> {
  const latest = (optIn ?? "").split(",").map((s) => s.trim()).includes("gen_ai_latest_experimental");
  const out = {} as Record<keyof typeof NAMES, string>;
  for (const [key, name] of Object.entries(NAMES) as [keyof typeof NAMES, Name][]) {
    out[key] = latest ? name.latest : name.pinned;
  }
  return out;
}
