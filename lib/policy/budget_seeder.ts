/**
 * Keeps the budget counters of one gateway (one process, or the primary of `serve --workers`) seeded from the
 * usage store, not only once at start: records can reach the store after the start-up seed, and those the
 * counters never counted must raise them too. The spill file left by the last run is replayed in the
 * background after the gateway already serves, so a token whose spend of this period waited there would
 * otherwise start its budget without it. Seeding only raises a counter, so seeding again is always safe.
 *
 * A seed that fails (the usage database, or the shared counters, unreachable at start) stays pending and is
 * tried again on a timer, backing off from {@linkcode SEED_RETRY_MIN_MS} to {@linkcode SEED_RETRY_MAX_MS},
 * until every owner is seeded: a replica restarted during a database outage must not hand each token a fresh
 * budget for the rest of the period. Requests are served meanwhile, counted from what the counter held (zero
 * on the in-memory counters), and the counter is raised to the recorded spend once the seed succeeds.
 *
 * The start waits for the first seed for a bounded time only (`lib/start_seeds.ts`): a seed still running
 * then goes on in the background, and is retried as above if it fails.
 *
 * @module
 */
import type { ResolvedConfig } from "../config/types.ts";
import type { Logger } from "../log.ts";
import type { StoredTeam, StoredToken } from "../tokens/types.ts";
import type { UsageStore } from "../usage/store.ts";
import type { CounterStore } from "./counter_store.ts";
import { type BudgetSeeded, seedBudgets, seedStoredTeamBudgets, seedTokenBudgets } from "./seed_budgets.ts";

/** The first wait before a failed seed is tried again; it doubles up to {@linkcode SEED_RETRY_MAX_MS}. */
export const SEED_RETRY_MIN_MS = 1_000;
/** The longest wait between tries of a failed seed. */
export const SEED_RETRY_MAX_MS = 30_000;
/**
 * How long a reload's second seed waits for the requests open at the swap: a stream that never ends must not
 * keep the budget from counting those that did end (seeded then with what was recorded by that time).
 */
export const RESEED_AFTER_RELOAD_MAX_MS = 10 * 60_000;

/** The tokens and teams made through the admin API as last loaded (the token directory's). */
export interface StoredOwners {
  tokens(): readonly StoredToken[];
  teams(): readonly StoredTeam[];
}

/** Options of {@linkcode createBudgetSeeder}. */
export interface BudgetSeederOptions {
  readonly store: UsageStore | null;
  readonly counters: CounterStore;
  readonly logger: Logger;
  /** The config seeded until {@linkcode BudgetSeeder.seed} names another. */
  readonly config: ResolvedConfig;
  /** Null without a token store. Read at each seed, so it may be bound after the seeder is made. */
  readonly stored?: () => StoredOwners | null;
  /** Told of each budget seeded (budget alerts start their settled spend from it). */
  readonly seeded?: BudgetSeeded;
  /** Stores the usage records still queued (the pipeline's flush), before a reload's seeds read the store. */
  readonly flush?: () => Promise<void>;
}

/** Seeds the budgets of the config's tokens and teams, and of the stored ones. */
export interface BudgetSeeder {
  /** Seeds `config`'s budgets and every stored owner's now, and remembers `config` for later seeds. */
  seed(config: ResolvedConfig): Promise<void>;
  /**
   * Seeds everything again in the background: records reached the store that the counters may not have
   * counted (a spill file was replayed). Never rejects; a seed already waiting covers this call too.
   */
  reseed(): void;
  /**
   * A reload swapped `config` in: the records still queued are stored and `config` is seeded now, so a budget
   * the reload added counts the requests already answered; once `over` resolves (the requests open at the swap
   * have ended and handed over their records), or after {@linkcode RESEED_AFTER_RELOAD_MAX_MS}, they are
   * stored and seeded again, since those requests were admitted without the budget and never reserved in it.
   */
  reloaded(config: ResolvedConfig, over: Promise<unknown>): Promise<void>;
  /** Resolves once the seeds started so far are over. */
  idle(): Promise<void>;
  /** Stops retrying a failed seed; resolves once the seed under way (if any) is over. */
  close(): Promise<void>;
}

/** Makes a {@linkcode BudgetSeeder}; seeds run one at a time. */
export function createBudgetSeeder(options: BudgetSeederOptions): BudgetSeeder {
  const { store, counters, logger, seeded } = options;
  let config = options.config;
  let chain: Promise<void> = Promise.resolve();
  let waiting: Promise<void> | null = null;
  let closed = false;
  /** Owners whose last seed failed (0: none pending), the wait before the next try, and its timer. */
  let pending = 0;
  let retryMs = SEED_RETRY_MIN_MS;
  let retry: ReturnType<typeof setTimeout> | undefined;
  /** The bounds of the reloads' second seeds still waiting for their requests, cleared at close. */
  const later = new Set<ReturnType<typeof setTimeout>>();
  const flush = () =>
    (options.flush?.() ?? Promise.resolve()).catch((err) =>
      // What could not be stored spills; the seed goes on with what the store has.
      logger.warn("budget_seed_flush_failed", { error: err instanceof Error ? err.message : String(err) })
    );
  // Each owner's failure is logged on the first try; a retry that fails again only says how many are left.
  const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };

  const seedAll = async () => {
    if (closed) return;
    const log = pending > 0 ? quiet : logger;
    const stored = options.stored?.() ?? null;
    const tokens = stored?.tokens() ?? [];
    const unseeded = await seedBudgets(config, store, counters, log, seeded);
    if (stored !== null) {
      const live = tokens.filter((t) => t.revoked_at === null);
      unseeded.push(...await seedTokenBudgets(live, store, counters, log, seeded));
      unseeded.push(...await seedStoredTeamBudgets(stored.teams(), store, counters, log, seeded));
    }
    settled(unseeded.length);
  };

  /** Arms the retry while owners stay unseeded; says when they are seeded at last. */
  const settled = (unseeded: number) => {
    if (closed) return; // ended by the shutdown: nothing is retried, and nothing is worth saying
    if (unseeded === 0) {
      if (pending > 0) logger.info("budget_seed_recovered", { owners: pending });
      pending = 0;
      retryMs = SEED_RETRY_MIN_MS;
      return;
    }
    logger.warn("budget_seed_pending", { owners: unseeded, retry_in_ms: retryMs });
    pending = unseeded;
    if (retry === undefined && !closed) {
      retry = setTimeout(() => {
        retry = undefined;
        void queue();
      }, retryMs);
    }
    retryMs = Math.min(SEED_RETRY_MAX_MS, retryMs * 2);
  };

  /** Queues a seed, or joins one still waiting its turn (it will read everything when it starts). */
  const queue = (): Promise<void> => {
    if (waiting !== null) return waiting;
    const next = chain.then(() => {
      waiting = null;
      return seedAll();
    }).catch((err) =>
      logger.error("budget_seed_crashed", { error: err instanceof Error ? err.message : String(err) })
    );
    waiting = next;
    chain = next;
    return next;
  };

  return {
    seed(next) {
      config = next;
      return queue();
    },
    reseed() {
      void queue();
    },
    async reloaded(next, over) {
      await flush();
      config = next;
      await queue();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, RESEED_AFTER_RELOAD_MAX_MS);
        later.add(timer);
      });
      // Seeding only raises a counter to what the store recorded, so this second seed never counts twice.
      const ended = over.then(() => true, () => true);
      void Promise.race([ended, bound.then(() => false)]).then(async (requestsEnded) => {
        clearTimeout(timer);
        later.delete(timer!);
        if (closed) return;
        await flush();
        await queue();
        // Said once the second seed is done: whether the requests open at the swap ended or the wait ran out.
        logger.info("budget_reseeded_after_reload", { open_requests_ended: requestsEnded });
      });
    },
    idle: () => chain,
    close() {
      closed = true;
      clearTimeout(retry);
      retry = undefined;
      for (const timer of later) clearTimeout(timer);
      later.clear();
      return chain;
    },
  };
}
