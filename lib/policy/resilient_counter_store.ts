/**
 * What a shared counter store's failure means, decided by `redis.on_failure`: a {@linkcode CounterStore} in
 * front of the shared one that turns a failed or slow call (past the per-call timeout) into either
 *
 * - `fail_closed`: a 503 `rate_limit_store_unavailable` with `Retry-After` for every request that has a
 *   limit or a budget (requests without any never reach the store), or
 * - `fail_open`: a decision by a local in-memory limiter whose limits are the configured ones divided by
 *   the expected number of replicas, so the fleet as a whole stays near its limits while Redis is away.
 *
 * Once a call has failed the store is "down": requests are answered at once (503 or local) without waiting
 * for Redis, and one call per probe interval tries Redis again; the first that succeeds makes it "up"
 * again. No restart is needed. Each change of state is logged once (`rate_limit_store_down`,
 * `rate_limit_store_up`) and shown by the `gateway_rate_limit_store_up` gauge; decisions taken locally are
 * counted in `gateway_rate_limit_store_fallbacks_total`.
 *
 * An admission settles with the store that admitted it (`ReserveResult.store`): a request admitted locally
 * gives its slot back locally, even if Redis has returned meanwhile, and corrects its TPM buckets and budgets
 * there from what the local limiter took (`ReserveResult.checks`: each amount capped at the replica's share),
 * so the local counters end up holding its real usage. Settling a Redis admission while Redis is down fails
 * (logged by the engine) and is sent again in the background for a while (the Redis store's
 * `SETTLE_RETRY_FOR_MS`), with the amounts Redis took; one Redis missed for longer is lost: its concurrency
 * slots come back an hour after they were taken, a bucket refills.
 *
 * A `peek` (`/admin/explain`) reads the shared store like any call; while it is down, `fail_open` answers
 * from the local limiter (its share of each limit, marked `source: "local"`), and `fail_closed` throws the
 * same 503 a limited request gets, so an operator sees what clients see.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { Counter, Gauge } from "../metrics/registry.ts";
import { redisErrorText } from "../redis/errors.ts";
import { type Check, type CounterStore, createMemoryCounterStore } from "./counter_store.ts";

/** What happens to decisions while the shared store cannot be reached. */
export type OnFailure = "fail_closed" | "fail_open";

/** Seconds a client is told to wait after a `fail_closed` 503. */
export const STORE_RETRY_AFTER_S = 1;

/** Options of {@linkcode createResilientCounterStore}. */
export interface ResilientCounterStoreOptions {
  readonly onFailure: OnFailure;
  /** For `fail_open`: each limit is divided by this for the local limiter (at least 1 left). */
  readonly expectedReplicas: number;
  readonly logger?: Logger;
  /** How often, at most, a call tries the shared store while it is down (ms). Default 500. */
  readonly probeIntervalMs?: number;
  readonly metrics?: {
    readonly up: Gauge<readonly []>;
    readonly fallbacks: Counter<readonly ["mode"]>;
  };
  readonly now?: () => number;
}

/** The store as the engine sees it, and its state for tests and `/metrics`. */
export interface ResilientCounterStore extends CounterStore {
  readonly isUp: () => boolean;
}

/** The 503 every limited request gets in `fail_closed` while the store is down. */
export function storeUnavailable(): GatewayError {
  return new GatewayError(
    503,
    "The gateway cannot check this request's rate limits and budget right now (its counter store is " +
      "unreachable). Please try again shortly.",
    {
      type: "server_error",
      code: "rate_limit_store_unavailable",
      headers: {
        "retry-after": String(STORE_RETRY_AFTER_S),
        "retry-after-ms": String(STORE_RETRY_AFTER_S * 1000),
      },
    },
  );
}

/**
 * A limit divided among the expected replicas, for the local limiter: requests, tokens per minute and
 * requests in flight in whole units (at least 1); a budget exactly, as it may be money ($10 over 4 replicas
 * is $2.50 each, and $1 is $0.25, not the whole dollar on every replica).
 */
function share(limit: number, replicas: number, whole = true): number {
  return whole ? Math.max(1, Math.floor(limit / replicas)) : limit / replicas;
}

/** A check with its limit divided among the expected replicas, for the local limiter. */
function localShare(check: Check, replicas: number): Check {
  if (check.kind === "bucket") {
    const limit = share(check.limit, replicas);
    return { ...check, limit, amount: Math.min(check.amount, limit) };
  }
  if (check.kind === "period") {
    const limit = share(check.limit, replicas, false);
    const amount = check.amount ?? 0;
    return { ...check, limit, amount: Math.min(amount, limit) };
  }
  return { ...check, limit: share(check.limit, replicas) };
}

/** Wraps `shared` with the failure behaviour of `options.onFailure`. */
export function createResilientCounterStore(
  shared: CounterStore,
  options: ResilientCounterStoreOptions,
): ResilientCounterStore {
  const now = options.now ?? Date.now;
  const probeIntervalMs = options.probeIntervalMs ?? 500;
  const replicas = Math.max(1, Math.floor(options.expectedReplicas));
  const memory = createMemoryCounterStore(now);
  // What settles a local admission: the engine names buckets by their configured limit, the local limiter
  // keeps them at the replica's share.
  const local: CounterStore = {
    ...memory,
    adjust: (bucket, delta) => memory.adjust({ ...bucket, limit: share(bucket.limit, replicas) }, delta),
  };
  let up = true;
  let nextProbe = 0;
  options.metrics?.up.set([], 1);

  function markDown(err: unknown): void {
    nextProbe = now() + probeIntervalMs;
    if (!up) return;
    up = false;
    options.metrics?.up.set([], 0);
    // A Redis Cluster node's redirection says the setup is not supported, not only where the key lives.
    options.logger?.warn("rate_limit_store_down", {
      on_failure: options.onFailure,
      error: redisErrorText(err),
    });
  }

  function markUp(): void {
    if (up) return;
    up = true;
    options.metrics?.up.set([], 1);
    options.logger?.info("rate_limit_store_up", { on_failure: options.onFailure });
  }

  /** Whether this call should go to the shared store: always while up, one per interval while down. */
  function tryShared(): boolean {
    if (up) return true;
    const t = now();
    if (t < nextProbe) return false;
    nextProbe = t + probeIntervalMs;
    return true;
  }

  /** Runs `op` on the shared store, or reports that it could not (undefined). */
  async function attempt<T>(op: () => Promise<T>): Promise<{ value: T } | undefined> {
    if (!tryShared()) return undefined;
    try {
      const value = await op();
      markUp();
      return { value };
    } catch (err) {
      markDown(err);
      return undefined;
    }
  }

  /** A settle-time operation: on the shared store when possible; its failure is the engine's to log. */
  async function settleOp<T>(op: () => Promise<T>): Promise<T> {
    try {
      const value = await op();
      markUp();
      return value;
    } catch (err) {
      markDown(err);
      throw err;
    }
  }

  return {
    async reserve(checks) {
      const done = await attempt(() => shared.reserve(checks));
      if (done) return done.value;
      options.metrics?.fallbacks.inc([options.onFailure]);
      if (options.onFailure === "fail_closed") throw storeUnavailable();
      // The checks as judged go back with the result: an amount capped at the share was all that was taken,
      // and settling must correct from that (engine.ts), not from the estimate asked.
      const judged = checks.map((c) => localShare(c, replicas));
      const result = await memory.reserve(judged);
      return { ...result, store: local, checks: judged };
    },
    adjust: (bucket, delta) => settleOp(() => shared.adjust(bucket, delta)),
    release: (key) => settleOp(() => shared.release(key)),
    periodGet: (key, period) => settleOp(() => shared.periodGet(key, period)),
    periodAdd: (key, period, amount, expiresAt) =>
      settleOp(() => shared.periodAdd(key, period, amount, expiresAt)),
    periodRaise: (key, period, value, expiresAt) =>
      settleOp(() => shared.periodRaise(key, period, value, expiresAt)),
    settle: shared.settle && ((ops) => settleOp(() => shared.settle!(ops))),
    // Only the local limiter's copies (the counters decided while the shared store was away): the shared
    // keys expire by their own TTL. A replica's list of recent end users saw only its own traffic; deleting
    // the shared keys of a user fallen out of it would wipe the counters of a user active on another replica.
    forget: (checks) => memory.forget(checks.map((c) => localShare(c, replicas))),
    peek: shared.peek && (async (checks) => {
      const done = await attempt(() => shared.peek!(checks));
      if (done) return done.value;
      if (options.onFailure === "fail_closed") throw storeUnavailable();
      const judged = checks.map((c) => localShare(c, replicas));
      const fallback = await memory.peek(judged);
      return { results: fallback.results, source: "local", checks: judged };
    }),
    isUp: () => up,
  };
}
