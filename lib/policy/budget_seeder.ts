/**
 * Keeps the budget counters of one gateway (one process, or the primary of `serve --workers`) seeded from the
 * usage store, not only once at start: records can reach the store after the start-up seed, and those the
 * counters never counted must raise them too. The spill file left by the last run is replayed in the
 * background after the gateway already serves, so a token whose spend of this period waited there would
 * otherwise start its budget without it. Seeding only raises a counter, so seeding again is always safe.
 *
 * @module
 */
import type { ResolvedConfig } from "../config/types.ts";
import type { Logger } from "../log.ts";
import type { StoredTeam, StoredToken } from "../tokens/types.ts";
import type { UsageStore } from "../usage/store.ts";
import type { CounterStore } from "./counter_store.ts";
import { seedBudgets, seedStoredTeamBudgets, seedTokenBudgets } from "./seed_budgets.ts";

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
  /** Resolves once the seeds started so far are over. */
  idle(): Promise<void>;
}

/** Makes a {@linkcode BudgetSeeder}; seeds run one at a time. */
export function createBudgetSeeder(options: BudgetSeederOptions): BudgetSeeder {
  const { store, counters, logger } = options;
  let config = options.config;
  let chain: Promise<void> = Promise.resolve();
  let waiting: Promise<void> | null = null;

  const seedAll = async () => {
    const stored = options.stored?.() ?? null;
    const tokens = stored?.tokens() ?? [];
    await seedBudgets(config, store, counters, logger, tokens);
    if (stored === null) return;
    await seedTokenBudgets(tokens.filter((t) => t.revoked_at === null), store, counters, logger);
    await seedStoredTeamBudgets(stored.teams(), tokens, store, counters, logger);
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
    idle: () => chain,
  };
}
