/**
 * Budgets span restarts: each budgeted token's counter, and each team's, starts from what the usage store
 * recorded in the current period under its identity, never its name (a team's: its members' records). Seeding
 * raises a counter and never lowers it, so seeding again after a reload, or on a replica of a fleet whose shared
 * counter is already ahead, never double counts. Each function resolves to the ids of the owners whose seed failed (the usage database or the
 * shared counters were unreachable), so the caller can try them again: an owner left unseeded would start its
 * budget afresh for the rest of the period.
 *
 * @module
 */
import type { BudgetConfig } from "../config/schema.ts";
import type { ResolvedConfig, ResolvedTeam } from "../config/types.ts";
import type { Logger } from "../log.ts";
import { resolveStoredTeam } from "../tokens/resolve_stored.ts";
import { SEED_CONCURRENCY } from "../tokens/budget_seeds.ts";
import type { StoredTeam } from "../tokens/types.ts";
import type { UsageStore } from "../usage/store.ts";
import {
  type BudgetOwner,
  budgetPeriod,
  type OwnedBudgetCheck,
  ownerBudgetCheck,
  seedOwnerBudget,
  teamBudgetOwner,
} from "./budgets.ts";
import type { CounterStore } from "./counter_store.ts";

/**
 * Told of each budget seeded, with the spend the usage store recorded for it this period (settled spend, in
 * the budget's unit), before the seed counts as done: budget alerts keep their own settled spend and claims
 * (lib/alerts/policy_hooks.ts), and must start from what was spent before this process. A rejection fails
 * the owner's seed, which is tried again.
 */
export type BudgetSeeded = (budget: OwnedBudgetCheck, used: number) => Promise<void>;

/** Raises `owner`'s budget counter to the recorded spend `used`, then tells `seeded`. */
async function seedOwner(
  counters: CounterStore,
  owner: BudgetOwner,
  used: { tokens: number; cost: number },
  now: number,
  seeded: BudgetSeeded | undefined,
): Promise<void> {
  await seedOwnerBudget(counters, owner, used, now);
  const owned = seeded && ownerBudgetCheck(owner, now);
  if (owned) await seeded(owned, owned.unit === "tokens" ? used.tokens : used.cost);
}

/**
 * Runs `seed` for each of `owners`, {@linkcode SEED_CONCURRENCY} at a time, and resolves to the ids whose seed
 * failed: a database that hangs costs a seed of N owners N / SEED_CONCURRENCY calls' time, not N, and a burst
 * of owners never takes every connection of the shared pools.
 */
async function seedEach<T extends { readonly id: string }>(
  owners: Iterable<T>,
  seed: (owner: T) => Promise<boolean>,
): Promise<string[]> {
  const queue = [...owners];
  const unseeded: string[] = [];
  const worker = async () => {
    for (let owner = queue.shift(); owner !== undefined; owner = queue.shift()) {
      if (!await seed(owner)) unseeded.push(owner.id);
    }
  };
  await Promise.all(Array.from({ length: Math.min(SEED_CONCURRENCY, queue.length) }, worker));
  return unseeded;
}

function failed(logger: Logger, what: Record<string, string>, err: unknown): void {
  // A usage database or shared counter store that is down at start must not keep the gateway from serving:
  // the counter (the fleet's) is kept, and `redis.on_failure` decides meanwhile; the caller retries the seed.
  logger.warn("budget_seed_failed", { ...what, error: err instanceof Error ? err.message : String(err) });
}

/**
 * Seeds the config's tokens' budgets and every team's of `config.teams`. At start and on reload `config` is the
 * file's, so its teams are the file's; the stored teams are seeded as the token directory loads them
 * ({@linkcode seedStoredTeamBudgets}).
 */
export async function seedBudgets(
  config: ResolvedConfig,
  store: UsageStore | null,
  counters: CounterStore,
  logger: Logger,
  seeded?: BudgetSeeded,
): Promise<string[]> {
  const unseeded = await seedTokenBudgets(config.tokens.values(), store, counters, logger, seeded);
  if (store === null || !config.teams) return unseeded;
  const now = Date.now();
  unseeded.push(
    ...await seedEach(
      config.teams.values(),
      (team) => seedTeamBudget(team, store, counters, logger, now, seeded),
    ),
  );
  return unseeded;
}

/**
 * Seeds the budgets of teams made through the admin API as they appear (`TokenDirectoryOptions.seedTeamBudgets`):
 * each from the usage recorded under its id in the current period, so a team made again under the name of a
 * deleted one does not inherit that one's spend.
 */
export async function seedStoredTeamBudgets(
  teams: readonly StoredTeam[],
  store: UsageStore | null,
  counters: CounterStore,
  logger: Logger,
  seeded?: BudgetSeeded,
): Promise<string[]> {
  if (store === null) return [];
  const now = Date.now();
  const budgeted = teams.filter((team) => team.budget !== null && team.deleted_at === null);
  return await seedEach(
    budgeted,
    (team) => seedTeamBudget(resolveStoredTeam(team), store, counters, logger, now, seeded),
  );
}

/**
 * Seeds one team's budget counter from the usage recorded under its id (`team_<name>` for a config team, whose
 * name the file keeps; `tm_…` for a stored team, which a later team of its name never gets) since the period
 * began: each record names the team its token was in when the request was made, so a member revoked or moved
 * since still counts, and a team of the same name before or after this one does not. False when it failed.
 */
async function seedTeamBudget(
  team: ResolvedTeam,
  store: UsageStore,
  counters: CounterStore,
  logger: Logger,
  now: number,
  seeded: BudgetSeeded | undefined,
): Promise<boolean> {
  if (team.budget === null) return true;
  const start = new Date(budgetPeriod(team.budget.period, now).start).toISOString();
  try {
    const used = await store.sumTeamSince(team.id, start);
    await seedOwner(counters, teamBudgetOwner(team)!, used, now, seeded);
    return true;
  } catch (err) {
    failed(logger, { team: team.name }, err);
    return false;
  }
}

/** {@linkcode seedBudgets} for `tokens`: the config's, or those issued through the admin API as they appear. */
export async function seedTokenBudgets(
  tokens: Iterable<{ readonly id: string; readonly name: string; readonly budget: BudgetConfig | null }>,
  store: UsageStore | null,
  counters: CounterStore,
  logger: Logger,
  seeded?: BudgetSeeded,
): Promise<string[]> {
  if (store === null) return [];
  const now = Date.now();
  const budgeted = [...tokens].filter((token) => token.budget !== null);
  return await seedEach(budgeted, async (token) => {
    const budget = token.budget!;
    const start = new Date(budgetPeriod(budget.period, now).start).toISOString();
    try {
      const used = await store.sumSince(token.id, start);
      // Keyed like tokenBudgetOwner's (`token:<id>`), which the engine reserves against.
      const owner: BudgetOwner = { scope: "token", name: token.name, keyBase: `token:${token.id}`, budget };
      await seedOwner(counters, owner, used, now, seeded);
      return true;
    } catch (err) {
      failed(logger, { token: token.name }, err);
      return false;
    }
  });
}
