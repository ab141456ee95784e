/**
 * `/admin/explain`: what a request from a token for an alias would meet now, judged the way the request path
 * judges it, so that an operator can answer "it doesn't work" without reproducing the request.
 *
 * The checks follow the request path's order, and `denied_by` names the first that fails with the rule a real
 * denial records: authentication (`token.status`), alias resolution (`token.models`, `model.type`), the
 * policy engine (`token.endpoints` → `alias.content:<name>` → `token.max_tokens` → concurrency → RPM → TPM
 * → `token.budget`, as engine.ts) and routing (`model.targets`). Every check is reported, not only the first
 * failing one, so that one call shows everything that stands in the way.
 *
 * Counters are read with {@linkcode CounterStore.peek}, which takes nothing: explaining never uses up a
 * limit. A limit is judged for the smallest request (one request, one token): a limit with nothing left
 * denies. Content rules depend on the text sent, so they are listed, never judged.
 *
 * @module
 */
import type { BudgetConfig, Endpoint, ModelType, PriceConfig } from "../config/schema.ts";
import type { ResolvedConfig, ResolvedModel, ResolvedToken, RoutedTarget } from "../config/types.ts";
import { GatewayError } from "../errors.ts";
import type { TargetHealthSnapshot } from "../routing/health.ts";
import { budgetCheck, budgetDenied, budgetUnit } from "./budgets.ts";
import type { Check, CheckResult, CounterStore, PeekResult } from "./counter_store.ts";
import { endpointDenied, reservationRate } from "./engine.ts";
import { CONCURRENCY_RETRY_MS, type RateCheck, rateChecks, rateDenied } from "./rate_limiter.ts";

/** The endpoints that call a model, with the alias type each needs (as their routes in http/endpoints.ts). */
export const MODEL_ENDPOINTS = {
  chat: "chat",
  responses: "chat",
  messages: "chat",
  embeddings: "embedding",
} as const satisfies Partial<Record<Endpoint, ModelType>>;

/** An endpoint that calls a model. */
export type ModelEndpoint = keyof typeof MODEL_ENDPOINTS;

/** The endpoint explained when none is named: the one an alias of this type is for. */
export function defaultEndpoint(type: ModelType): ModelEndpoint {
  return type === "embedding" ? "embeddings" : "chat";
}

/** What {@linkcode explain} needs. */
export interface ExplainInput {
  /** Tokens issued through the admin API carry their `id` and `source`; config tokens get `cfg_<name>`. */
  readonly token: ResolvedToken;
  /** The alias asked about. */
  readonly alias: string;
  readonly endpoint: ModelEndpoint;
  readonly config: Pick<ResolvedConfig, "models">;
  /** The policy engine's counters; without them (or without `peek`) limits show no numbers. */
  readonly counters: Pick<CounterStore, "peek"> | undefined;
  /** Routing's health of every target it knows (`HealthRegistry.snapshot()`). */
  readonly health: readonly TargetHealthSnapshot[];
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

/** The token's budget in the current period. */
export interface ExplainBudget {
  readonly rule: "token.budget";
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
  };
  readonly model: string;
  readonly endpoint: ModelEndpoint;
  readonly allowed: boolean;
  readonly denied_by: ExplainDenial | null;
  readonly checks: readonly ExplainCheck[];
  readonly targets: readonly ExplainTarget[];
  readonly limits: readonly ExplainLimit[];
  readonly budget: ExplainBudget | null;
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

function quoted(items: readonly string[]): string {
  return items.map((i) => `"${i}"`).join(", ");
}

/** The counters of every check, or why there are none. */
async function readCounters(
  counters: ExplainInput["counters"],
  checks: readonly Check[],
): Promise<{ peek: PeekResult | null; source: Explanation["counters"] }> {
  if (checks.length === 0) return { peek: { results: [], source: "store" }, source: { source: "store" } };
  if (!counters?.peek) return { peek: null, source: { source: "unknown" } };
  try {
    const peek = await counters.peek(checks);
    return { peek, source: { source: peek.source } };
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    return { peek: null, source: { source: "unavailable", error } };
  }
}

function targetView(target: RoutedTarget, h: TargetHealthSnapshot | undefined): ExplainTarget {
  const state = h?.state ?? "healthy";
  const inFlight = h?.in_flight ?? 0;
  const saturated = target.maxInFlight !== null && inFlight >= target.maxInFlight;
  return {
    provider: target.provider,
    model: target.model,
    state,
    ejected_until: h?.ejected_until ?? null,
    in_flight: inFlight,
    max_in_flight: target.maxInFlight,
    available: state !== "ejected" && state !== "probing" && !saturated,
    latency_ewma_ms: h?.latency_ewma_ms ?? null,
    weight: target.weight,
    price: target.price ? { input: target.price.input, output: target.price.output } : null,
  };
}

/** What a bucket has given out, as a denial message counts it (whole units, rounded up). */
function usedOf(check: Check, r: CheckResult): number {
  return check.kind === "bucket" ? Math.max(0, Math.ceil(r.used - 1e-9)) : r.used;
}

/**
 * Explains what a request from `token` for `alias` on `endpoint` would meet now; null when the alias is not
 * in the config (the caller answers 404).
 */
export async function explain(input: ExplainInput): Promise<Explanation | null> {
  const { token, alias, endpoint, now } = input;
  const model = input.config.models.get(alias);
  if (model === undefined) return null;
  const checks: ExplainCheck[] = [];
  let deniedBy: ExplainDenial | null = null;
  const judge = (rule: string, ok: boolean | null, detail: string, denial?: () => GatewayError) => {
    checks.push({ rule, ok, detail });
    if (ok === false && deniedBy === null && denial) {
      const err = denial();
      deniedBy = { rule, message: err.message, status: err.status, code: err.code };
    }
  };

  // Authentication.
  const status = input.revokedAt !== undefined ? "revoked" : tokenStatus(token, now);
  const expiry = token.expiresAt === null ? null : new Date(token.expiresAt).toISOString();
  judge(
    "token.status",
    status === "active",
    status === "expired"
      ? `expired at ${expiry}`
      : status === "revoked"
      ? `revoked at ${input.revokedAt}`
      : status === "active" && expiry
      ? `active until ${expiry}`
      : status,
    () =>
      status === "revoked"
        // A revoked secret is unknown to the gateway: the client gets the same 401 as for a made-up one.
        ? new GatewayError(
          401,
          `Token ${token.name} was revoked at ${input.revokedAt}: every request with it gets 401.`,
          { code: "invalid_api_key" },
        )
        : new GatewayError(
          401,
          status === "disabled"
            ? `Token ${token.name} is disabled: every request with it gets 401.`
            : `Token ${token.name} expired at ${expiry}: every request with it gets 401.`,
          { code: status === "disabled" ? "token_disabled" : "token_expired" },
        ),
  );

  // Alias resolution: a forbidden alias looks unknown to the client (404), a wrong type is a 400.
  const covered = token.aliases.has(alias);
  judge(
    "token.models",
    covered,
    covered
      ? `the token's models (${quoted(token.patterns)}) include ${alias}`
      : `the token's models (${quoted(token.patterns)}) do not include ${alias}`,
    () =>
      new GatewayError(
        404,
        `Token ${token.name} may not use the model ${alias}: its models are ${quoted(token.patterns)}, and ` +
          `none matches. The client gets 404 model_not_found, as for an alias that does not exist.`,
        { code: "model_not_found" },
      ),
  );
  const wanted = MODEL_ENDPOINTS[endpoint];
  judge(
    "model.type",
    model.type === wanted,
    `${alias} is a ${model.type} model; the ${endpoint} endpoint needs a ${wanted} model`,
    () =>
      new GatewayError(
        400,
        `The model ${alias} is a ${model.type} model and cannot be used with the ${endpoint} endpoint.`,
        { code: "model_not_supported" },
      ),
  );

  // The policy engine, in its order.
  const endpointOk = token.endpoints === null || token.endpoints.has(endpoint);
  judge(
    "token.endpoints",
    endpointOk,
    token.endpoints === null
      ? "the token may call every endpoint"
      : `the token may call ${[...token.endpoints].join(", ")}`,
    () => endpointDenied(token, endpoint),
  );
  const contentRules = model.contentRules.map((r): ExplainContentRule => ({
    rule: `alias.content:${r.name}`,
    action: r.action,
    pattern: r.regex.source,
    flags: r.regex.flags.replace("g", ""),
    message: r.message,
  }));
  for (const r of contentRules) {
    const what = r.action === "deny" ? "denies (400) a request" : "redacts the matches in a request";
    judge(r.rule, true, `${what} whose text matches /${r.pattern}/${r.flags}; depends on the text sent`);
  }
  const ceiling = endpoint !== "embeddings" ? token.maxTokens : null;
  if (ceiling !== null) {
    judge(
      "token.max_tokens",
      true,
      `lowers max_tokens above ${ceiling} to ${ceiling}, and sets it when absent`,
    );
  }

  // Counted limits: the smallest request (one request, one token) against what is left now.
  const rates = rateChecks(token, model, 1);
  const budget = budgetCheck(token, now);
  const counted: Check[] = rates.map((rc) => rc.check);
  if (budget) counted.push(budget.check);
  const { peek, source } = await readCounters(input.counters, counted);
  const limits: ExplainLimit[] = [];
  rates.forEach((rc, i) => {
    limits.push(limitView(rc, peek, i));
    judgeRate(judge, rc, peek, i, source);
  });
  let budgetView: ExplainBudget | null = null;
  if (budget && token.budget) {
    const i = rates.length;
    const r = peek?.results[i];
    const u = budgetUnit(token.budget)!;
    budgetView = {
      rule: "token.budget",
      period: token.budget.period,
      period_id: budget.period.id,
      unit: u.unit,
      limit: u.limit,
      used: r?.used ?? null,
      remaining: r?.remaining ?? null,
      resets_at: new Date(budget.period.end).toISOString(),
      stop_streams: token.budget.stop_streams ?? false,
      ...(u.unit === "cost" ? { reserve_rate: reservationRate(model) } : {}),
      ...(peek?.checks ? { local_limit: peek.checks[i].limit } : {}),
    };
    judge(
      "token.budget",
      r ? r.ok : null,
      r
        ? `${r.used} of ${u.limit} ${u.unit} used in ${budget.period.id}, ${r.remaining} left`
        : `not readable (${storeWord(source)})`,
      r ? () => budgetDenied(token, r, budget.period, {}) : undefined,
    );
  }

  // A shared store that is down in fail_closed refuses every limited request (503) before routing.
  if (source.source === "unavailable" && deniedBy === null) {
    deniedBy = {
      rule: "policy.store",
      message:
        `The counter store cannot be read (${source.error}): requests with a limit or a budget get 503.`,
      status: 503,
      code: "rate_limit_store_unavailable",
    };
  }

  // Routing.
  const health = new Map(input.health.map((h) => [h.key, h]));
  const targets = model.targets.map((t) => targetView(t, health.get(t.key)));
  const available = targets.filter((t) => t.available).length;
  judge(
    "model.targets",
    available > 0,
    `${available} of ${targets.length} target${targets.length === 1 ? "" : "s"} available`,
    () =>
      new GatewayError(
        503,
        `Every target of the model ${alias} is ejected or at capacity: requests get 503 until one recovers.`,
        { code: "no_target_available" },
      ),
  );

  return {
    object: "gateway.explanation",
    token: {
      name: token.name,
      id: token.id,
      source: token.source ?? "config",
      environment: token.environment,
      status,
    },
    model: alias,
    endpoint,
    allowed: deniedBy === null,
    denied_by: deniedBy,
    checks,
    targets,
    limits,
    budget: budgetView,
    max_tokens: token.maxTokens,
    content_rules: contentRules,
    strategy: model.strategy,
    counters: source,
  };
}

function storeWord(source: Explanation["counters"]): string {
  return source.source === "unavailable"
    ? `the counter store is unreachable: ${source.error}`
    : "the counter store cannot be read without taking";
}

function limitView(rc: RateCheck, peek: PeekResult | null, i: number): ExplainLimit {
  const r = peek?.results[i];
  return {
    rule: rc.rule,
    limit: rc.check.limit,
    used: r ? usedOf(rc.check, r) : null,
    remaining: r?.remaining ?? null,
    reset_ms: r?.resetMs ?? null,
    ...(peek?.checks ? { local_limit: peek.checks[i].limit } : {}),
  };
}

function judgeRate(
  judge: (rule: string, ok: boolean | null, detail: string, denial?: () => GatewayError) => void,
  rc: RateCheck,
  peek: PeekResult | null,
  i: number,
  source: Explanation["counters"],
): void {
  const r = peek?.results[i];
  if (!r) {
    judge(rc.rule, null, `not readable (${storeWord(source)})`);
    return;
  }
  const limit = peek?.checks?.[i].limit ?? rc.check.limit;
  const local = peek?.checks ? " (this replica's share while the shared store is down)" : "";
  const unit = rc.limitKind === "concurrent" ? "in flight" : rc.limitKind === "rpm" ? "requests" : "tokens";
  const detail = `${usedOf(rc.check, r)} of ${limit} ${unit} used, ${r.remaining} left${local}`;
  const wait = rc.check.kind === "concurrency" ? CONCURRENCY_RETRY_MS : r.retryAfterMs;
  // The message names the limit that decides: the local share while the shared store is down.
  const judged = peek?.checks ? { ...rc, check: peek.checks[i] as RateCheck["check"] } : rc;
  judge(rc.rule, r.ok, detail, () => rateDenied(judged, r, wait, {}));
}
