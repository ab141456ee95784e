/**
 * What a start waits for from the shared stores before it listens: the tokens issued through the admin API
 * loaded, then every budget seeded from the recorded usage; for one call's time of those stores at most, in
 * all, however many tokens and budgets there are. A database that accepts connections and never answers must
 * not keep the port closed (the docs promise that a database down at start does not stop the gateway), and
 * one whose calls each wait out `postgres.timeout` would otherwise cost it once per budget.
 *
 * What is not over by then goes on in the background, as it does for a database that refuses connections: the
 * token directory keeps loading (its tokens are served once loaded), a seed that fails is retried, and requests
 * are served meanwhile with the counters as they are, each budget raised to its recorded spend once seeded.
 *
 * @module
 */
import type { ResolvedConfig } from "./config/types.ts";
import type { Logger } from "./log.ts";

/**
 * How long the start waits: one call's time of PostgreSQL (`postgres.timeout`; budgets are seeded side by
 * side, so this is not per budget), where the stored tokens and the recorded usage are read. Without it they
 * are read from SQLite, which does not hang on a network, and there is no bound: counters in Redis do not need
 * one (a Redis that hangs fails the first seed's call at `redis.timeout`, and the counters' breaker answers the
 * others at once), and `redis.timeout` (50 ms by default) is no time to read a few hundred budgets' spend.
 */
export function startSeedWaitMs(config: Pick<ResolvedConfig, "postgres">): number | undefined {
  return config.postgres?.timeout;
}

/**
 * Resolves once `seeding` (the token load, then the seeds) is over, or after {@linkcode startSeedWaitMs}
 * (said as `start_seeds_pending`): it goes on in the background then. Never rejects.
 */
export async function awaitStartSeeds(
  seeding: Promise<void>,
  config: Pick<ResolvedConfig, "postgres">,
  logger: Logger,
): Promise<void> {
  const work = seeding.catch(() => {}); // each part logs its own failure, and retries it
  const waitMs = startSeedWaitMs(config);
  if (waitMs === undefined) return await work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const over = await Promise.race([
    work.then(() => true),
    new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), waitMs)),
  ]);
  clearTimeout(timer);
  if (!over) {
    logger.warn("start_seeds_pending", {
      waited_ms: waitMs,
      detail:
        "serving meanwhile: stored tokens once loaded, each budget raised to its recorded spend once seeded",
    });
  }
}
