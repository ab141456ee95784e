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
 * Counters are read with `CounterStore.peek` (explain_counters.ts), which takes nothing: explaining never uses
 * up a limit. A limit is judged for the smallest request (one request, one token): a limit with nothing left
 * denies. Content rules depend on the text sent, so they are listed, never judged. The answer's shape is in
 * explanation.ts.
 *
 * @module
 */
import type { RoutedTarget } from "../config/types.ts";
import { GatewayError } from "../errors.ts";
import type { TargetHealthSnapshot } from "../routing/health.ts";
import { budgetAmount, ownerBudgetCheck, ownerBudgetDenied, tokenBudgetOwners } from "./budgets.ts";
import type { Check } from "./counter_store.ts";
import { endpointDenied, reservationRate } from "./engine.ts";
import { type Judge, judgeRate, limitView, readCounters, storeWord } from "./explain_counters.ts";
import {
  type ExplainBudget,
  type ExplainCheck,
  type ExplainContentRule,
  type ExplainDenial,
  type ExplainInput,
  type ExplainLimit,
  type ExplainTarget,
  type Explanation,
  MODEL_ENDPOINTS,
  tokenStatus,
} from "./explanation.ts";
import { rateChecks } from "./rate_limiter.ts";

function quoted(items: readonly string[]): string {
  return items.map((i) => `"${i}"`).join(", ");
}

function targetView(
  target: RoutedTarget,
  h: TargetHealthSnapshot | undefined,
  inFlight: number,
): ExplainTarget {
  const state = h?.state ?? "healthy";
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
  const judge: Judge = (rule, ok, detail, denial) => {
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
  // The engine applies the ceiling to chat-form requests only (not embeddings or moderations).
  const ceiling = MODEL_ENDPOINTS[endpoint] === "chat" ? token.maxTokens : null;
  if (ceiling !== null) {
    judge(
      "token.max_tokens",
      true,
      `lowers max_tokens above ${ceiling} to ${ceiling}, and sets it when absent`,
    );
  }

  // Counted limits: the smallest request (one request, one token) against what is left now. A budget is judged
  // for that token as the engine would reserve it: a money budget with less left than one token's reservation
  // denies every request, so it must not read as allowed (judged for nothing, any remainder above 0 passed).
  const rates = rateChecks(token, model, 1);
  const smallest = { tokens: 1, cost: reservationRate(model) / 1_000_000 };
  const budgets = tokenBudgetOwners(token).flatMap((o) => ownerBudgetCheck(o, now, smallest) ?? []);
  const counted: Check[] = rates.map((rc) => rc.check);
  for (const b of budgets) counted.push(b.check);
  const { peek, source } = await readCounters(input.counters, counted);
  const limits: ExplainLimit[] = [];
  rates.forEach((rc, i) => {
    limits.push(limitView(rc, peek, i));
    judgeRate(judge, rc, peek, i, source);
  });
  const budgetViews = budgets.map((budget, j) => {
    const i = rates.length + j;
    const r = peek?.results[i];
    const { owner, unit } = budget;
    const rule = `${owner.scope}.budget` as ExplainBudget["rule"];
    const limit = budget.check.limit;
    judge(
      rule,
      r ? r.ok : null,
      r
        ? `${budgetAmount(r.used)} of ${budgetAmount(limit)} ${unit} used in ${budget.period.id}, ${
          budgetAmount(r.remaining)
        } left`
        : `not readable (${storeWord(source)})`,
      r ? () => ownerBudgetDenied(owner, r, budget.period, {}) : undefined,
    );
    return {
      rule,
      period: owner.budget.period,
      period_id: budget.period.id,
      unit,
      limit,
      used: r?.used ?? null,
      remaining: r?.remaining ?? null,
      resets_at: new Date(budget.period.end).toISOString(),
      stop_streams: owner.budget.stop_streams ?? false,
      ...(unit === "cost" ? { reserve_rate: reservationRate(model) } : {}),
      ...(peek?.checks ? { local_limit: peek.checks[i].limit } : {}),
    } satisfies ExplainBudget;
  });
  const budgetView = budgetViews.find((b) => b.rule === "token.budget") ?? null;
  const teamBudgetView = budgetViews.find((b) => b.rule === "team.budget") ?? null;

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
  const health = new Map(input.health.snapshot().map((h) => [h.key, h]));
  const targets = model.targets.map((t) => targetView(t, health.get(t.key), input.health.inFlight(t)));
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
      team: token.team?.name ?? null,
    },
    model: alias,
    endpoint,
    allowed: deniedBy === null,
    denied_by: deniedBy,
    checks,
    targets,
    limits,
    budget: budgetView,
    team_budget: teamBudgetView,
    end_user_limits: {
      alias: model.endUserLimits ?? null,
      token: token.endUserLimits ?? null,
    },
    // The alias's guardrails, then the token's, as a request meets them; they judge the text sent, so are
    // listed, not judged (docs/guardrails.md).
    guardrails: [...(model.guardrails ?? []), ...(token.guardrails ?? [])].map((g) => ({
      rule: `guardrail:${g.name}`,
      phases: [...g.phases],
      action: g.action,
      kind: g.service ? "external" : "pii",
      ...(g.service ? { timeout_ms: g.timeoutMs, on_failure: g.onFailure } : { entities: g.pii }),
    })),
    max_tokens: token.maxTokens,
    content_rules: contentRules,
    strategy: model.strategy,
    counters: source,
  };
}
