/**
 * `/admin/explain`'s reading of the policy counters: every limit and the budget read at once through
 * `CounterStore.peek`, which takes nothing (not even a concurrency slot), and each rate limit judged and shown
 * from what it read, in the words a real denial uses. Apart from explain.ts because this is the one part that
 * talks to the counter store (memory, Redis, or the fail-open/closed wrapper) and copes with it being down.
 *
 * @module
 */
import type { GatewayError } from "../errors.ts";
import type { Check, CheckResult, PeekResult } from "./counter_store.ts";
import type { ExplainInput, ExplainLimit, Explanation } from "./explanation.ts";
import { CONCURRENCY_RETRY_MS, type RateCheck, rateDenied } from "./rate_limiter.ts";

/** Records one check of the explanation; `denial` builds the error a request failing it would get. */
export type Judge = (rule: string, ok: boolean | null, detail: string, denial?: () => GatewayError) => void;

/** The counters of every check, or why there are none. */
export async function readCounters(
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

/** What a bucket has given out, as a denial message counts it (whole units, rounded up). */
function usedOf(check: Check, r: CheckResult): number {
  return check.kind === "bucket" ? Math.max(0, Math.ceil(r.used - 1e-9)) : r.used;
}

/** Why a counter has no number, for a check's detail. */
export function storeWord(source: Explanation["counters"]): string {
  return source.source === "unavailable"
    ? `the counter store is unreachable: ${source.error}`
    : "the counter store cannot be read without taking";
}

/** A rate limit as the explanation lists it, from what was read (or nulls). */
export function limitView(rc: RateCheck, peek: PeekResult | null, i: number): ExplainLimit {
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

/** Judges one rate limit from what was read; unreadable counters leave it undecided (`ok: null`). */
export function judgeRate(
  judge: Judge,
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
