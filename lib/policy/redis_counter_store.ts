/**
 * The shared counter store: the {@linkcode CounterStore} of a fleet, in Redis, so that limits and budgets
 * hold for all replicas together rather than for each one.
 *
 * Each operation is one Lua script (redis_scripts.ts), sent as `EVALSHA` with a fallback to `EVAL` when the
 * server does not have it cached (`NOSCRIPT`, e.g. after a restart): one round trip, atomic. A request's
 * whole decision — its token's and its alias's limits and its token's budget — is one `reserve` script.
 *
 * Key layout: `<key_prefix>{limits}:<counter>`, e.g. `gw:{limits}:token:web:rpm`, with period counters
 * suffixed by their period (`gw:{limits}:token:web:budget:cost:2026-11`). Every counter shares one hash tag,
 * `{limits}` (a decision spans a token's keys and an alias's keys, which many tokens share). Fleets sharing a
 * Redis are kept apart by their `key_prefix`. The client is a single-node one (lib/redis/connection.ts):
 * Redis Cluster is not supported, and a cluster node's `MOVED` reply is a failed call whose log says so
 * (lib/redis/errors.ts).
 *
 * Keys expire when idle: a bucket when it is full again (`PEXPIRE` to the instant it refills), a period
 * counter an hour after its period ends (`PEXPIRE`, measured from the scripts' clock). A concurrency counter
 * (`<counter>:slots`, a sorted set: a different key from the integer counters of versions before, so replicas
 * of both during a rolling upgrade do not break each other's scripts) holds one entry per slot taken, named
 * by its reservation and expiring {@linkcode CONCURRENCY_TTL_MS} after its take: a slot held by a replica
 * that died, or whose settlement was lost, comes back on its own then, however busy the counter stays. The
 * set is gone once its last slot is.
 *
 * A settlement whose reply does not come (Redis away for a moment, or slow) is sent again in the background
 * for {@linkcode SETTLE_RETRY_FOR_MS}: the reservation's marker, set to `settled` by the script, makes a
 * settlement that ran count once however often it is sent. An end user's counters are never deleted when a
 * replica stops tracking the user (`max_users`): that replica saw only its own traffic; the keys expire.
 *
 * Every call has the configured timeout (`commandTimeout`) and fails at once while disconnected (no offline
 * queue): what a failure means is decided by the caller (resilient_counter_store.ts).
 *
 * @module
 */
import { closeRedis, connectRedis, redisReady } from "../redis/connection.ts";
import { randomHex } from "../encoding/random_hex.ts";
import type {
  BucketRef,
  Check,
  CheckResult,
  CounterStore,
  PeekResult,
  ReserveResult,
} from "./counter_store.ts";
import {
  ADJUST_LUA,
  PEEK_LUA,
  PERIOD_LUA,
  RELEASE_LUA,
  RESERVE_LUA,
  SETTLE_LUA,
  UNDO_LUA,
} from "./redis_scripts.ts";

/** How long a concurrency slot lives when nothing gives it back: longer than any request is let run. */
export const CONCURRENCY_TTL_MS = 3_600_000;

/**
 * How long a reservation's marker lives: how late a reserve Redis ran after its caller gave up can still be
 * undone. Every admitted reservation leaves one small key for this long (at 1,000 requests/s, 30,000 keys).
 */
export const RESERVATION_MARKER_TTL_MS = 30_000;

/** How often the undo of an unanswered reservation is sent again while Redis does not answer. */
const UNDO_RETRY_MS = 250;

/**
 * How long an unanswered settlement is sent again: a blip, a restart or a quick failover of Redis does not
 * leave a request's slot taken or its correction unmade. Shorter than the marker lives (it is set when the
 * settlement runs, and a settlement sent last may run a little later), so a settlement never counts twice.
 */
export const SETTLE_RETRY_FOR_MS = 20_000;

/** The first wait before a settlement is sent again; it doubles up to {@linkcode SETTLE_RETRY_MAX_WAIT_MS}. */
const SETTLE_RETRY_MS = 250;
const SETTLE_RETRY_MAX_WAIT_MS = 4_000;

/** Options of {@linkcode createRedisCounterStore}. */
export interface RedisCounterStoreOptions {
  /** `redis://[user:pass@]host:port[/db]` (or `rediss://` for TLS). */
  readonly url: string;
  /** Starts every key, so that several fleets can share one Redis. */
  readonly keyPrefix: string;
  /** Per call, in ms: a call that takes longer fails. */
  readonly timeoutMs: number;
  /** Tests only: a clock (epoch ms) passed to the scripts instead of Redis's `TIME`. */
  readonly clock?: () => number;
}

/** A Redis counter store, with what the composition root needs to run and stop it. */
export interface RedisCounterStore extends CounterStore {
  /** Reads what every check would meet, taking nothing (one read-only script). */
  peek(checks: readonly Check[]): Promise<PeekResult>;
  /** Resolves when Redis answers a `PING` within the timeout; rejects otherwise. */
  ping(): Promise<void>;
  /** Resolves once connected (or after `ms`, whichever comes first). */
  whenReady(ms: number): Promise<boolean>;
  /** Closes the connection; pending calls fail. */
  close(): Promise<void>;
}

type Script = (...args: (string | number)[]) => Promise<unknown>;

interface Scripts {
  gwReserve: Script;
  gwUndo: Script;
  gwAdjust: Script;
  gwRelease: Script;
  gwPeriod: Script;
  /** Called with its arguments as one array (the client flattens it): see `sendSettle`. */
  gwSettle: (args: readonly (string | number)[]) => Promise<unknown>;
  gwPeek: Script;
}

function num(value: unknown): number {
  const n = Number(value);
  return Number.isFinite(n) ? n : 0;
}

/** The five-value wire form of one check (see `RESERVE_LUA`). */
function checkArgs(check: Check): (string | number)[] {
  switch (check.kind) {
    case "bucket":
      return ["b", check.limit, check.windowMs, check.amount, 0];
    case "concurrency":
      return ["c", check.limit, CONCURRENCY_TTL_MS, 0, 0];
    case "period": {
      const amount = check.amount ?? 0;
      return ["p", check.limit, 0, Number.isFinite(amount) ? amount : 0, check.expiresAt ?? 0];
    }
  }
}

/** `count` results of five values each from a script's reply, starting at `offset`. */
function checkResults(reply: unknown[], offset: number, count: number): CheckResult[] {
  const out: CheckResult[] = [];
  for (let i = 0; i < count; i++) {
    const o = offset + 5 * i;
    out.push({
      ok: reply[o] === "1",
      used: num(reply[o + 1]),
      remaining: num(reply[o + 2]),
      resetMs: num(reply[o + 3]),
      retryAfterMs: num(reply[o + 4]),
    });
  }
  return out;
}

/** Creates a Redis counter store; it connects in the background and reconnects by itself. */
export function createRedisCounterStore(options: RedisCounterStoreOptions): RedisCounterStore {
  const client = connectRedis(options.url, options.timeoutMs);
  client.defineCommand("gwReserve", { lua: RESERVE_LUA });
  client.defineCommand("gwUndo", { lua: UNDO_LUA });
  client.defineCommand("gwAdjust", { numberOfKeys: 1, lua: ADJUST_LUA });
  client.defineCommand("gwRelease", { numberOfKeys: 1, lua: RELEASE_LUA });
  client.defineCommand("gwPeriod", { numberOfKeys: 1, lua: PERIOD_LUA });
  client.defineCommand("gwSettle", { lua: SETTLE_LUA });
  client.defineCommand("gwPeek", { lua: PEEK_LUA });
  const scripts = client as unknown as Scripts;
  let closed = false;

  const prefix = `${options.keyPrefix}{limits}:`;
  const key = (k: string) => prefix + k;
  const periodKey = (k: string, period: string) => `${prefix}${k}:${period}`;
  const slotsKey = (k: string) => `${prefix}${k}:slots`;
  const markerKey = (id: string) => key(`reservation:${id}`);
  const clock = () => (options.clock ? String(options.clock()) : "");

  const checkKey = (check: Check) => {
    if (check.kind === "period") return periodKey(check.key, check.period);
    return check.kind === "concurrency" ? slotsKey(check.key) : key(check.key);
  };

  /**
   * Sends the undo of a reservation whose reply never came until Redis answers it (sent on the same connection
   * after the reserve, it runs after it; run twice, the second does nothing), for as long as its marker lives.
   */
  const undoLater = (marker: string, keys: readonly string[], args: readonly (string | number)[]) => {
    const until = Date.now() + RESERVATION_MARKER_TTL_MS;
    const attempt = () => {
      if (closed) return;
      scripts.gwUndo(keys.length + 1, marker, ...keys, ...args).catch(() => {
        if (Date.now() < until) setTimeout(attempt, UNDO_RETRY_MS);
      });
    };
    attempt();
  };

  /** The timers of settlements waiting to be sent again, cleared by `close` (the process may be exiting). */
  const retries = new Set<ReturnType<typeof setTimeout>>();

  /**
   * Runs the settle script. Its arguments go as one array, which the client flattens: spread into the call,
   * a settlement of tens of thousands of counters would exceed the engine's argument limit. Never throws
   * synchronously: a throw would escape a retry's timer and end the process.
   */
  const sendSettle = (args: readonly (string | number)[]) =>
    Promise.resolve().then(() => scripts.gwSettle(args));

  /**
   * Sends a settlement whose reply never came again until Redis answers one, with growing waits, for
   * {@linkcode SETTLE_RETRY_FOR_MS}. Its script does nothing when the reservation is already settled.
   */
  const settleLater = (args: readonly (string | number)[]) => {
    const until = Date.now() + SETTLE_RETRY_FOR_MS;
    let wait = SETTLE_RETRY_MS;
    const again = () => {
      if (closed || Date.now() + wait >= until) return;
      const timer = setTimeout(() => {
        retries.delete(timer);
        if (!closed) sendSettle(args).catch(again);
      }, wait);
      retries.add(timer);
      wait = Math.min(wait * 2, SETTLE_RETRY_MAX_WAIT_MS);
    };
    again();
  };

  /** `reserve`'s and `peek`'s arguments: the check count, their keys, the clock, five values per check. */
  const checkArgList = (checks: readonly Check[]) => {
    const args: (string | number)[] = [checks.length, ...checks.map(checkKey), clock()];
    for (const check of checks) args.push(...checkArgs(check));
    return args;
  };

  return {
    async reserve(checks) {
      if (checks.length === 0) return { ok: true, results: [] };
      const keys = checks.map(checkKey);
      // Random, so no two reservations share a marker (or a slot).
      const id = randomHex(12);
      const marker = markerKey(id);
      const args: (string | number)[] = [clock()];
      for (const check of checks) args.push(...checkArgs(check));
      args.push(RESERVATION_MARKER_TTL_MS, id);
      let reply: unknown;
      try {
        reply = await scripts.gwReserve(keys.length + 1, ...keys, marker, ...args);
      } catch (err) {
        // No answer in time, but Redis may still run the script (a paused or busy server runs what it queued):
        // what it takes then belongs to a request already decided without it, and is given back.
        undoLater(marker, keys, args);
        throw err;
      }
      if (!Array.isArray(reply) || reply.length !== 1 + 5 * checks.length) {
        throw new Error("unexpected reply from the Redis reserve script");
      }
      const ok = reply[0] === "1";
      const results = checkResults(reply, 1, checks.length);
      return (ok ? { ok, results, reservation: id } : { ok, results }) satisfies ReserveResult;
    },
    async peek(checks) {
      if (checks.length === 0) return { results: [], source: "store" };
      const reply = await scripts.gwPeek(...checkArgList(checks));
      if (!Array.isArray(reply) || reply.length !== 5 * checks.length) {
        throw new Error("unexpected reply from the Redis peek script");
      }
      return { results: checkResults(reply, 0, checks.length), source: "store" };
    },
    async adjust(bucket: BucketRef, delta: number) {
      if (delta === 0 || !Number.isFinite(delta)) return;
      await scripts.gwAdjust(key(bucket.key), clock(), bucket.limit, bucket.windowMs, delta);
    },
    async release(k) {
      await scripts.gwRelease(slotsKey(k), clock());
    },
    async periodGet(k, period) {
      return num(await client.get(periodKey(k, period)));
    },
    async periodAdd(k, period, amount, expiresAt) {
      const value = Number.isFinite(amount) ? amount : 0;
      return num(await scripts.gwPeriod(periodKey(k, period), clock(), value, expiresAt, "add"));
    },
    async periodRaise(k, period, value, expiresAt) {
      const v = Number.isFinite(value) ? value : 0;
      return num(await scripts.gwPeriod(periodKey(k, period), clock(), v, expiresAt, "raise"));
    },
    async settle(ops) {
      const adjust = ops.adjust.filter((a) => a.delta !== 0 && Number.isFinite(a.delta));
      const periods = ops.periods.map((p) => ({ ...p, amount: Number.isFinite(p.amount) ? p.amount : 0 }));
      const keys = [
        ...ops.release.map(slotsKey),
        ...adjust.map((a) => key(a.bucket.key)),
        ...periods.map((p) => periodKey(p.key, p.period)),
      ];
      if (keys.length === 0) return;
      const id = ops.reservation ?? "";
      if (id !== "") keys.push(markerKey(id));
      const args: (string | number)[] = [keys.length, ...keys, clock(), ops.release.length, adjust.length];
      args.push(periods.length, id, RESERVATION_MARKER_TTL_MS);
      for (const a of adjust) args.push(a.bucket.limit, a.bucket.windowMs, a.delta);
      for (const p of periods) args.push(p.amount, p.expiresAt);
      try {
        await sendSettle(args);
      } catch (err) {
        // Sent again only when it can count once (named by its reservation); the caller still hears of it.
        if (id !== "") settleLater(args);
        throw err;
      }
    },
    async ping() {
      await client.ping();
    },
    whenReady: (ms) => redisReady(client, ms),
    close: () => {
      closed = true;
      for (const timer of retries) clearTimeout(timer);
      retries.clear();
      return closeRedis(client);
    },
  };
}
