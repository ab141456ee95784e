/**
 * The usage record: one per request to the API (`/v1/*`), denied and failed ones included, so that an admin
 * console can show who used what and what the policy decided. Never holds a token or prompt text.
 *
 * @module
 */
import { storableText } from "./client_text.ts";

/** What the policy may decide for a request, the one list of them (queries, metrics and admin read it). */
export const POLICY_OUTCOMES = ["allow", "deny", "modify"] as const;

/** What the policy decided for a request. */
export type PolicyOutcome = typeof POLICY_OUTCOMES[number];

/** One request's usage and policy outcome. Field names are the column names of the store. */
export interface UsageRecord {
  /** ISO 8601 time the request arrived. */
  time: string;
  request_id: string;
  /** The token's configured name; null when the request was not authenticated. */
  token: string | null;
  /**
   * The token's immutable identity (`tok_…`, or `cfg_<name>` for the config file's): what budgets are seeded by,
   * since a name can be reissued to another token. Null when unauthenticated, and in records written before
   * identities were recorded that the migration could not attribute.
   */
  token_id?: string | null;
  environment: string | null;
  /** The alias the client named, only if it exists (unknown names are not recorded, to bound cardinality). */
  alias: string | null;
  /** The provider and upstream model that answered (or last failed). */
  provider: string | null;
  upstream_model: string | null;
  /** "chat", "embeddings", "models", or "other" for unknown paths. */
  endpoint: string;
  stream: boolean;
  status: number;
  outcome: PolicyOutcome;
  /** The rule that denied or modified the request (e.g. "token.rpm", "alias.content:pii"), else null. */
  rule: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  /** True when the counts were estimated by the gateway's tokenizer because the upstream reported none. */
  tokens_estimated: boolean;
  /** Money, in the price table's currency (0 when the target has no price). */
  cost: number;
  /**
   * `cost` by class (lib/pricing/cost.ts), which add up to it: uncached input, cached input reads, cache
   * writes, output other than reasoning, reasoning, and the web searches the upstream ran. Kept apart so an
   * operator can see what prompt caching saves and what reasoning and searching cost. Optional: records written
   * before the split have 0 in each.
   */
  cost_input?: number;
  cost_cached?: number;
  cost_cache_write?: number;
  cost_output?: number;
  cost_reasoning?: number;
  cost_web_search?: number;
  latency_ms: number;
  /** Time to the first streamed chunk, for streams. */
  ttft_ms: number | null;
  attempts: number;
  error_code: string | null;
  /**
   * What the translated target that answered did not get of the request (comma-separated field paths, as in
   * the `x-gateway-dropped` header; lib/http/tolerance.ts); null when it got everything, or was native.
   */
  dropped?: string | null;
  /**
   * What the alias's response cache did: `"hit"`, `"hit_semantic"` (a similar enough earlier prompt's
   * answer), `"miss"` (looked up, not found: the upstream answered), `"bypass"` (not looked up: `no-store`, a
   * store that is down, a guardrail, a refusal before the lookup); null when the alias has no cache.
   * Optional: records written before caching have none.
   */
  cache?: string | null;
  /** Prompt + completion tokens a cache hit did not spend upstream (0 otherwise). */
  saved_tokens?: number;
  /** The money a cache hit did not spend, at the answering target's price (0 otherwise). */
  saved_cost?: number;
  /**
   * The request's OpenTelemetry trace id (32 lower-case hex), so an operator can go from a trace to its
   * record and back; null when telemetry is off. Optional: records written before tracing have none.
   */
  trace_id?: string | null;
  /**
   * The name of the request's token's team when the request was made (of the config's `teams:` or made
   * through the admin API), for people to read; null when the token had none or the request was not
   * authenticated. Optional: records written before teams have none.
   */
  team?: string | null;
  /**
   * That team's immutable identity (`tm_…` for a team made through the admin API, `team_<name>` for the
   * config file's): what its budget is seeded by and `team_id=` finds, since a deleted team's name can be
   * given to another team. Null when `team` is; records written before identities were recorded have the one
   * the migration attributed (`team_identity_migration.ts`).
   */
  team_id?: string | null;
  /**
   * What the guardrails (lib/guardrails/) did to the request, in the order they ran: each outcome's guardrail,
   * phase and action, the kinds of content it found (`types`, e.g. `["email"]`) and, for `error`, why the check
   * failed. Never the matched text. Only outcomes other than `pass` are kept; null (or absent) when no guardrail
   * did anything, and in records written before guardrails. Bounded when written
   * ({@linkcode boundedGuardrails}).
   */
  guardrails?: GuardrailOutcome[] | null;
}

/** The phases a guardrail runs in, the one list of them. */
export const GUARDRAIL_PHASES = ["input", "output"] as const;

/** What a guardrail did to a request, the one list of them. */
export const GUARDRAIL_ACTIONS = ["pass", "deny", "mask", "flag", "replace", "error"] as const;

/** One guardrail's outcome on one phase of a request, as a usage record keeps it. */
export interface GuardrailOutcome {
  /** The guardrail's name (`guardrails:` in the config). */
  name: string;
  phase: typeof GUARDRAIL_PHASES[number];
  action: typeof GUARDRAIL_ACTIONS[number];
  /** The kinds of content found (recognizer types or categories), never the content; absent when none. */
  types?: string[];
  /** Why the check failed, for `error`. */
  error?: string;
}

/** The most guardrail outcomes a record keeps, the most types each, and the longest string of them. */
export const GUARDRAIL_LIMITS = { outcomes: 16, types: 16, chars: 64 } as const;

/**
 * `outcomes` cut to {@linkcode GUARDRAIL_LIMITS} (defensive: the gateway writes few and short), with fields
 * the record does not know dropped and an unknown phase or action left out; null when none remain. What the
 * stores and the JSONL file write.
 */
export function boundedGuardrails(outcomes: unknown): GuardrailOutcome[] | null {
  if (!Array.isArray(outcomes)) return null;
  // Cut, then made storable (a cut can split a surrogate pair; PostgreSQL's `->>` refuses an escaped NUL).
  const cut = (v: string) => storableText(v.slice(0, GUARDRAIL_LIMITS.chars));
  const kept: GuardrailOutcome[] = [];
  for (const o of outcomes) {
    if (kept.length >= GUARDRAIL_LIMITS.outcomes) break;
    if (o === null || typeof o !== "object") continue;
    const { name, phase, action, types, error } = o as Record<string, unknown>;
    if (typeof name !== "string") continue;
    if (!(GUARDRAIL_PHASES as readonly unknown[]).includes(phase)) continue;
    if (!(GUARDRAIL_ACTIONS as readonly unknown[]).includes(action)) continue;
    const outcome: GuardrailOutcome = {
      name: cut(name),
      phase: phase as GuardrailOutcome["phase"],
      action: action as GuardrailOutcome["action"],
    };
    if (Array.isArray(types)) {
      outcome.types = types.filter((t): t is string => typeof t === "string").slice(0, GUARDRAIL_LIMITS.types)
        .map(cut);
    }
    if (typeof error === "string") outcome.error = cut(error);
    kept.push(outcome);
  }
  return kept.length === 0 ? null : kept;
}

/** The `cache` values that answered from the cache (what `/admin/usage` counts as `cache_hits`). */
export const CACHE_HITS = ["hit", "hit_semantic"] as const;

/** The `cache` values of requests that looked the cache up (`cache_lookups`: the hit rate's denominator). */
export const CACHE_LOOKUPS = [...CACHE_HITS, "miss"] as const;

/** How a stored column's value is coerced (both databases). */
export type ColumnKind = "text" | "text?" | "int" | "real" | "real?" | "bool" | "json?";

/** The columns of `cost` by token class that SQLite migration 10 / PostgreSQL migration 9 added. */
export const COST_CLASS_COLUMNS_V10 = [
  "cost_input",
  "cost_cached",
  "cost_cache_write",
  "cost_output",
  "cost_reasoning",
] as const satisfies readonly (keyof UsageRecord)[];

/** The columns of `cost` by class, the one list of them: they add up to `cost`. */
export const COST_CLASS_COLUMNS = [
  ...COST_CLASS_COLUMNS_V10,
  "cost_web_search",
] as const satisfies readonly (keyof UsageRecord)[];

/** Every stored column of a record, in insert order, with how its value is coerced (the PostgreSQL store's too). */
export const USAGE_COLUMNS: readonly (readonly [keyof UsageRecord & string, ColumnKind])[] = [
  ["time", "text"],
  ["request_id", "text"],
  ["token", "text?"],
  ["environment", "text?"],
  ["alias", "text?"],
  ["provider", "text?"],
  ["upstream_model", "text?"],
  ["endpoint", "text"],
  ["stream", "bool"],
  ["status", "int"],
  ["outcome", "text"],
  ["rule", "text?"],
  ["prompt_tokens", "int"],
  ["completion_tokens", "int"],
  ["tokens_estimated", "bool"],
  ["cost", "real"],
  ["latency_ms", "real"],
  ["ttft_ms", "real?"],
  ["attempts", "int"],
  ["error_code", "text?"],
  // Added by migration 5 (`ownership_migration.ts`); the columns above are migration 1's.
  ["token_id", "text?"],
  // Added by SQLite migration 6 / PostgreSQL migration 5.
  ["dropped", "text?"],
  // Added by SQLite migration 7 / PostgreSQL migration 6 (with defaults, so older rows read as uncached).
  ["cache", "text?"],
  ["saved_tokens", "int"],
  ["saved_cost", "real"],
  // Added by SQLite migration 9 / PostgreSQL migration 8.
  ["trace_id", "text?"],
  // Added by SQLite migration 10 / PostgreSQL migration 9 (default 0: older records have no split).
  ...COST_CLASS_COLUMNS_V10.map((name) => [name, "real"] as const),
  // Added by SQLite migration 11 / PostgreSQL migration 10 (NULL: older records, and tokens of no team).
  ["team", "text?"],
  // Added by SQLite migration 13 / PostgreSQL migration 12 (NULL: older records, and requests no guardrail
  // acted on). JSON text in SQLite, `json` in PostgreSQL.
  ["guardrails", "json?"],
  // Added by SQLite migration 15 / PostgreSQL migration 14 (`team_identity_migration.ts`: older records with a
  // team get the identity of the team that had the name then).
  ["team_id", "text?"],
  // Added by SQLite migration 16 / PostgreSQL migration 15 (default 0: older records priced no search).
  ["cost_web_search", "real"],
];

/** How many of {@linkcode USAGE_COLUMNS} the first migration created (later ones add the rest). */
export const USAGE_COLUMNS_V1 = 20;

/** Which records a usage query or the request log covers. */
export interface UsageFilters {
  /** ISO time, inclusive. */
  from?: string;
  /** ISO time, exclusive. */
  to?: string;
  /** A token's name: every token that had it (a revoked token's name is free for a new one). */
  token?: string;
  /** A token's id (`tok_…`, `cfg_<name>`): that token's records only, never another's of the same name. */
  token_id?: string;
  /**
   * A team's name: the records of requests the member tokens of every team that had it made (while they were
   * members); a deleted team's name is free for a new one.
   */
  team?: string;
  /** A team's id (`tm_…`, `team_<name>`): that team's records only, never another's of the same name. */
  team_id?: string;
  environment?: string;
  alias?: string;
  provider?: string;
  upstream_model?: string;
  outcome?: PolicyOutcome;
  /**
   * One rule name. A modified request may carry several rules joined by "," (`alias.content:pii,token.max_tokens`);
   * the filter matches a record when any of its rules is this one.
   */
  rule?: string;
}

/** The filters that match one column's value exactly: the admin API's parameters and the SQL's columns. */
export const USAGE_FILTER_COLUMNS = [
  "token",
  "token_id",
  "team",
  "team_id",
  "environment",
  "alias",
  "provider",
  "upstream_model",
] as const satisfies readonly (keyof UsageFilters)[];

/** Filters and grouping for usage queries (`GET /admin/usage`). */
export interface UsageQuery extends UsageFilters {
  group_by?: UsageGroupKey[];
  /** Groups per report, 1–10000 (default 1000): a grouped report is bounded (`group_page.ts`). */
  limit?: number;
  /** How many groups, in the groups' order, to skip: the previous page's `next_offset`. */
  offset?: number;
}

/** Every key usage can be grouped by, the one list of them (the admin API's parser and the SQL read it). */
export const USAGE_GROUP_KEYS = [
  "token",
  "token_id",
  "team",
  "team_id",
  "environment",
  "alias",
  "provider",
  "upstream_model",
  "outcome",
  "rule",
  "endpoint",
  "minute",
  "hour",
  "day",
] as const;

/**
 * What usage can be grouped by. Grouping by `rule` puts a record in the group of each of its rules (a request
 * modified by two rules counts in both), so the groups' requests may add up to more than the totals.
 */
export type UsageGroupKey = typeof USAGE_GROUP_KEYS[number];

/**
 * The name an identity's group says beside its key: a `token_id` group's key also has `token`, and a `team_id`
 * group's `team`, the name its records carry, so a reader can show the group by name without a second lookup
 * (a revoked token's or a deleted team's name may be no live one's, and a token or team removed from the config
 * file is in no lookup at all). The group stays the identity's: a token revoked and its name issued again are
 * two groups of one name, as are a team deleted and one made under its name. Neither a token's name nor a
 * team's ever changes, so their records carry one (should they carry several, the greatest by bytes, alike in
 * both stores); records without an identity (unauthenticated, no team) say none. Each key's label is a name no
 * other key's label has.
 */
export const USAGE_GROUP_LABELS: Readonly<Partial<Record<UsageGroupKey, UsageGroupKey>>> = {
  token_id: "token",
  team_id: "team",
};

/** A status filter of the request log: one code (`429`) or a class (`4xx`: 400-499). */
export type StatusFilter = { code: number } | { class: number };

/** A trace id as OpenTelemetry writes it (W3C trace context): 32 lower-case hex digits. */
export const TRACE_ID_PATTERN = /^[0-9a-f]{32}$/;

/** The request log's query (`GET /admin/requests`): the usage filters, a status, a trace, and a page. */
export interface RecordListQuery extends UsageFilters {
  status?: StatusFilter;
  /**
   * The records of one trace ({@linkcode TRACE_ID_PATTERN}): how an operator finds the request a trace shows.
   * Only the request log takes it: the totals of one request are the record itself.
   */
  trace_id?: string;
  /**
   * The records one guardrail acted on (an outcome of that name in `guardrails`). Only the request log takes
   * it; `/admin/usage` counts a guardrail's denials by its rule (`guardrail:<name>`).
   */
  guardrail?: string;
  /** Records per page, 1-1000 (default 100). */
  limit?: number;
  /** The `next_cursor` of the previous page: records strictly older than its last one. */
  before?: string;
}

/** One page of the request log, newest first. */
export interface RecordPage {
  data: UsageRecord[];
  has_more: boolean;
  /** What to pass as `before` for the next page; null on the last page. */
  next_cursor: string | null;
}

/** Totals over a set of records. */
export interface UsageTotals {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost: number;
  /** Denied requests by rule. */
  denials: Record<string, number>;
  /** Requests answered with a status >= 400 that were not policy denials. */
  errors: number;
  /** Requests answered from the response cache ({@linkcode CACHE_HITS}). */
  cache_hits: number;
  /** Requests that looked the cache up ({@linkcode CACHE_LOOKUPS}): the hit rate is hits / lookups. */
  cache_lookups: number;
  /** Tokens and money the cache hits did not spend. */
  saved_tokens: number;
  saved_cost: number;
  /** `cost` by class (their sums; 0 for records written before the split). */
  cost_input: number;
  cost_cached: number;
  cost_cache_write: number;
  cost_output: number;
  cost_reasoning: number;
  cost_web_search: number;
  latency_ms: { p50: number | null; p90: number | null; p99: number | null };
}

/** The answer to a usage query. */
export interface UsageReport {
  totals: UsageTotals;
  /**
   * One entry per group (empty without `group_by`), each with its key values and totals: one page of them, in
   * their keys' order.
   */
  groups: (UsageTotals & { key: Record<string, string | null> })[];
  /** Whether groups remain after this page. */
  has_more: boolean;
  /** The `offset` of the next page, or null on the last. */
  next_offset: number | null;
}
