/**
 * The Redis and PostgreSQL side of `--shared`: where they are (REDIS_URL and DATABASE_URL when set, else the
 * services every development and CI machine runs), a key prefix and a schema of this run's own (so two runs,
 * or a run beside the test suites, never share counters or tables), and dropping both at the end (a bench
 * leaves nothing behind in a shared Redis or database).
 *
 * @module
 */
import { log } from "./process.ts";

const RUN_ID = `${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`;

/** The environment `bench/config_shared.yaml` reads. */
export const SHARED_ENV = {
  BENCH_REDIS_URL: Deno.env.get("REDIS_URL") ?? "redis://127.0.0.1:6379",
  BENCH_REDIS_PREFIX: `gw-bench-${RUN_ID}:`,
  BENCH_DATABASE_URL: Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test",
  BENCH_PG_SCHEMA: `gw_bench_${RUN_ID}`,
};

/** Drops this run's schema and deletes its keys; a failure is logged, never thrown (the results still count). */
export async function dropSharedState(): Promise<void> {
  try {
    const { default: postgres } = await import("postgres");
    const sql = postgres(SHARED_ENV.BENCH_DATABASE_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 });
    try {
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${SHARED_ENV.BENCH_PG_SCHEMA} CASCADE`);
    } finally {
      await sql.end({ timeout: 5 });
    }
    log(`dropped schema ${SHARED_ENV.BENCH_PG_SCHEMA}`);
  } catch (err) {
    log(`could not drop schema ${SHARED_ENV.BENCH_PG_SCHEMA}: ${err instanceof Error ? err.message : err}`);
  }
  try {
    const { Redis } = await import("ioredis");
    const redis = new Redis(SHARED_ENV.BENCH_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      let cursor = "0";
      let deleted = 0;
      do {
        const [next, keys] = await redis.scan(
          cursor,
          "MATCH",
          `${SHARED_ENV.BENCH_REDIS_PREFIX}*`,
          "COUNT",
          1000,
        );
        cursor = next;
        if (keys.length > 0) deleted += await redis.unlink(...keys);
      } while (cursor !== "0");
      log(`deleted ${deleted} Redis keys under ${SHARED_ENV.BENCH_REDIS_PREFIX}`);
    } finally {
      redis.disconnect();
    }
  } catch (err) {
    log(
      `could not delete keys under ${SHARED_ENV.BENCH_REDIS_PREFIX}: ${
        err instanceof Error ? err.message : err
      }`,
    );
  }
}
