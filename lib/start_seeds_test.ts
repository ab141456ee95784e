/**
 * How long a start waits for the stored tokens and the budgets' seeds before it listens: bounded by one
 * PostgreSQL call's time where they are read from PostgreSQL, and not at all where they are read from SQLite
 * (counters in Redis or not): a bound of `redis.timeout` would have a healthy start with a few hundred budgets
 * say `start_seeds_pending` and serve them from empty counters.
 */
import assert from "node:assert/strict";
import { awaitStartSeeds, startSeedWaitMs } from "./start_seeds.ts";
import type { PostgresConfig } from "./config/schema.ts";
import type { Logger } from "./log.ts";

Deno.test("start seeds: bounded by postgres.timeout with PostgreSQL, unbounded without it", () => {
  const postgres = { timeout: 5_000 } as PostgresConfig;
  assert.equal(startSeedWaitMs({ postgres }), 5_000);
  assert.equal(startSeedWaitMs({ postgres: null }), undefined, "SQLite");
  const sqliteAndRedisCounters = { postgres: null, redis: { timeout: 50 } };
  assert.equal(startSeedWaitMs(sqliteAndRedisCounters), undefined, "SQLite with counters in Redis");
});

Deno.test("start seeds: without PostgreSQL the start waits for seeding however long it takes, and says nothing", async () => {
  const sqliteAndRedisCounters = { postgres: null, redis: { timeout: 50 } };
  const warnings: string[] = [];
  const logger = { warn: (msg: string) => warnings.push(msg) } as unknown as Logger;
  let finish = () => {};
  const seeding = new Promise<void>((resolve) => finish = resolve);
  let over = false;
  const waiting = awaitStartSeeds(seeding, sqliteAndRedisCounters, logger).then(() => over = true);
  // Longer than any Redis timeout a configuration would have (redis.timeout is 50 ms by default).
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(over, false, "still waiting for the seeds");
  finish();
  await waiting;
  assert.deepEqual(warnings, []);
});
