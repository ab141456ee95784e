/**
 * The admin API's answers, as the console reads them (docs/admin_api.md). Only the fields the console shows.
 *
 * @module
 */

export interface ApiList<T> {
  readonly object: "list";
  readonly data: T[];
  readonly has_more: boolean;
  readonly next_cursor?: string | null;
}

export interface Limits {
  rpm?: number;
  tpm?: number;
  concurrent?: number;
}

export interface Budget {
  tokens?: number;
  cost?: number;
  period: "day" | "month";
  stop_streams?: boolean;
}

/** A token's response-cache settings: `false` (off), or `Cache-Control` directives for its requests. */
export type TokenCache = false | { no_store: boolean; no_cache: boolean; max_age?: number };

export interface Token {
  readonly id: string;
  readonly name: string;
  readonly environment: string;
  readonly description: string | null;
  readonly source: "api" | "config";
  readonly status: "active" | "disabled" | "expired" | "revoked";
  readonly models: string[];
  readonly endpoints: string[] | null;
  readonly limits: Limits | null;
  readonly budget: Budget | null;
  readonly max_tokens: number | null;
  readonly cache: TokenCache | null;
  readonly expires_at: string | null;
  readonly disabled: boolean;
  readonly created_at: string | null;
  readonly updated_at: string | null;
  readonly created_by: string | null;
  readonly rotated_at: string | null;
  readonly revoked_at: string | null;
  /** A config token has taken this stored token's name: it authenticates nowhere until renamed in the file. */
  readonly shadowed_by_config?: boolean;
  /** Only in the answers of create and rotate. */
  readonly token?: string;
  readonly previous_expires_at?: string | null;
}

export interface Totals {
  readonly requests: number;
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly cost: number;
  readonly denials: Record<string, number>;
  readonly errors: number;
  /** Answered from the response cache, and looked it up at all (hits and misses): the hit rate's parts. */
  readonly cache_hits: number;
  readonly cache_lookups: number;
  /** What the cache hits did not spend. */
  readonly saved_tokens: number;
  readonly saved_cost: number;
  /** `cost` by token class (absent from a gateway older than the split). */
  readonly cost_input?: number;
  readonly cost_cached?: number;
  readonly cost_cache_write?: number;
  readonly cost_output?: number;
  readonly cost_reasoning?: number;
  readonly cost_web_search?: number;
  readonly latency_ms: { p50: number | null; p90: number | null; p99: number | null };
}

export interface UsageReport {
  readonly totals: Totals;
  /** One page of the groups, in their keys' order. */
  readonly groups: (Totals & { key: Record<string, string | null> })[];
  /** Whether groups remain after this page; `next_offset` is the next page's `offset`. */
  readonly has_more: boolean;
  readonly next_offset: number | null;
}

export interface UsageRecord {
  readonly time: string;
  readonly request_id: string;
  readonly token: string | null;
  readonly environment: string | null;
  readonly alias: string | null;
  readonly provider: string | null;
  readonly upstream_model: string | null;
  readonly endpoint: string;
  readonly stream: boolean;
  readonly status: number;
  readonly outcome: string;
  readonly rule: string | null;
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly cost: number;
  /** `cost` by token class (absent from a gateway older than the split). */
  readonly cost_input?: number;
  readonly cost_cached?: number;
  readonly cost_cache_write?: number;
  readonly cost_output?: number;
  readonly cost_reasoning?: number;
  readonly cost_web_search?: number;
  readonly latency_ms: number;
  readonly error_code: string | null;
  /** The response cache's outcome (`hit`, `hit_semantic`, `miss`, `bypass`); null without a cache. */
  readonly cache?: string | null;
  /** The request's OpenTelemetry trace id (32 hex digits); null when telemetry was off. */
  readonly trace_id?: string | null;
  /**
   * What the guardrails did to the request (never the matched text); null or absent when none did anything
   * (or from a gateway older than guardrails).
   */
  readonly guardrails?: readonly GuardrailOutcome[] | null;
}

/** One guardrail's outcome on one phase of a request (lib/usage/record.ts). */
export interface GuardrailOutcome {
  readonly name: string;
  readonly phase: string;
  /** `deny`, `mask`, `flag`, `replace` or `error` (`pass` is not recorded). */
  readonly action: string;
  /** The kinds of content found (`email`, `api_key`, a moderation category), never the content. */
  readonly types?: readonly string[];
  /** Why the check failed, for `error`. */
  readonly error?: string;
}

export interface TargetState {
  readonly provider: string;
  readonly model: string;
  readonly weight?: number;
  readonly state: string;
  readonly in_flight: number;
  readonly consecutive_failures?: number;
  readonly ejected_until: string | number | null;
  readonly latency_ewma_ms: number | null;
  readonly failures?: number;
  readonly price?: { input: number; output: number } | null;
}

export interface AliasTargets {
  readonly alias: string;
  readonly strategy: string;
  readonly targets: TargetState[];
}

export interface AuditEntry {
  readonly id: string;
  readonly time: string;
  readonly actor: string;
  readonly action: string;
  readonly token_id: string;
  readonly token_name: string;
  readonly changes: Record<string, unknown>;
}

/** A budget as `/admin/explain` reads it; `used` and `remaining` are null when its counters cannot be read. */
export interface ExplainBudget {
  readonly rule: string;
  readonly period: string;
  readonly unit: string;
  readonly limit: number;
  readonly used: number | null;
  readonly remaining: number | null;
  readonly stop_streams?: boolean;
}

export interface Explanation {
  readonly token: { name: string; id: string; source: string; environment: string; status: string };
  readonly model: string;
  readonly endpoint: string;
  readonly allowed: boolean;
  readonly denied_by: { rule: string; message: string } | null;
  readonly checks: { rule: string; ok: boolean | null; detail?: string | null }[];
  readonly targets: TargetState[];
  readonly limits: { rule: string; limit: number; used: number | null; remaining: number | null }[];
  readonly budget: ExplainBudget | null;
  /** The budget of the token's team, judged with the token's own (absent from gateways before teams). */
  readonly team_budget?: ExplainBudget | null;
  readonly max_tokens: number | null;
  readonly content_rules: { rule: string; action: string; pattern: string; flags?: string }[];
  readonly strategy?: string;
}

export interface Readiness {
  readonly status: string;
  readonly config: string;
  readonly models: number;
  readonly reload: { ok: boolean; at: string; trigger: string; errors: number; issues: string[] } | null;
  readonly tokens?: {
    store: string;
    ok: boolean;
    error?: string | null;
    loaded_at?: string | null;
    count?: number;
  };
  /** The response cache's store, asked when `/readyz` is read; null without a cache. */
  readonly cache?: { store: string; ok: boolean } | null;
  /** Limits' and budgets' counters; absent in a worker of `serve --workers N`. */
  readonly counters?: { store: string; ok: boolean; on_failure?: string };
  /** The usage database; null without one, absent in a worker. */
  readonly usage?: { store: string; ok: boolean; spilling: boolean } | null;
}

/** A member of a team: a config token or one issued through the admin API. */
export interface TeamMember {
  readonly id: string;
  readonly name: string;
  readonly source: "config" | "api";
}

/** A budget's spend in its current period; `used` and `remaining` are null when the counters cannot be read. */
export interface Spend {
  readonly unit: "tokens" | "cost";
  readonly limit: number;
  readonly period: "day" | "month";
  readonly period_id: string;
  readonly used: number | null;
  readonly remaining: number | null;
  readonly resets_at: string;
}

/** A team of `GET /admin/teams`. */
export interface Team {
  readonly name: string;
  readonly id: string;
  readonly description: string | null;
  readonly budget: Budget | null;
  readonly limits: Limits | null;
  /** The aliases (names or globs) the team's tokens may use at most; null: no team-wide bound. */
  readonly models: string[] | null;
  readonly spend: Spend | null;
  readonly members: TeamMember[];
}

export interface TeamList {
  readonly object: "list";
  readonly data: Team[];
}

/** An alert as it was posted: its kind's fields beside `id`, `type` and `time` (lib/alerts/alerts.ts). */
export type Alert =
  & { readonly id: string; readonly type: string; readonly time: string }
  & Readonly<Record<string, unknown>>;

/** How an alert's delivery to one receiver (its index in `alerts:`, and host) goes. */
export interface AlertDelivery {
  readonly target: number;
  readonly host: string;
  readonly status: "pending" | "delivered" | "failed" | "dropped";
  readonly attempts: number;
  readonly error?: string;
}

/** `GET /admin/alerts`: this replica's most recent alerts, newest first. */
export interface AlertList {
  readonly object: "list";
  /** Whether any receiver is configured (`alerts:`). */
  readonly configured: boolean;
  readonly data: { readonly alert: Alert; readonly deliveries: AlertDelivery[] }[];
}
