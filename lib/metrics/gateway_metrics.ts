/**
 * The gateway's metrics for `GET /metrics`, fed from the same usage record that goes to the usage store (one
 * per API request) and from each upstream attempt, so the counters always agree with the usage records.
 *
 * Names follow the OpenTelemetry GenAI semantic conventions where one fits, translated to Prometheus as the
 * OTel Prometheus exporter does (dots become underscores, unit `s` becomes a `_seconds` suffix, the `{token}`
 * annotation is dropped): `gen_ai.client.token.usage` → `gen_ai_client_token_usage`,
 * `gen_ai.client.operation.duration` → `gen_ai_client_operation_duration_seconds`,
 * `gen_ai.server.time_to_first_token` → `gen_ai_server_time_to_first_token_seconds`; attributes
 * `gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.provider.name`, `gen_ai.token.type` and
 * `error.type` become the labels of the same names with underscores. Their bucket boundaries are the ones
 * the conventions advise. What the conventions do not cover (requests by status and policy outcome, denials,
 * cost, upstream attempts, streams in flight) is under `gateway_*`.
 *
 * Cardinality stays bounded: alias, provider and rule are configured names (the caller guarantees it; null
 * becomes ""), status, outcome and endpoint are small enums, and error codes, which may come from upstreams,
 * are limited to a known list plus the first few distinct others; anything past that is `_OTHER` (the
 * conventions' fallback value for `error.type`). Each metric also has a hard cap on its label sets.
 *
 * @module
 */
import type { AttemptRecord } from "../routing/route.ts";
import { ENDPOINT_LABELS, type GenAiOperation, generatesOutput } from "../http/endpoints.ts";
import { POLICY_OUTCOMES, type UsageRecord } from "../usage/record.ts";
import { BoundedValues, ERROR_CODE_SHAPE, OTHER } from "./bounded_values.ts";
import { CacheMetrics } from "./cache_metrics.ts";
import { type Counter, type Gauge, type Histogram, PROMETHEUS_CONTENT_TYPE, Registry } from "./registry.ts";

/** The label value for an error code or name past the bounds (OTel's fallback value for `error.type`). */
export { OTHER };

// deno-fmt-ignore
/** `gen_ai.client.token.usage`'s advised buckets, in tokens. */
export const TOKEN_BUCKETS: readonly number[] = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

// deno-fmt-ignore
/** `gen_ai.client.operation.duration`'s advised buckets, in seconds; also used for upstream attempts. */
export const DURATION_BUCKETS: readonly number[] = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

// deno-fmt-ignore
/** `gen_ai.server.time_to_first_token`'s advised buckets, in seconds. */
export const TTFT_BUCKETS: readonly number[] = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/**
 * The classes of `gateway_cost_by_class_total`'s `class` label (token classes, and web searches), each with the usage record's column that
 * holds its cost (lib/pricing/cost.ts's breakdown; the columns add up to `cost`).
 */
export const COST_CLASSES = [
  ["input", "cost_input"],
  ["cached_input", "cost_cached"],
  ["cache_write", "cost_cache_write"],
  ["output", "cost_output"],
  ["reasoning", "cost_reasoning"],
  ["web_search", "cost_web_search"],
] as const satisfies readonly (readonly [string, keyof UsageRecord])[];

/** The gateway's own error codes: always kept as label values, without using up the cap on others. */
export const KNOWN_ERROR_CODES: readonly string[] = [
  "invalid_request_error",
  "invalid_api_key",
  "token_disabled",
  "token_expired",
  "model_not_found",
  "model_not_supported",
  "unknown_url",
  "method_not_allowed",
  "request_too_large",
  "unsupported_media_type",
  "rate_limit_exceeded",
  "content_filter",
  "upstream_error",
  "upstream_auth_error",
  "upstream_timeout",
  "upstream_overloaded",
  "no_target_available",
  "client_closed_request",
  "internal_error",
  "worker_failed",
];

/** Limits on label values that do not come from the config. */
export interface GatewayMetricsOptions {
  /** Distinct error codes kept besides {@link KNOWN_ERROR_CODES} (default 50); later ones are `_OTHER`. */
  maxErrorCodes?: number;
  /**
   * Distinct alias, provider and rule names kept per kind (default 1,000): a safety net, since the caller
   * already passes only configured names; past it, `_OTHER`.
   */
  maxNames?: number;
  /** Hard cap on label sets per metric (default 10,000); see `MetricOptions.maxSeries`. */
  maxSeries?: number;
}

const ENDPOINTS: ReadonlySet<string> = new Set(ENDPOINT_LABELS);
const OUTCOMES: ReadonlySet<string> = new Set(POLICY_OUTCOMES);

/**
 * The operation of a record whose caller names none: the one every request of its endpoint asks, for the
 * endpoints that serve a single one (the semantic cache's own embedding call records `embeddings`). Any other
 * endpoint serves requests that ask no model too (a token count, a stored response), so only its route can tell.
 */
function endpointOperation(endpoint: string): GenAiOperation | null {
  return endpoint === "chat" ? "chat" : endpoint === "embeddings" ? "embeddings" : null;
}

function statusLabel(status: number): string {
  return Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : OTHER;
}

/** A duration in ms as seconds, or null when it is not a usable number. */
function seconds(ms: number | null): number | null {
  return typeof ms === "number" && Number.isFinite(ms) && ms >= 0 ? ms / 1000 : null;
}

/** A count or amount for a counter: finite and positive, else nothing to add. */
function amount(n: number): number {
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? n : 0;
}

/**
 * The gateway's metrics. One instance per process (it outlives config reloads, so counters never reset);
 * the request path calls {@link recordRequest} once per finished API request and {@link recordAttempt} per
 * upstream attempt, streams call {@link streamStarted}/{@link streamEnded}, and `GET /metrics` answers with
 * {@link render} and {@link contentType}.
 */
export class GatewayMetrics {
  /** The registry behind these metrics; other parts of the gateway may register their own metrics on it. */
  readonly registry = new Registry();
  /** The `Content-Type` for {@link render}'s output. */
  readonly contentType = PROMETHEUS_CONTENT_TYPE;

  readonly requests: Counter<readonly ["endpoint", "alias", "provider", "status", "outcome"]>;
  readonly denials: Counter<readonly ["rule"]>;
  readonly modifications: Counter<readonly ["rule"]>;
  readonly guardrails: Counter<readonly ["guardrail", "phase", "action"]>;
  readonly tokens: Counter<readonly ["alias", "provider", "type"]>;
  readonly cost: Counter<readonly ["alias", "provider"]>;
  readonly costByClass: Counter<readonly ["alias", "provider", "class"]>;
  readonly tokenUsage: Histogram<
    readonly ["gen_ai_operation_name", "gen_ai_request_model", "gen_ai_provider_name", "gen_ai_token_type"]
  >;
  readonly operationDuration: Histogram<
    readonly ["gen_ai_operation_name", "gen_ai_request_model", "gen_ai_provider_name", "error_type"]
  >;
  readonly timeToFirstToken: Histogram<
    readonly ["gen_ai_operation_name", "gen_ai_request_model", "gen_ai_provider_name"]
  >;
  readonly upstreamDuration: Histogram<readonly ["provider"]>;
  readonly upstreamFailures: Counter<readonly ["provider", "outcome"]>;
  readonly streamsInFlight: Gauge<readonly []>;
  readonly cache: CacheMetrics;

  readonly #errorCodes: BoundedValues;
  readonly #aliases: BoundedValues;
  readonly #providers: BoundedValues;
  readonly #rules: BoundedValues;

  constructor(options: GatewayMetricsOptions = {}) {
    const maxNames = options.maxNames ?? 1000;
    this.#errorCodes = new BoundedValues(options.maxErrorCodes ?? 50, KNOWN_ERROR_CODES, ERROR_CODE_SHAPE);
    this.#aliases = new BoundedValues(maxNames);
    this.#providers = new BoundedValues(maxNames);
    this.#rules = new BoundedValues(maxNames);
    const opts = { maxSeries: options.maxSeries ?? 10_000 };
    const r = this.registry;
    this.requests = r.counter(
      "gateway_requests_total",
      "API requests by endpoint, model alias, provider that answered (or last failed), HTTP status and policy outcome.",
      ["endpoint", "alias", "provider", "status", "outcome"],
      opts,
    );
    this.denials = r.counter(
      "gateway_denials_total",
      "Requests denied by the policy, by rule.",
      ["rule"],
      opts,
    );
    this.modifications = r.counter(
      "gateway_policy_modifications_total",
      "Requests modified by the policy, by rule.",
      ["rule"],
      opts,
    );
    this.guardrails = r.counter(
      "gateway_guardrail_outcomes_total",
      "Guardrail outcomes other than a clean pass, by guardrail, phase (input, output) and action (deny, mask, " +
        "flag, replace, error).",
      ["guardrail", "phase", "action"],
      opts,
    );
    this.tokens = r.counter(
      "gateway_tokens_total",
      "Tokens by alias, provider and type (input = prompt, output = completion), as in the usage records.",
      ["alias", "provider", "type"],
      opts,
    );
    this.cost = r.counter(
      "gateway_cost_total",
      "Cost in the price table's currency by alias and provider, as in the usage records.",
      ["alias", "provider"],
      opts,
    );
    this.costByClass = r.counter(
      "gateway_cost_by_class_total",
      "Cost in the price table's currency by alias, provider and token class (input = uncached input, " +
        "cached_input = cache reads, cache_write, output = output other than reasoning, reasoning), as in the " +
        "usage records' cost_* columns; the classes add up to gateway_cost_total.",
      ["alias", "provider", "class"],
      opts,
    );
    this.tokenUsage = r.histogram(
      "gen_ai_client_token_usage",
      "Tokens per GenAI request (OTel gen_ai.client.token.usage; unit {token}).",
      ["gen_ai_operation_name", "gen_ai_request_model", "gen_ai_provider_name", "gen_ai_token_type"],
      TOKEN_BUCKETS,
      opts,
    );
    this.operationDuration = r.histogram(
      "gen_ai_client_operation_duration_seconds",
      "Duration of GenAI requests through the gateway, failed and denied ones included (OTel gen_ai.client.operation.duration).",
      ["gen_ai_operation_name", "gen_ai_request_model", "gen_ai_provider_name", "error_type"],
      DURATION_BUCKETS,
      opts,
    );
    this.timeToFirstToken = r.histogram(
      "gen_ai_server_time_to_first_token_seconds",
      "Time to the first streamed chunk (OTel gen_ai.server.time_to_first_token).",
      ["gen_ai_operation_name", "gen_ai_request_model", "gen_ai_provider_name"],
      TTFT_BUCKETS,
      opts,
    );
    this.upstreamDuration = r.histogram(
      "gateway_upstream_duration_seconds",
      "Duration of each upstream attempt until its answer (or failure), by provider.",
      ["provider"],
      DURATION_BUCKETS,
      opts,
    );
    this.upstreamFailures = r.counter(
      "gateway_upstream_failures_total",
      "Failed upstream attempts by provider and outcome (error code or status).",
      ["provider", "outcome"],
      opts,
    );
    this.streamsInFlight = r.gauge("gateway_streams_in_flight", "Streaming responses now open.", [], opts);
    this.cache = new CacheMetrics(r, opts);
  }

  /** The bounded label value for an error code or attempt outcome: "" for none, `_OTHER` past the bounds. */
  errorLabel(code: string | null): string {
    return code === null || code === "" ? "" : this.#errorCodes.get(code);
  }

  /**
   * Counts one finished API request; `record` is the one written to the usage store, `operation` the GenAI
   * operation it asked of a model (`genAiOperationOf` of its route, lib/http/endpoints.ts), which the gen_ai_*
   * histograms count it under; null for one that asked none. Passed beside the record, not in it: the route
   * tells it (Gemini's one route serves generations, embeddings and counts), the record's endpoint does not.
   */
  recordRequest(record: UsageRecord, operation = endpointOperation(record.endpoint)): void {
    const alias = record.alias === null ? "" : this.#aliases.get(record.alias);
    const provider = record.provider === null ? "" : this.#providers.get(record.provider);
    const endpoint = ENDPOINTS.has(record.endpoint) ? record.endpoint : "other";
    const outcome = OUTCOMES.has(record.outcome) ? record.outcome : OTHER;
    const status = statusLabel(record.status);
    this.requests.inc([endpoint, alias, provider, status, outcome]);
    if (record.cache) this.cache.recordLookup(alias, record.cache);

    if (record.outcome === "deny" || record.outcome === "modify") {
      const rule = record.rule === null ? "" : this.#rules.get(record.rule);
      (record.outcome === "deny" ? this.denials : this.modifications).inc([rule]);
    }
    for (const g of record.guardrails ?? []) {
      this.guardrails.inc([this.#rules.get(g.name), g.phase, g.action]);
    }

    const input = amount(record.prompt_tokens);
    const output = amount(record.completion_tokens);
    if (input > 0) this.tokens.inc([alias, provider, "input"], input);
    if (output > 0) this.tokens.inc([alias, provider, "output"], output);
    const cost = amount(record.cost);
    if (cost > 0) this.cost.inc([alias, provider], cost);
    for (const [label, column] of COST_CLASSES) {
      const part = amount(record[column] ?? 0);
      if (part > 0) this.costByClass.inc([alias, provider, label], part);
    }

    if (operation === null) return;
    // Token usage only when the upstream (or the estimator) reported some: OTel says not to report otherwise.
    if (input + output > 0) {
      this.tokenUsage.observe([operation, alias, provider, "input"], input);
      if (generatesOutput(operation)) this.tokenUsage.observe([operation, alias, provider, "output"], output);
    }
    const duration = seconds(record.latency_ms);
    if (duration !== null) {
      // error.type: the error code, else the status for a failure without one, else "" (no error).
      const errorType = record.error_code !== null
        ? this.errorLabel(record.error_code)
        : record.status >= 400
        ? status
        : "";
      this.operationDuration.observe([operation, alias, provider, errorType], duration);
    }
    const ttft = record.stream ? seconds(record.ttft_ms) : null;
    if (ttft !== null) this.timeToFirstToken.observe([operation, alias, provider], ttft);
  }

  /** Counts one upstream attempt (from routing's attempt list). */
  recordAttempt(attempt: AttemptRecord): void {
    const provider = this.#providers.get(attempt.provider);
    const duration = seconds(attempt.latency_ms);
    if (duration !== null) this.upstreamDuration.observe([provider], duration);
    if (attempt.outcome !== "ok") this.upstreamFailures.inc([provider, this.errorLabel(attempt.outcome)]);
  }

  /** A streaming response opened; pair every call with one {@link streamEnded} (e.g. in `finally`). */
  streamStarted(): void {
    this.streamsInFlight.inc([]);
  }

  /** A streaming response closed (finished, failed or cancelled). Never lets the gauge go below zero. */
  streamEnded(): void {
    if (this.streamsInFlight.get([]) > 0) this.streamsInFlight.dec([]);
  }

  /** The metrics in the Prometheus text format 0.0.4, for `GET /metrics`. */
  render(): string {
    this.cache.refresh();
    return this.registry.render();
  }
}
