/**
 * The configuration schema: what operators may write (`z.input`) and the fully defaulted shape the gateway
 * runs on (`z.output`). Every object is strict so a typo is an error, not a silently ignored key.
 *
 * The providers' entries are in `provider_schema.ts`, the fleet's shared stores (Redis, PostgreSQL) in
 * `fleet_schema.ts` and the `"30s"`/`"4MiB"` values in `units_schema.ts`, re-exported here so the whole schema
 * is imported from one module.
 *
 * Structural rules live here; rules that look across sections (dangling references, duplicate hashes, alias
 * types a provider cannot serve) live in `semantic_checks.ts`.
 *
 * @module
 */
import { z } from "zod";
import { providerSchema, timeoutsSchema, upstreamIdleTimeout, upstreamTimeout } from "./provider_schema.ts";
import { byteSize, duration, positiveTimeout, timerDuration } from "./units_schema.ts";
import { unreservedName } from "./reserved_names.ts";
import { aliasCacheSchema, cacheStoreSchema, tokenCacheSchema } from "./cache_schema.ts";
import { telemetrySchema } from "./telemetry_schema.ts";
import { alertsSchema } from "./alerts_schema.ts";
import { guardrailRefs, guardrailsSchema } from "./guardrails_schema.ts";
import { postgresSchema, redisSchema } from "./fleet_schema.ts";
import { pricingSchema } from "../pricing/schema.ts";
import { isListenHost, LISTEN_HOST_RULE } from "./listen_host.ts";
import {
  budgetSchema,
  endUserLimitsSchema,
  limitsSchema,
  TEAM_NAME_PATTERN,
  teamSchema,
} from "./spend_schema.ts";

export { byteSize, duration } from "./units_schema.ts";
export type { PostgresConfig, RedisConfig } from "./fleet_schema.ts";
export {
  type BudgetConfig,
  budgetSchema,
  type EndUserLimitsConfig,
  type LimitsConfig,
  limitsSchema,
  type TeamConfig,
} from "./spend_schema.ts";
export {
  type AnthropicProviderConfig,
  type AzureProviderConfig,
  type BedrockProviderConfig,
  type GeminiProviderConfig,
  type OpenAIProviderConfig,
  type ProviderConfig,
  providerSchema,
  type ReasoningHistory,
  type Timeouts,
  timeoutsSchema,
} from "./provider_schema.ts";

/**
 * The API endpoint names, the one list of them: token `endpoints:` scopes, policy, usage records and metrics
 * labels use these; `http/endpoints.ts` gives each one its route(s).
 */
export const ENDPOINTS = [
  "chat",
  "embeddings",
  "models",
  "responses",
  "messages",
  "gemini",
  "moderations",
] as const;

/**
 * A client connection's deadline: above 0. None of them has an "off": `header_timeout: 0` left a request head
 * without its own deadline on Deno, `body_timeout: 0` would answer every body 408 and `send_timeout: 0` end
 * every stream a client reads a little late, so 0 is refused rather than meaning something different per key.
 */
const connectionTimeout = positiveTimeout("a connection limit cannot be turned off");

const serverSchema = z.strictObject({
  host: z.string().min(1).refine(isListenHost, LISTEN_HOST_RULE).default("127.0.0.1"),
  port: z.number().int().min(0).max(65535).default(8080),
  max_body_size: byteSize.default(4 * 1024 * 1024),
  shutdown_timeout: timerDuration.default(10_000),
  /**
   * Serving threads sharing the port (`serve --workers N` wins): `1` serves from the one thread, as the gateway
   * always did; more start that many workers around a primary that owns the counters, the usage store and the
   * token store; `auto` starts one per core.
   */
  workers: z.union([z.number().int().min(1).max(256), z.literal("auto")]).default(1),
  /** Serve `/metrics` without a token (for scrapers on a trusted network); otherwise it needs an admin token. */
  public_metrics: z.boolean().default(false),
  timeouts: z.strictObject({
    first_byte: upstreamTimeout.default(60_000),
    idle: upstreamIdleTimeout.default(60_000),
    total: upstreamTimeout.default(600_000),
  }).default({ first_byte: 60_000, idle: 60_000, total: 600_000 }),
  /**
   * Deepest nesting of arrays and objects accepted in a client's JSON body. OpenAI's own request shapes are a
   * few levels deep; tool parameter schemas need more, so the default leaves ample room while refusing the
   * 100k-level bodies that would overflow the stack on re-serialization.
   */
  max_json_depth: z.number().int().min(8).max(10_000).default(64),
  /**
   * What is read from an upstream: whole (non-streamed) answers, decompressed, single SSE events, and (when set)
   * a whole stream.
   */
  upstream_limits: z.strictObject({
    max_body_size: byteSize.default(32 * 1024 * 1024),
    max_event_size: byteSize.default(16 * 1024 * 1024),
    max_stream_size: byteSize.refine((n) => n > 0, "must be above 0").optional(),
  }).default({ max_body_size: 32 * 1024 * 1024, max_event_size: 16 * 1024 * 1024 }),
  /**
   * Limits on client connections, so stalled, idle or everlasting sockets cannot pile up on an exposed port.
   * None of them cuts a response in progress for its silence: a silent stream is governed by the upstream idle
   * timeout.
   */
  connections: z.strictObject({
    /** Until the whole request head (request line and headers) has arrived. */
    header_timeout: connectionTimeout.default(10_000),
    /** Until the whole request body has arrived, counted from the end of the head. */
    body_timeout: connectionTimeout.default(60_000),
    /** How long an idle keep-alive connection is kept open between requests. */
    keep_alive_timeout: connectionTimeout.default(65_000),
    /**
     * How long a client may take none of an answer's bytes (its connection's buffers full) before it is
     * disconnected: a client that stops reading must not hold its stream, its upstream call and its
     * concurrency slots for as long as it keeps the socket open.
     */
    send_timeout: connectionTimeout.default(60_000),
    /** Open client connections at most; past it a new connection is refused with a 503. */
    max_connections: z.number().int().min(1).default(8192),
    /**
     * The longest a Responses WebSocket lasts, from its opening (OpenAI's own limit, 60 minutes): a client that
     * keeps sending more often than `keep_alive_timeout` must not hold a connection, and what it keeps for the
     * connection, for ever. Then the client is told with OpenAI's `websocket_connection_limit_reached` error
     * event, and the connection closed.
     */
    websocket_max_duration: timerDuration.refine((ms) => ms > 0, "must be above 0").default(3_600_000),
    /**
     * How long an answer in progress when `websocket_max_duration` is reached may still take: it is let
     * finish (a cut answer would be paid for and lost), but not for ever, so the limit still holds.
     */
    websocket_max_duration_grace: timerDuration.default(600_000),
  }).default({
    header_timeout: 10_000,
    body_timeout: 60_000,
    keep_alive_timeout: 65_000,
    send_timeout: 60_000,
    max_connections: 8192,
    websocket_max_duration: 3_600_000,
    websocket_max_duration_grace: 600_000,
  }),
});

/** Alias names are what clients send as `model`, so keep them to URL- and log-safe characters. */
export const ALIAS_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$/;

/**
 * Price of a target per million tokens, for cost accounting and money budgets: input and output, and where the
 * upstream prices them apart, cached input, cache writes, reasoning and a long-context tier (lib/pricing/cost.ts
 * has the arithmetic and the fallbacks).
 */
const priceSchema = z.strictObject({
  input: z.number().nonnegative(),
  output: z.number().nonnegative(),
  cached_input: z.number().nonnegative().optional(),
  cache_write_5m: z.number().nonnegative().optional(),
  cache_write_1h: z.number().nonnegative().optional(),
  reasoning: z.number().nonnegative().optional(),
  /** Audio tokens of the prompt and of the completion, where priced apart from text (OpenAI's audio models). */
  audio_input: z.number().nonnegative().optional(),
  audio_output: z.number().nonnegative().optional(),
  /** Per 1,000 web searches the upstream ran, as the vendors price them (not per million tokens). */
  web_search_per_1k: z.number().nonnegative().optional(),
  long_context: z.strictObject({
    /** Prompt tokens above which the tier's rates apply to the whole request. */
    above: z.number().int().positive(),
    input: z.number().nonnegative(),
    output: z.number().nonnegative(),
    cached_input: z.number().nonnegative().optional(),
  }).optional(),
});

/** A content rule on an alias: deny a request matching a pattern, or redact the matches. */
const contentRuleSchema = z.strictObject({
  name: z.string().min(1).regex(/^[A-Za-z0-9._:-]+$/, "use letters, digits and . _ : -"),
  /** A JavaScript regular expression, matched against the text of every message (or embedding input). */
  pattern: z.string().min(1),
  /** Regular-expression flags; `g` is always added for redaction. */
  flags: z.string().regex(/^[imsu]*$/, "flags may be i, m, s, u").default("i"),
  action: z.enum(["deny", "redact"]),
  /** Shown to the client when a request is denied. */
  message: z.string().optional(),
  /** What a match is replaced with under `redact`. */
  replacement: z.string().default("[REDACTED]"),
});

const targetSchema = z.strictObject({
  provider: z.string().min(1),
  model: z.string().min(1),
  timeouts: timeoutsSchema.default({}),
  /** Share of traffic under `strategy: weighted` (relative to the alias's other targets). */
  weight: z.number().positive().default(1),
  /** Requests this target may have in flight at once (from this gateway); beyond it the next target is used. */
  max_in_flight: z.number().int().min(1).optional(),
  /** Extra attempts on this target after a retryable failure, before moving on to the next target. */
  retries: z.number().int().min(0).max(10).default(1),
  /**
   * The target's price; `catalog` (the default when the catalog knows the model) takes it from the price
   * catalog (lib/pricing/catalog.yaml, or `pricing.catalog`).
   */
  price: z.union([priceSchema, z.literal("catalog")]).optional(),
});

const modelSchema = z.strictObject({
  /** What the alias serves: chat completions (and every chat-form API), embeddings, or moderations. */
  type: z.enum(["chat", "embedding", "moderation"]),
  /**
   * How a request picks among targets: `fallback` tries them in order; `weighted` picks at random by weight;
   * `latency` takes the faster of two random targets by recent latency. Failed targets fall back to the rest.
   */
  strategy: z.enum(["fallback", "weighted", "latency"]).default("fallback"),
  targets: z.array(targetSchema).min(1),
  /** Shown as `owned_by` in `/v1/models`; defaults to the first target's provider name. */
  owned_by: z.string().optional(),
  /** Shown as `created` in `/v1/models` (unix seconds); defaults to the time the config was loaded. */
  created: z.number().int().nonnegative().optional(),
  description: z.string().optional(),
  /** Limits shared by every token using this alias. */
  limits: limitsSchema.optional(),
  /** Limits per end user of this alias (the request's user id), whichever token sends it. */
  end_user_limits: endUserLimitsSchema.optional(),
  /** Guardrails (of `guardrails:`) run on this alias's requests and answers, in order. */
  guardrails: guardrailRefs.optional(),
  content_rules: z.array(contentRuleSchema).default([]),
  /**
   * Refuse, with the client API's 400, any request a translated target would serve without a field the client
   * sent (the tolerance rule drops what cannot matter there and says so in `x-gateway-dropped`).
   */
  strict: z.boolean().default(false),
  /** Replays exact answers to repeated requests (lib/cache/); absent: not cached, no `x-cache` header. */
  cache: aliasCacheSchema.optional(),
});

/** A client token of the config file; the admin API checks tokens it issues with the same fields. */
export const tokenSchema = z.strictObject({
  name: unreservedName(z.string().min(1).regex(/^[A-Za-z0-9._:@-]+$/, "use letters, digits and . _ : @ -")),
  environment: z.string().min(1).default("default"),
  /** Lower-case hex SHA-256 of the token; the token itself never needs to be in the file. */
  sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, "must be 64 hex characters").optional(),
  /** The token itself, normally `${ENV_VAR}` so that the secret comes from the environment. */
  token: z.string().min(16, "must be at least 16 characters").optional(),
  /** Alias names or globs (`chat-*`) this token may use: least privilege. */
  models: z.array(z.string().min(1)).min(1),
  /** After this instant the token is refused (ISO 8601). */
  expires_at: z.union([z.iso.datetime({ offset: true }), z.iso.date()], {
    error: "expected an ISO 8601 date (2026-12-31) or date-time with offset (2026-12-31T23:59:59Z)",
  }).optional(),
  disabled: z.boolean().default(false),
  limits: limitsSchema.optional(),
  budget: budgetSchema.optional(),
  /** The team (`teams:`) whose budget, limits and model scope this token shares; at most one. */
  team: z.string().regex(TEAM_NAME_PATTERN, "a team name (letters, digits and . _ : @ -)").optional(),
  /** Limits per end user of this token's application (the request's user id). */
  end_user_limits: endUserLimitsSchema.optional(),
  /** Guardrails (of `guardrails:`) run on this token's requests and answers, after the alias's. */
  guardrails: guardrailRefs.optional(),
  /** Endpoints this token may call; all of them when absent. */
  endpoints: z.array(z.enum(ENDPOINTS)).min(1).optional(),
  /** Ceiling on max_tokens / max_completion_tokens: larger values are lowered to it, absent ones set to it. */
  max_tokens: z.number().int().min(1).optional(),
  /** `false`: this token's requests neither read nor write the response cache; or its `Cache-Control`. */
  cache: tokenCacheSchema.optional(),
});

/** Retry, backoff and outlier-ejection settings shared by every alias. */
const routingSchema = z.strictObject({
  /** First retry delay; doubles each retry, with full jitter. */
  backoff_base: timerDuration.default(100),
  backoff_max: timerDuration.default(2_000),
  /** Longest `Retry-After` honoured by waiting; a longer one moves on to the next target at once. */
  retry_after_max: timerDuration.default(5_000),
  /** Consecutive failures after which a target is skipped for `eject_cooldown`, then probed. */
  eject_after: z.number().int().min(1).default(5),
  eject_cooldown: timerDuration.default(30_000),
});

const adminTokenSchema = z.strictObject({
  name: unreservedName(z.string().min(1).regex(/^[A-Za-z0-9._:@-]+$/, "use letters, digits and . _ : @ -")),
  environment: z.string().min(1).default("default"),
  sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, "must be 64 hex characters").optional(),
  token: z.string().min(16, "must be at least 16 characters").optional(),
  expires_at: z.union([z.iso.datetime({ offset: true }), z.iso.date()], {
    error: "expected an ISO 8601 date (2026-12-31) or date-time with offset (2026-12-31T23:59:59Z)",
  }).optional(),
  disabled: z.boolean().default(false),
});

/** Where usage records go: off the request path, batched, never lost. */
const usageSchema = z.strictObject({
  /** SQLite database file for usage records; `none` keeps no database (records still go to `jsonl`/spill). */
  sqlite: z.string().min(1).default("data/usage.sqlite"),
  /** Also append every record to this JSONL file. */
  jsonl: z.string().min(1).optional(),
  /** Records that cannot be queued or stored are appended here, to be replayed, never dropped. */
  spill: z.string().min(1).default("data/usage-spill.jsonl"),
  queue_size: z.number().int().min(1).default(10_000),
  batch_size: z.number().int().min(1).default(500),
  flush_interval: timerDuration.default(1_000),
  /** Records older than this are deleted. */
  retention: duration.default(90 * 86_400_000),
});

/** Stored responses (`/v1/responses` unless `store: false`): in the usage database, else in memory. */
const responsesSchema = z.strictObject({
  /** Stored responses older than this are deleted; later reads and `previous_response_id` to them are 404. */
  retention: duration.default(30 * 86_400_000),
});

/** The whole configuration file. */
export const configSchema = z.strictObject({
  server: serverSchema.default(serverSchema.parse({})),
  routing: routingSchema.default(routingSchema.parse({})),
  usage: usageSchema.default(usageSchema.parse({})),
  responses: responsesSchema.default(responsesSchema.parse({})),
  /** The response cache's store and bounds; aliases opt in with their own `cache:`. */
  cache: cacheStoreSchema.default(cacheStoreSchema.parse({})),
  /** Where prices come from: the built-in catalog, or an operator's file of the same format. */
  pricing: pricingSchema.optional(),
  /** OpenTelemetry export of traces and GenAI metrics over OTLP; absent: none (unless OTEL_* says so). */
  telemetry: telemetrySchema.optional(),
  /** Checks on requests and answers (PII, moderation, external services), attached by name (lib/guardrails/). */
  guardrails: guardrailsSchema.default({}),
  /** Webhooks told when budgets cross thresholds, limits deny often, or targets are ejected (lib/alerts/). */
  alerts: alertsSchema.default([]),
  /** Shared counters for a fleet of replicas; absent: counters in memory (one node). */
  redis: redisSchema.optional(),
  /** Shared usage records and stored responses for a fleet; absent: SQLite (`usage.sqlite`) on one node. */
  postgres: postgresSchema.optional(),
  providers: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/, "use letters, digits, _ and -"), providerSchema),
  models: z.record(z.string(), modelSchema),
  /** Teams of tokens that share a budget, limits and a model scope; a token joins with `team: NAME`. */
  teams: z.record(
    z.string().regex(TEAM_NAME_PATTERN, "use letters, digits and . _ : @ - (64 at most)"),
    teamSchema,
  )
    .default({}),
  tokens: z.array(tokenSchema).default([]),
  /** Tokens for `/admin/*`, separate from client tokens; they cannot call the model endpoints. */
  admin_tokens: z.array(adminTokenSchema).default([]),
});

/** What an operator may write. */
export type ConfigInput = z.input<typeof configSchema>;
/** The schema's output: every default filled in. */
export type ConfigOutput = z.output<typeof configSchema>;
export type ModelConfig = z.output<typeof modelSchema>;
export type TargetConfig = z.output<typeof targetSchema>;
export type TokenConfig = z.output<typeof tokenSchema>;
export type RoutingConfig = z.output<typeof routingSchema>;
export type UsageConfig = z.output<typeof usageSchema>;
export type ResponsesConfig = z.output<typeof responsesSchema>;
export type PriceConfig = z.output<typeof priceSchema>;
export type PricingSection = z.output<typeof pricingSchema>;
export type ContentRuleConfig = z.output<typeof contentRuleSchema>;
/** An API endpoint name: what a token may be limited to, and how requests are counted. */
export type Endpoint = typeof ENDPOINTS[number];

/**
 * The endpoints that call a model, with the alias type each needs (as their routes in http/endpoints.ts): the
 * one list policy, explain and content rules read. A `chat` one reaches the policy in the chat form.
 */
export const MODEL_ENDPOINTS = {
  chat: "chat",
  responses: "chat",
  messages: "chat",
  gemini: "chat",
  embeddings: "embedding",
  moderations: "moderation",
} as const satisfies Partial<Record<Endpoint, ModelType>>;

/** Whether a request to `endpoint` reaches the policy in the chat form (chat, Responses, Messages, Gemini). */
export function isChatFormEndpoint(endpoint: Endpoint): boolean {
  return (MODEL_ENDPOINTS as Partial<Record<Endpoint, string>>)[endpoint] === "chat";
}
export type Strategy = ModelConfig["strategy"];
export type ModelType = ModelConfig["type"];

/** The models the `builtin` provider has, by alias type. */
export const BUILTIN_MODELS: Record<ModelType, readonly string[]> = {
  chat: ["echo"],
  embedding: ["hash"],
  moderation: [],
};
