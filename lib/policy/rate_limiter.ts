/**
 * Rate limits of tokens and aliases (requests per minute, tokens per minute, requests in flight): which
 * counters a request must pass, and the OpenAI-shaped 429 when one is exhausted.
 *
 * @module
 */
import type { LimitsConfig } from "../config/schema.ts";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import type { BucketCheck, Check, CheckResult, ConcurrencyCheck } from "./counter_store.ts";
import { PolicyDenied } from "./denied.ts";
import { formatDuration, type RateKind, type RateLimitState } from "./ratelimit_headers.ts";
import { endUserLabel, type EndUserScope } from "./end_users.ts";

/** The window of "per minute" limits. */
export const MINUTE_MS = 60_000;

/** Retry-After for a concurrency denial: the store cannot know when a request in flight ends. */
export const CONCURRENCY_RETRY_MS = 1_000;

/** Which limit: `concurrent`, `rpm` or `tpm`. */
export type RateLimitKind = "concurrent" | "rpm" | "tpm";

/**
 * Whose limit: the token's own, its team's (shared by the team's tokens), the alias's (shared by every token
 * using it), or one end user's (of an alias or a token, `end_user_limits:`).
 */
export type RateScope = "token" | "team" | "alias" | "end_user";

/** One rate limit that applies to a request, with the counter check that enforces it. */
export interface RateCheck {
  /** The rule name, e.g. `token.rpm`, `alias.concurrent`. */
  readonly rule: `${RateScope}.${RateLimitKind}`;
  readonly scope: RateScope;
  /** Who, for messages: "token T", "team T", "model M", "user U of token T". */
  readonly name: string;
  readonly limitKind: RateLimitKind;
  readonly check: BucketCheck | ConcurrencyCheck;
}

/**
 * The counter key of a limit: scope, owner and kind, so that no two limits share a counter. The owner is an
 * alias's name, or a token's identity (`ResolvedToken.id`), never its name, which a revoked token frees.
 */
export function rateKey(scope: RateScope, owner: string, kind: RateLimitKind): string {
  return `${scope}:${owner}:${kind}`;
}

/**
 * What a request is charged up front against a TPM bucket: the estimate rounded up, but at most the limit,
 * so that a request estimated above the whole limit (a large `max_tokens`) can still run on a full bucket;
 * settling charges the real usage, overdrawing the bucket if need be. 0 (nothing to charge, e.g.
 * `/v1/models`) only reads the bucket for the headers.
 */
export function tpmCharge(estimatedTokens: number, limit: number): number {
  if (!Number.isFinite(estimatedTokens) || estimatedTokens <= 0) return 0;
  return Math.min(limit, Math.ceil(estimatedTokens));
}

function scoped(
  scope: RateScope,
  name: string,
  owner: string,
  limits: LimitsConfig | null | undefined,
  estimatedTokens: number,
) {
  const out: Partial<Record<RateLimitKind, RateCheck>> = {};
  if (!limits) return out;
  if (limits.concurrent !== undefined) {
    out.concurrent = {
      rule: `${scope}.concurrent`,
      scope,
      name,
      limitKind: "concurrent",
      check: { kind: "concurrency", key: rateKey(scope, owner, "concurrent"), limit: limits.concurrent },
    };
  }
  if (limits.rpm !== undefined) {
    out.rpm = {
      rule: `${scope}.rpm`,
      scope,
      name,
      limitKind: "rpm",
      check: {
        kind: "bucket",
        key: rateKey(scope, owner, "rpm"),
        limit: limits.rpm,
        windowMs: MINUTE_MS,
        amount: 1,
      },
    };
  }
  if (limits.tpm !== undefined) {
    out.tpm = {
      rule: `${scope}.tpm`,
      scope,
      name,
      limitKind: "tpm",
      check: {
        kind: "bucket",
        key: rateKey(scope, owner, "tpm"),
        limit: limits.tpm,
        windowMs: MINUTE_MS,
        amount: tpmCharge(estimatedTokens, limits.tpm),
      },
    };
  }
  return out;
}

/**
 * The rate limits that apply to a request, in the order they are judged: concurrency (token, team, alias),
 * then RPM (token, team, alias, end users), then TPM (the same). The first failing one is the rule a denial
 * names. A team's counters are keyed by its id, an end user's by its scope's owner and the user.
 */
export function rateChecks(
  token: ResolvedToken,
  model: ResolvedModel | undefined,
  estimatedTokens: number,
  endUsers: readonly EndUserScope[] = [],
): RateCheck[] {
  const scopes = [scoped("token", `token ${token.name}`, token.id, token.limits, estimatedTokens)];
  const team = token.team;
  if (team?.limits) scopes.push(scoped("team", `team ${team.name}`, team.id, team.limits, estimatedTokens));
  if (model?.limits) {
    scopes.push(scoped("alias", `model ${model.alias}`, model.alias, model.limits, estimatedTokens));
  }
  for (const user of endUsers) {
    const { rpm, tpm } = user.limits;
    if (rpm === undefined && tpm === undefined) continue;
    // rateKey adds the scope: `end_user:<alias:name:token:id | token:id>:<user>:rpm`, beside endUserKeyBase's
    // budget.
    const owner = `${user.owner}:${user.userKey}`;
    scopes.push(scoped("end_user", endUserLabel(user), owner, { rpm, tpm }, estimatedTokens));
  }
  const out: RateCheck[] = [];
  for (const kind of ["concurrent", "rpm", "tpm"] as const) {
    for (const s of scopes) {
      const c = s[kind];
      if (c) out.push(c);
    }
  }
  return out;
}

/** The header view of the RPM and TPM limits among `checks` (concurrency has no OpenAI header). */
export function rateStates(checks: readonly RateCheck[], results: readonly CheckResult[]): RateLimitState[] {
  const out: RateLimitState[] = [];
  checks.forEach((rc, i) => {
    if (rc.limitKind === "concurrent") return;
    const r = results[i];
    const kind: RateKind = rc.limitKind === "rpm" ? "requests" : "tokens";
    out.push({ kind, limit: rc.check.limit, remaining: r.remaining, resetMs: r.resetMs });
  });
  return out;
}

const LABEL: Record<RateLimitKind, string> = {
  concurrent: "concurrent requests",
  rpm: "requests per min (RPM)",
  tpm: "tokens per min (TPM)",
};

/**
 * The 429 for an exhausted rate limit, in OpenAI's shape and wording: type `requests` or `tokens`, code
 * `rate_limit_exceeded`, `Retry-After` in whole seconds (at least 1) and `retry-after-ms`. `retryAfterMs` is
 * the wait until every failing limit has room, so a client that waits that long is not refused again by
 * another limit (unless other requests got there first).
 */
export function rateDenied(
  rc: RateCheck,
  result: CheckResult,
  retryAfterMs: number,
  headers: Record<string, string>,
): PolicyDenied {
  const wait = Math.max(1, Math.ceil(retryAfterMs));
  const who = rc.name;
  const requested = rc.check.kind === "bucket" ? rc.check.amount : 1;
  const used = Math.ceil(result.used - 1e-9);
  const again = rc.limitKind === "concurrent"
    ? "Please try again once a request in flight has finished."
    : `Please try again in ${formatDuration(wait)}.`;
  const message = `Rate limit reached for ${who} on ${LABEL[rc.limitKind]}: Limit ${rc.check.limit}, ` +
    `Used ${used}, Requested ${requested}. ${again}`;
  return new PolicyDenied(429, message, rc.rule, {
    type: rc.limitKind === "tpm" ? "tokens" : "requests",
    code: "rate_limit_exceeded",
    headers: {
      ...headers,
      "retry-after": String(Math.max(1, Math.ceil(wait / 1000))),
      "retry-after-ms": String(wait),
    },
  });
}

/** The wait before a denied request could pass: the longest among its failing limits. */
export function denialWaitMs(checks: readonly Check[], results: readonly CheckResult[]): number {
  let wait = 0;
  results.forEach((r, i) => {
    if (r.ok) return;
    wait = Math.max(wait, checks[i].kind === "concurrency" ? CONCURRENCY_RETRY_MS : r.retryAfterMs);
  });
  return wait;
}
