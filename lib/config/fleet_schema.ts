/**
 * The configuration of a fleet's shared stores: Redis for the counters, PostgreSQL for the records. Their URLs
 * are secrets (they may hold a password), so no message of these checks repeats one.
 *
 * @module
 */
import { z } from "zod";
import { timerDuration } from "./units_schema.ts";

/** Whether `url` is a Redis URL the client can use; the message never repeats it (it may hold a password). */
function isRedisUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === "redis:" || u.protocol === "rediss:") && u.hostname !== "" &&
      /^(\/\d{0,2})?$/.test(u.pathname) && u.search === "" && u.hash === "";
  } catch {
    return false;
  }
}

/**
 * The shared counter store of a fleet: with it, rate limits, concurrency limits, budgets and their
 * reservations live in Redis and hold for every replica together; without it, in each process's memory.
 */
export const redisSchema = z.strictObject({
  /** `redis://[user:pass@]host:port[/db]` or `rediss://…` (TLS); a secret (it may hold a password). */
  url: z.string().refine(isRedisUrl, "expected redis://[user:pass@]host:port[/db] (or rediss://)"),
  /** Starts every key, so that several fleets can share one Redis. */
  key_prefix: z.string().max(64).regex(/^[^{}\s]*$/, "no braces or spaces").default("gw:"),
  /** Per Redis call; a slower call counts as a failure. */
  timeout: timerDuration.refine((ms) => ms > 0, "must be above 0").default(50),
  /** While Redis is unreachable or slow: 503 every limited request, or limit locally (limit ÷ replicas). */
  on_failure: z.enum(["fail_closed", "fail_open"]).default("fail_closed"),
  /** For `fail_open`: how many replicas share the limits, so each limits locally to its share. */
  expected_replicas: z.number().int().min(1).max(10_000).default(1),
});

/** Whether `url` is a PostgreSQL URL; the message never repeats it (it may hold a password). */
function isPostgresUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === "postgres:" || u.protocol === "postgresql:") && u.hostname !== "" && u.hash === "";
  } catch {
    return false;
  }
}

/**
 * The shared record store of a fleet: with it, usage records and stored responses live in PostgreSQL (every
 * replica reads and writes the same ones) and the SQLite file is not used; the spill file stays local.
 */
export const postgresSchema = z.strictObject({
  /** `postgres://user[:pass]@host:port/db`; a secret (it may hold a password). */
  url: z.string().refine(isPostgresUrl, "expected postgres://user@host:port/db (or postgresql://)"),
  /** Created and migrated at start-up; every table of the gateway is in it. */
  schema: z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, "a lower-case SQL identifier").default("gateway"),
  /** Connections per replica (usage inserts, admin queries and stored responses share them). */
  pool_size: z.number().int().min(1).max(100).default(4),
  /** Per call (connecting included); a slower call counts as a failure: records wait or spill, reads 503. */
  timeout: timerDuration.refine((ms) => ms > 0, "must be above 0").default(5_000),
});

export type RedisConfig = z.output<typeof redisSchema>;
export type PostgresConfig = z.output<typeof postgresSchema>;
