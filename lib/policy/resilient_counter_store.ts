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
 * slots come back an hour after they were taken, a bucket refills. Those settlements never reach the local
 * limiter, so nothing below counts them twice.
 *
 * Budgets spent locally are the fleet's spend: every amount the local limiter reserves in a budget's period
 * counter, and every correction or settled spend added to one locally, is owed to the shared counter
 * (outage_ledger.ts) and handed over when Redis answers again: right after the first call Redis answers
 * after an outage (that one call is judged without it), and, while Redis is up, as soon as a local admission
 * still running at the recovery settles. A hand-over is sent in batches of at most `HANDOVER_BATCH_MAX`
 * counters (an outage's end users can be tens of thousands), each one settlement named by a reservation of
 * its own: the shared store sends it again while Redis does not answer and counts it once, so it is never
 * sent twice from here (one Redis misses for longer than that is lost, as any settlement). A batch that fails
 * marks the store down; the batches not sent yet stay owed, for the next recovery. The local counters then
 * keep only what is still owed. A local admission is named (`ReserveResult.reservation`, `local:<n>`) and
 * settled by that name: its refund is handed over only up to what its own reservation got onto the shared
 * counter or still owes it, never another request's spend or an earlier outage's hand-over; the refund of a
 * reservation the shared counter never got (the ledger was full, or its hand-over failed) would erase spend
 * made before the outage or by other requests. Buckets and concurrency slots are not handed over: a bucket
 * refills within its window, a slot is given back where it was taken. The local share of a budget starts
 * from what it had left when last read (÷ the expected replicas), so a budget nearly spent before an outage
 * is not granted a fresh share during it.
 *
 * Handing the outage's spend over adds it; a budget seed (budget_seeder.ts) raises a counter to the spend
 * the usage store recorded, which may already count it. Adding after raising would count it twice, so a
 * raise here is lowered by what this replica still owes that counter (it adds that later), after any
 * hand-over under way. The gateway does not re-seed at recovery: with the usage store in PostgreSQL, a
 * replica's seed would count the other replicas' outage spend before they hand it over. A replica that
 * stops during an outage takes what it owes with it (its own seed, when it starts again, may raise to it).
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
import { randomHex } from "../encoding/random_hex.ts";
import { redisErrorText } from "../redis/errors.ts";
import type { Check, CheckResult, CounterStore, PeriodDelta } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createOutageLedger, HANDOVER_BATCH_MAX } from "./outage_ledger.ts";
import { createStoreBreaker } from "../timers/store_breaker.ts";

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
  /** How often, at most, a call tries the shared store while it is down (ms). Default 500 (store_breaker.ts). */
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

/**
 * A check with its limit divided among the expected replicas, for the local limiter; a budget's share is of
 * what it had `left` when last read, when that is known and smaller.
 */
function localShare(check: Check, replicas: number, left?: number): Check {
  if (check.kind === "bucket") {
    const limit = share(check.limit, replicas);
    return { ...check, limit, amount: Math.min(check.amount, limit) };
  }
  if (check.kind === "period") {
    const limit = share(Math.min(check.limit, left ?? Infinity), replicas, false);
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
  // Down after a failed call, tried again by one call per probe interval: the rule every shared store keeps.
  const breaker = createStoreBreaker({ probeIntervalMs: options.probeIntervalMs, now });
  const replicas = Math.max(1, Math.floor(options.expectedReplicas));
  const memory = createMemoryCounterStore(now);
  const ledger = createOutageLedger(now);
  /** The engine names buckets by their configured limit; the local limiter, at the replica's share. */
  const adjustLocally: CounterStore["adjust"] = (bucket, delta) =>
    memory.adjust({ ...bucket, limit: share(bucket.limit, replicas) }, delta);
  // What settles a local admission. What it adds to a period counter is owed to the shared one, a refund only
  // of what its own reservation got there (`settle`, named by the reservation: outage_ledger.ts), and handed
  // over at once when Redis is up (an admission still running when Redis came back).
  const local: CounterStore = {
    ...memory,
    adjust: adjustLocally,
    // Owed whether or not the local counter still holds its reservation (`heldIn`: an end user forgotten
    // here, whose shared counters no replica forgets).
    async periodAdd(key, period, amount, expiresAt, heldIn) {
      const value = await memory.periodAdd(key, period, amount, expiresAt, heldIn);
      // No reservation named: spend is owed, a refund takes nothing back from the shared counter.
      ledger.owe({ key, period, amount, expiresAt });
      if (breaker.up) await handOver().catch(markDown);
      return value;
    },
    async settle(ops) {
      for (const key of ops.release) await memory.release(key);
      for (const a of ops.adjust) await adjustLocally(a.bucket, a.delta);
      for (const p of ops.periods) await memory.periodAdd(p.key, p.period, p.amount, p.expiresAt, p.heldIn);
      ledger.settle(ops.reservation, ops.periods);
      if (breaker.up && ops.periods.length > 0) await handOver().catch(markDown);
    },
  };
  /** The last local reservation's number: a local admission's name (`local:<n>`), unique in this process. */
  let localReservations = 0;
  options.metrics?.up.set([], 1);

  /** A check as the local limiter judges it. */
  const judged = (check: Check) =>
    localShare(check, replicas, check.kind === "period" ? ledger.left(check) : undefined);

  /**
   * Notes what the shared store said each budget had left; before the call is over, so that the hand-over
   * it may bring (markUp) is taken from what it read.
   */
  async function read<T extends { results: readonly CheckResult[] }>(
    checks: readonly Check[],
    answer: Promise<T>,
  ): Promise<T> {
    const value = await answer;
    ledger.read(checks, value.results);
    return value;
  }

  /** The hand-over under way (one at a time, in order), which a raise waits for. */
  let handing: Promise<void> = Promise.resolve();

  /**
   * Hands what the local limiter spent over to the shared counters, once (see the module's doc); rejects
   * when the shared store failed. What was handed over leaves the local counters and what was last read.
   */
  function handOver(): Promise<void> {
    const run = handing.catch(() => {}).then(sendOwed);
    handing = run;
    return run;
  }

  /** Hands over all that is owed, batch by batch; then logs how many counters' amounts were dropped. */
  async function sendOwed(): Promise<void> {
    try {
      for (;;) {
        const batch = ledger.take(HANDOVER_BATCH_MAX);
        if (batch.length === 0) return;
        await sendBatch(batch);
      }
    } finally {
      const dropped = ledger.dropped();
      if (dropped > 0) options.logger?.warn("rate_limit_store_handover_dropped", { counters: dropped });
    }
  }

  /**
   * Adds one batch to the shared counters; what the ledger has not taken yet stays owed when it fails. With
   * `settle`, the batch is one settlement named by a reservation of its own, which the shared store sends
   * again while Redis does not answer and counts once: never sent twice from here (a new name would count
   * it twice had the first been applied with its answer lost), it is the shared store's from then on. Only an
   * answered one leaves the local counters: one that failed stays counted there, as spent, while the outage
   * goes on (forgotten, the local limiter would grant the outage's spend again before Redis is back), counted
   * high rather than lost: the shared store's retry may add it there too, and the local counters keep it
   * until their period ends; no later refund takes it back from the shared counter (`ledger.failed`).
   */
  async function sendBatch(batch: readonly PeriodDelta[]): Promise<void> {
    if (shared.settle) {
      try {
        await shared.settle({ release: [], adjust: [], periods: batch, reservation: randomHex(12) });
      } catch (err) {
        // Maybe never added: no refund settled later takes it back from the shared counter (outage_ledger.ts).
        ledger.failed(batch);
        throw err;
      }
      forgetLocally(batch);
      return;
    }
    for (const [i, d] of batch.entries()) {
      try {
        await shared.periodAdd(d.key, d.period, d.amount, d.expiresAt);
      } catch (err) {
        ledger.unsent(batch.slice(i));
        throw err;
      }
      forgetLocally([d]);
    }
  }

  /**
   * Takes what was handed over out of the local counters, which keep only what is still owed: each is set to
   * what its counter owes now (never below zero), not lowered by the amount handed over. A refund settled
   * locally after its reservation was handed over finds the local counter at zero, where it stays (the
   * memory store never goes below zero); lowering by the refund handed over would raise it by the refund.
   * The counter itself stays (at zero when nothing is owed): the local admissions still running hold their
   * reservations in it, and an end user's settle only into the counter they reserved on (`heldIn`). Forgotten
   * and made again, it would lose what they use beyond their reservations as a second outage follows.
   */
  function forgetLocally(deltas: readonly PeriodDelta[]): void {
    // First: the refunds settled while these were handed over are owed from now on.
    ledger.handedOver(deltas);
    for (const d of deltas) memory.periodSet(d.key, d.period, ledger.owedTo(d.key, d.period), d.expiresAt);
  }

  function markDown(err: unknown): void {
    if (!breaker.failed()) return;
    options.metrics?.up.set([], 0);
    // A Redis Cluster node's redirection says the setup is not supported, not only where the key lives.
    options.logger?.warn("rate_limit_store_down", {
      on_failure: options.onFailure,
      error: redisErrorText(err),
    });
  }

  /**
   * Marks the store up after a call it answered; coming back from down, hands the local spend over (resolves
   * once that is done or failed). Not before that call: a hand-over Redis never answers stays with the shared
   * store's retries, so one per failed probe would leave the local limiter forgetting what it spent.
   */
  function markUp(): Promise<void> | undefined {
    if (!breaker.succeeded()) return;
    options.metrics?.up.set([], 1);
    options.logger?.info("rate_limit_store_up", { on_failure: options.onFailure });
    return handOver().catch(markDown);
  }

  /** Runs `op` on the shared store, or reports that it could not (undefined). */
  async function attempt<T>(op: () => Promise<T>): Promise<{ value: T } | undefined> {
    // Always while up, one call per probe interval while down.
    if (!breaker.tryNow()) return undefined;
    try {
      const value = await op();
      await markUp();
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
      await markUp();
      return value;
    } catch (err) {
      markDown(err);
      throw err;
    }
  }

  return {
    async reserve(checks) {
      const done = await attempt(() => read(checks, shared.reserve(checks)));
      if (done) return done.value;
      options.metrics?.fallbacks.inc([options.onFailure]);
      if (options.onFailure === "fail_closed") throw storeUnavailable();
      // The checks as judged go back with the result: an amount capped at the share was all that was taken,
      // and settling must correct from that (engine.ts), not from the estimate asked.
      const asJudged = checks.map(judged);
      const result = await memory.reserve(asJudged);
      if (!result.ok) return { ...result, store: local, checks: asJudged };
      // Every budget's check says when its counter expires (budgets.ts), as the shared store needs.
      const owed: PeriodDelta[] = [];
      for (const c of asJudged) {
        if (c.kind === "period" && c.amount && c.expiresAt !== undefined) {
          owed.push({ key: c.key, period: c.period, amount: c.amount, expiresAt: c.expiresAt });
        }
      }
      // Named when the ledger remembers what it owes, so that its refund takes back only that.
      const reservation = `local:${++localReservations}`;
      return ledger.reserve(reservation, owed)
        ? { ...result, store: local, checks: asJudged, reservation }
        : { ...result, store: local, checks: asJudged };
    },
    adjust: (bucket, delta) => settleOp(() => shared.adjust(bucket, delta)),
    release: (key) => settleOp(() => shared.release(key)),
    periodGet: (key, period) => settleOp(() => shared.periodGet(key, period)),
    periodAdd: (key, period, amount, expiresAt) =>
      settleOp(() => shared.periodAdd(key, period, amount, expiresAt)),
    // Raised to a recorded spend that may count what this replica still owes: less that, which it adds later.
    periodRaise: (key, period, value, expiresAt) =>
      settleOp(async () => {
        await handing.catch(() => {});
        return await shared.periodRaise(key, period, value - ledger.owedTo(key, period), expiresAt);
      }),
    settle: shared.settle && ((ops) => settleOp(() => shared.settle!(ops))),
    // Only the local limiter's copies (the counters decided while the shared store was away): the shared
    // keys expire by their own TTL. A replica's list of recent end users saw only its own traffic; deleting
    // the shared keys of a user fallen out of it would wipe the counters of a user active on another replica.
    // What they still owe the shared counters stays owed.
    forget: (checks) => {
      ledger.forget(checks);
      return memory.forget(checks);
    },
    peek: shared.peek && (async (checks) => {
      const done = await attempt(() => read(checks, shared.peek!(checks)));
      if (done) return done.value;
      if (options.onFailure === "fail_closed") throw storeUnavailable();
      const asJudged = checks.map(judged);
      const fallback = await memory.peek(asJudged);
      return { results: fallback.results, source: "local", checks: asJudged };
    }),
    isUp: () => breaker.up,
  };
}
