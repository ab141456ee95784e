/**
 * The shape of `/admin/explain`'s answer and of what it is asked: the admin API's contract
 * (docs/admin_api.md), kept apart from the checks in explain.ts that fill it, so the contract reads in one
 * place and the checks are not buried under it.
 *
 * @module
 */
import type {
  BudgetConfig,
  EndUserLimitsConfig,
  MODEL_ENDPOINTS,
  ModelType,
  PriceConfig,
} from "../config/schema.ts";
import type { ResolvedConfig, ResolvedModel, ResolvedToken } from "../config/types.ts";
import type { HealthRegistry, TargetHealthSnapshot } from "../routing/health.ts";
import type { CounterStore } from "./counter_store.ts";

/** The endpoints that call a model, with the alias type each needs (defined beside the endpoint names). */
export { MODEL_ENDPOINTS } from "../config/schema.ts";

/** An endpoint that calls a model. */
export type ModelEndpoint = keyof typeof MODEL_ENDPOINTS;

/** The endpoint explained when none is named: the one an alias of this type is for. */
export function defaultEndpoint(type: ModelType): ModelEndpoint {
  if (type === "embedding") return "embeddings";
  return type === "moderation" ? "moderations" : "chat";
}

/** What `explain` (explain.ts) needs. */
export interface ExplainInput {
  /** Tokens issued through the admin API carry their `id` and `source`; config tokens get `cfg_<name>`. */
  readonly token: ResolvedToken;
  /** The alias asked about. */
  readonly alias: string;
  readonly endpoint: ModelEndpoint;
  readonly config: Pick<ResolvedConfig, "models">;
  /** The policy engine's counters; without them (or without `peek`) limits show no numbers. */
  readonly counters: Pick<CounterStore, "peek"> | undefined;
  /**
   * Routing's health registry: every target's state, and its places taken (across every worker when they share
   * `max_in_flight`, so saturation is judged as the next request's `acquire` would judge it).
   */
  readonly health: Pick<HealthRegistry, "snapshot" | "inFlight">;
  /** The engine's clock (epoch ms): the budget period and expiry are judged at this instant. */
  readonly now: number;
  /** When a token issued through the admin API was revoked (ISO): it then authenticates nowhere. */
  readonly revokedAt?: string;
}

/** One check, in the request path's order. `ok` is null when its counter could not be read. */
export interface ExplainCheck {
  readonly rule: string;
  readonly ok: boolean | null;
  readonly detail: string;
}

/** The first check that fails, and what the client would get. */
export interface ExplainDenial {
  readonly rule: string;
  readonly message: string;
  /** The HTTP status and error code the client would see. */
  readonly status: number;
  readonly code: string | null;
}

/** One target of the alias with its health and price. */
export interface ExplainTarget {
  readonly provider: string;
  readonly model: string;
  readonly state: TargetHealthSnapshot["state"];
  readonly ejected_until: string | null;
  readonly in_flight: number;
  readonly max_in_flight: number | null;
  /** Whether routing would try it now (not ejected, not being probed, not at `max_in_flight`). */
  readonly available: boolean;
  readonly latency_ewma_ms: number | null;
  readonly weight: number;
  /** Per million tokens, or null when unpriced. */
  readonly price: PriceConfig | null;
}

/** A rate limit with what is left of it. */
export interface ExplainLimit {
  readonly rule: string;
  readonly limit: number;
  /** Requests in flight, or what the bucket has given out and not yet refilled; null if unreadable. */
  readonly used: number | null;
  readonly remaining: number | null;
  /** Milliseconds until the bucket is full again (0 for concurrency). */
  readonly reset_ms: number | null;
  /** While the shared store is down (`fail_open`): this replica's share of the limit, which decides. */
  readonly local_limit?: number;
}

/** The token's (or its team's) budget in the current period. */
export interface ExplainBudget {
  readonly rule: "token.budget" | "team.budget";
  readonly period: BudgetConfig["period"];
  /** "2026-11" or "2026-11-24". */
  readonly period_id: string;
  readonly unit: "tokens" | "cost";
  readonly limit: number;
  readonly used: number | null;
  readonly remaining: number | null;
  readonly resets_at: string;
  readonly stop_streams: boolean;
  /** Money budgets: the rate (per million tokens) a request's estimate is reserved at, the dearest target's. */
  readonly reserve_rate?: number;
  readonly local_limit?: number;
}

/** A content rule of the alias. */
export interface ExplainContentRule {
  readonly rule: string;
  readonly action: "deny" | "redact";
  readonly pattern: string;
  readonly flags: string;
  readonly message: string | null;
}

/** The answer of `GET /admin/explain`. */
export interface Explanation {
  readonly object: "gateway.explanation";
  readonly token: {
    readonly name: string;
    readonly id: string;
    readonly source: "api" | "config";
    readonly environment: string;
    readonly status: TokenStatus;
    /** The team it belongs to (whose limits are among `limits` and whose budget is `team_budget`), or null. */
    readonly team: string | null;
  };
  readonly model: string;
  readonly endpoint: ModelEndpoint;
  readonly allowed: boolean;
  readonly denied_by: ExplainDenial | null;
  readonly checks: readonly ExplainCheck[];
  readonly targets: readonly ExplainTarget[];
  readonly limits: readonly ExplainLimit[];
  readonly budget: ExplainBudget | null;
  /** The token's team's budget, shared with the team's other tokens, or null. */
  readonly team_budget: ExplainBudget | null;
  /**
   * Limits per end user that apply, as configured on the alias and on the token (their counters are per user,
   * so they are not read here).
   */
  readonly end_user_limits: {
    readonly alias: EndUserLimitsConfig | null;
    readonly token: EndUserLimitsConfig | null;
  };
  /** The guardrails a request meets (the alias's, then the token's); they depend on the text, so are not judged. */
  readonly guardrails: readonly {
    readonly rule: string;
    readonly phases: readonly string[];
    readonly action: string;
    readonly kind: "pii" | "external";
    readonly timeout_ms?: number;
    readonly on_failure?: string;
    readonly entities?: readonly string[] | null;
  }[];
  readonly max_tokens: number | null;
  readonly content_rules: readonly ExplainContentRule[];
  readonly strategy: ResolvedModel["strategy"];
  /**
   * Where the numbers of `limits` and `budget` come from: the counter store, the local limiter of a shared
   * store that is down (`fail_open`), nowhere because it is down (`fail_closed`: limited requests get 503), or
   * nowhere because the store cannot be read without taking.
   */
  readonly counters: {
    readonly source: "store" | "local" | "unavailable" | "unknown";
    readonly error?: string;
  };
}

/** A token's status as the admin API shows it (a revoked token no longer reaches the request path). */
export type TokenStatus = "active" | "disabled" | "expired" | "revoked";

/** The status authentication would find. */
export function tokenStatus(token: ResolvedToken, now: number): TokenStatus {
  if (token.disabled) return "disabled";
  if (token.expiresAt !== null && now >= token.expiresAt) return "expired";
  return "active";
}
