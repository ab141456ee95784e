/**
 * The policy engine: decides for every API request whether it may go ahead (allow), may go ahead changed
 * (modify: a content rule redacted it, or the max_tokens ceiling lowered it), or is refused (deny, thrown as
 * a {@linkcode PolicyDenied} in OpenAI's error shape), and keeps the counters of rate limits and budgets.
 *
 * Rules are judged in this order, and a denial names the first that fails:
 * `token.endpoints` → `alias.content:<name>` → `token.max_tokens` (modifies only) → `token.concurrent`,
 * `team.concurrent`, `alias.concurrent` → `token.rpm`, `team.rpm`, `alias.rpm`, `end_user.rpm` → the same
 * for TPM → `token.budget`, `team.budget`, `end_user.budget`.
 *
 * The counted limits (concurrency, RPM, TPM, budgets) of the token, its team, the alias and the end user are
 * checked and taken in one atomic {@linkcode CounterStore.reserve}: a denied request takes nothing from any
 * counter, which is what makes a limit of N let exactly N of many concurrent requests through, and a team
 * budget shared by many tokens (on many replicas sharing Redis) as exact as a token's own.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import {
  budgetSpentKey,
  type OwnedBudgetCheck,
  ownerBudgetCheck,
  ownerBudgetDenied,
  reservedSettlement,
  spentSettlement,
  tokenBudgetOwners,
} from "./budgets.ts";
import { endUserBudgetOwner, endUserScopes, EndUserTracker, seenUsers } from "./end_users.ts";
import { applyContentRules } from "./content_rules.ts";
import type {
  Check,
  CounterStore,
  PeriodCheck,
  PeriodDelta,
  ReserveResult,
  SeenUser,
  SettleOps,
} from "./counter_store.ts";
import { PolicyDenied } from "./denied.ts";
import { applyMaxTokensCeiling } from "./max_tokens.ts";
import { isChatFormEndpoint } from "../config/schema.ts";
import { denialWaitMs, type RateCheck, rateChecks, rateDenied, rateStates } from "./rate_limiter.ts";
import { rateLimitHeaders } from "./ratelimit_headers.ts";
import { streamAllowance } from "./stream_allowance.ts";
import type { Admission, PolicyRequest } from "./types.ts";

export { PolicyDenied } from "./denied.ts";
export { budgetPeriod, seedBudget } from "./budgets.ts";
export type { CounterStore } from "./counter_store.ts";
export { createMemoryCounterStore } from "./memory_counter_store.ts";

/** Admits requests; shared by every request and kept across config reloads (the counters live in the store). */
export interface PolicyEngine {
  /** Admits a request, possibly changing its body in place, or throws a {@linkcode PolicyDenied}. */
  admit(req: PolicyRequest): Promise<Admission>;
  /**
   * The counters it decides on and its clock, so that `/admin/explain` can read what is left of each limit
   * and budget ({@linkcode CounterStore.peek}, which takes nothing) in the budget period the engine is in.
   * Optional: a stand-in engine in a test need not have them.
   */
  readonly counters?: CounterStore;
  readonly now?: () => number;
  /**
   * The end users tracked under `end_user_limits` (bounded by each block's `max_users`); none when the store
   * has them tracked by the counters' owner ({@linkcode CounterStore.seen}).
   */
  readonly endUsers?: EndUserTracker;
}

/** Options of {@linkcode createPolicyEngine}. */
export interface PolicyEngineOptions {
  /** The clock for budget periods (epoch ms); give the store the same one. */
  now?: () => number;
  /** Called with a store failure while settling (settling never throws); default: ignored. */
  onError?: (err: unknown) => void;
  /**
   * Called after a request's budgets were settled, with each budget its real usage was added to (alerts watch
   * spend from here). Off the request path: the client has its answer by then. Setting it also makes the
   * engine keep each budget's settled spend ({@linkcode budgetSpentKey}), added in the same settlement: the
   * budget's counter holds the estimates of requests still running too, so it cannot say what was spent.
   */
  onBudgetSettled?: (budgets: readonly OwnedBudgetCheck[]) => void;
  /**
   * Called with every denial by a counted limit or budget (alerts count them), with who was denied and, for a
   * budget's denial, the budget.
   */
  onDenied?: (denial: PolicyDenied, owner: string, detail: DenialDetail) => void;
  /**
   * The counters that what these hooks feed keeps beside a budget (alerts' threshold claims, per budget and
   * percent: lib/alerts/policy_hooks.ts). An end user forgotten under `max_users` takes them along with its
   * budget's counter: a client inventing a user per request would otherwise leave each one's claims in the
   * counter store until the period ends, however few users `max_users` tracks.
   */
  budgetCompanions?: (budget: PeriodCheck) => readonly Check[];
}

/** What {@linkcode PolicyEngineOptions.onDenied} is told besides the denial and its owner's name. */
export interface DenialDetail {
  /**
   * The key of the counter that denied: who was denied, by identity (a token's id, a user's key), never by
   * the name in messages, which can be renamed or cut short (an end user's long id).
   */
  readonly key: string;
  /** The budget that denied, for a budget's denial. */
  readonly budget?: OwnedBudgetCheck;
}

/** The 403 for an endpoint outside the token's `endpoints`. */
export function endpointDenied(token: ResolvedToken, endpoint: string): PolicyDenied {
  return new PolicyDenied(
    403,
    `This token (${token.name}) is not allowed to call the ${endpoint} endpoint.`,
    "token.endpoints",
    { type: "permission_error", code: "endpoint_not_allowed" },
  );
}

/**
 * The rate (per million tokens) at which a money budget reserves a request's estimate: the dearest per-token
 * rate among the alias's targets — every rate settling may charge a token at (input, output, cache writes,
 * reasoning and audio where priced apart, a long-context tier's), since the target, the split of the tokens
 * into those classes and the prompt's size are not known yet; a reservation at any lower rate could be short
 * (1,000 audio tokens at gpt-4o-audio's $80/M reserved at its $10/M text output let two requests spend six
 * times a budget). Web searches are priced per call, not per token, and are not in it. 0 when no target has a
 * price.
 */
export function reservationRate(model: ResolvedModel): number {
  let rate = 0;
  for (const { price } of model.targets) {
    if (!price) continue;
    const { web_search_per_1k: _perCall, long_context: tier, ...perToken } = price;
    for (const r of Object.values(perToken)) if (r !== undefined && r > rate) rate = r;
    if (tier) rate = Math.max(rate, tier.input, tier.output, tier.cached_input ?? 0);
  }
  return rate;
}

/**
 * A request's estimated cost for a money budget: its estimated tokens at {@linkcode reservationRate}. An
 * over-estimate only holds back budget until the request settles; 0 when no target has a price.
 */
function estimatedCost(model: ResolvedModel | undefined, tokens: number): number {
  if (!model || !(tokens > 0)) return 0;
  return (tokens * reservationRate(model)) / 1_000_000;
}

function nonNegative(n: number): number {
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/**
 * What the store took for each check: the amounts of the checks as it judged them when it says (the local
 * limiter of `fail_open` caps each at the replica's share), else those asked. Settling corrects from these.
 */
function takenAmounts(checks: readonly Check[], reserved: ReserveResult): number[] {
  return checks.map((asked, i) => {
    const c = reserved.checks?.[i] ?? asked;
    return c.kind === "concurrency" ? 0 : c.amount ?? 0;
  });
}

/**
 * What a budget's counter takes along when its end user is forgotten: the budget's settled spend when the
 * engine keeps one ({@linkcode PolicyEngineOptions.onBudgetSettled}), and the hooks' companions. Undefined
 * when neither is kept.
 */
function budgetCompanions(options: PolicyEngineOptions): ((budget: PeriodCheck) => Check[]) | undefined {
  const spent = options.onBudgetSettled !== undefined;
  const beside = options.budgetCompanions;
  if (!spent && !beside) return undefined;
  return (budget) => {
    const out: Check[] = spent ? [{ ...budget, key: budgetSpentKey(budget.key), amount: 0 }] : [];
    if (beside) out.push(...beside(budget));
    return out;
  };
}

/**
 * Creates the policy engine over a counter store.
 *
 * Settling an admission releases its concurrency slots, corrects each TPM bucket by (actual − charged): a
 * refund when the request used less than its estimate, an extra charge when it used more — which may take the
 * bucket below zero, so that the next requests wait until it has refilled (the limit holds over time even
 * when estimates are low) — and corrects the token's budget by (actual − reserved) in the period the
 * request was admitted in (budgets.ts: the estimate is reserved at admission). "Charged" and "reserved" are
 * what the store took ({@linkcode ReserveResult.checks}), which the local limiter of `fail_open` caps at the
 * replica's share: correcting from the uncapped estimate would leave its counters short of the real usage.
 */
export function createPolicyEngine(store: CounterStore, options: PolicyEngineOptions = {}): PolicyEngine {
  const now = options.now ?? Date.now;
  const onError = options.onError ?? (() => {});

  /** Settling a request that no limit or budget counted: nothing to release, adjust or charge. */
  const settledAlready = () => Promise.resolve();

  function settler(
    store: CounterStore,
    rates: readonly RateCheck[],
    budgets: readonly OwnedBudgetCheck[],
    taken: readonly number[],
    generations: readonly (number | undefined)[],
    reservation: string | undefined,
    named: boolean,
  ): Admission["settle"] {
    if (rates.length === 0 && budgets.length === 0) return settledAlready;
    let settled: Promise<void> | undefined;
    return (actual) => {
      settled ??= (async () => {
        const tokens = nonNegative(actual.tokens);
        const cost = nonNegative(actual.cost);
        const release: string[] = [];
        const adjust: SettleOps["adjust"][number][] = [];
        rates.forEach((rc, i) => {
          const check = rc.check;
          // The bucket keeps its configured limit: a local store maps it to the replica's share itself.
          if (check.kind === "concurrency") release.push(check.key);
          else if (rc.limitKind === "tpm" && tokens !== taken[i]) {
            // Named by the bucket it took from, where the store numbers them: a refund goes back only there.
            const g = generations[i];
            adjust.push({
              bucket: g === undefined ? check : { ...check, generation: g },
              delta: tokens - taken[i],
            });
          }
        });
        // An end user forgotten under `max_users` takes its counters with it, and the reservations of its
        // requests still running: what settles one is added only while its budget's counter exists (`heldIn`),
        // else each forgotten user's settlement would bring its counters back until the period ends, past the
        // bound. A user still tracked has it (its reservation took > 0): settled as before. A refund goes back
        // only to the very counter reserved on (its generation), not one made afresh as the user came back.
        // The settled spend goes first, judged before the correction.
        const heldIn = budgets.map((b, j) => {
          const at = rates.length + j;
          if (b.owner.scope !== "end_user" || !(taken[at] > 0)) return {};
          const generation = generations[at];
          return {
            heldIn: generation === undefined ? { key: b.check.key } : { key: b.check.key, generation },
          };
        });
        const periods: PeriodDelta[] = [];
        // The budgets whose settled spend grew, in the same call as their counters (counted once with them).
        const spent: OwnedBudgetCheck[] = [];
        if (options.onBudgetSettled) {
          budgets.forEach((b, j) => {
            const delta = spentSettlement(b, { tokens, cost });
            if (delta) {
              periods.push({ ...delta, ...heldIn[j] });
              spent.push(b);
            }
          });
        }
        budgets.forEach((b, j) => {
          const delta = reservedSettlement(b, { tokens, cost }, taken[rates.length + j]);
          if (delta) periods.push({ ...delta, ...heldIn[j] });
        });
        if (store.settle) {
          // One call (one round trip on a shared store) for all of it, named by the reservation it settles:
          // a shared store then gives back this admission's own slots, and sends it again in the background
          // while Redis does not answer, counting it once (redis_counter_store.ts).
          // A store other than the engine's that named the admission (the local limiter of `fail_open`) is
          // told even of nothing to correct: it forgets the books it keeps of the admission then.
          if (release.length + adjust.length + periods.length > 0 || named) {
            await store.settle({ release, adjust, periods, ...(reservation ? { reservation } : {}) });
          }
        } else {
          const ops: Promise<unknown>[] = [
            ...release.map((key) => store.release(key)),
            ...adjust.map((a) => store.adjust(a.bucket, a.delta)),
            ...periods.map((p) => store.periodAdd(p.key, p.period, p.amount, p.expiresAt, p.heldIn)),
          ];
          for (const r of await Promise.allSettled(ops)) if (r.status === "rejected") onError(r.reason);
        }
        if (spent.length > 0) options.onBudgetSettled!(spent);
      })().catch(onError);
      return settled;
    };
  }

  const companions = budgetCompanions(options);
  // A store that forwards to the counters' owner (`seen`) has the list kept there.
  const endUsers = store.seen ? undefined : new EndUserTracker();

  /** Marks end users seen where their list is kept: this engine's (its own store), else the store's owner. */
  function noteSeen(seen: readonly SeenUser[]): void {
    if (store.seen) store.seen(seen).catch(onError);
    else endUsers!.seen(store, seen, onError);
  }

  return {
    counters: store,
    now,
    endUsers,
    async admit(req) {
      const { identity: token, endpoint, model, body } = req;
      if (token.endpoints && !token.endpoints.has(endpoint)) throw endpointDenied(token, endpoint);

      const modifiedBy: string[] = [];
      if (model && body) {
        const decision = applyContentRules(
          endpoint,
          body,
          model.contentRules,
          req.nativeTexts,
          req.carriedTexts,
        );
        if (decision.outcome === "modify") modifiedBy.push(...decision.rules);
      }
      if (
        isChatFormEndpoint(endpoint) && body &&
        token.maxTokens !== null &&
        applyMaxTokensCeiling(body, token.maxTokens)
      ) {
        modifiedBy.push("token.max_tokens");
      }

      const estimate = typeof req.estimatedTokens === "function"
        ? req.estimatedTokens(body)
        : req.estimatedTokens;
      const users = model?.endUserLimits || token.endUserLimits
        ? endUserScopes(token, model, body, req.headers)
        : [];
      const rates = rateChecks(token, model, estimate, users);
      const cost = estimatedCost(model, estimate);
      const owners = tokenBudgetOwners(token);
      for (const user of users) {
        const owner = endUserBudgetOwner(user);
        if (owner) owners.push(owner);
      }
      const t = now();
      const budgets = owners.flatMap((o) => ownerBudgetCheck(o, t, { tokens: estimate, cost }) ?? []);
      const checks: Check[] = rates.map((rc) => rc.check);
      for (const b of budgets) checks.push(b.check);
      const reserved: ReserveResult = checks.length === 0
        ? { ok: true, results: [] }
        : await store.reserve(checks);
      const headers = rateLimitHeaders(rateStates(rates, reserved.results));

      if (users.length > 0) {
        // Denied or not, the user was seen; those pushed out of `max_users` take their counters with them, as
        // the holder of the counters decides: this engine over its own store, else the store's owner.
        // A user forgotten takes along what is kept beside its budget (its settled spend, alerts' claims).
        noteSeen(seenUsers(users, checks, companions));
      }

      if (!reserved.ok) {
        const failed = reserved.results.findIndex((r) => !r.ok);
        let denial: PolicyDenied | undefined;
        if (failed >= 0 && failed < rates.length) {
          const wait = denialWaitMs(checks.slice(0, rates.length), reserved.results.slice(0, rates.length));
          denial = rateDenied(rates[failed], reserved.results[failed], wait, headers);
          options.onDenied?.(denial, rates[failed].name, { key: rates[failed].check.key });
        } else if (failed >= rates.length) {
          const b = budgets[failed - rates.length];
          denial = ownerBudgetDenied(b.owner, reserved.results[failed], b.period, headers);
          options.onDenied?.(denial, b.owner.name, { key: b.check.key, budget: b });
        }
        if (denial) throw denial;
        throw new GatewayError(500, "The gateway's policy store gave an inconsistent answer.", {
          code: "internal_error",
        });
      }

      // One reading of what the store took, for both settling and the stream's allowance: under fail_open
      // both must start from the amount capped at the replica's share, not from the estimate asked.
      const taken = takenAmounts(checks, reserved);
      const tokenBudget = budgets.findIndex((b) => b.owner.scope === "token");
      const tokenBudgetAt = rates.length + tokenBudget; // its place among `checks`, `taken` and the results
      return {
        outcome: modifiedBy.length > 0 ? "modify" : "allow",
        rule: modifiedBy.length > 0 ? modifiedBy.join(",") : null,
        headers,
        settle: settler(
          reserved.store ?? store,
          rates,
          budgets,
          taken,
          reserved.results.map((r) => r.generation),
          reserved.reservation,
          reserved.store !== undefined && reserved.reservation !== undefined,
        ),
        stream: tokenBudget >= 0
          ? streamAllowance(token, taken[tokenBudgetAt], reserved.results[tokenBudgetAt])
          : null,
      };
    },
  };
}
