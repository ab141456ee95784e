/**
 * The budget seeds of the tokens and teams made through the admin API, for the token directory: each budget
 * (by owner id, unit and period) is seeded once, so its counter starts from the usage already recorded, as a
 * config token's does. Seeds run beside the loads, never in front of them: a change that takes access away
 * (a revoke, a disable, a rotation) is served as soon as it is loaded, however slow the seeds of other owners
 * are. What waits for a seed is only what the seed protects: a budget not tried yet is not served
 * ({@linkcode servedRows}), so no request spends against a counter that was never raised to the period's
 * recorded usage. A seed that failed is served meanwhile (as a budget of the config is) and tried again at
 * doubling waits, in the background.
 *
 * @module
 */
import type { StoredTeam, StoredToken } from "./types.ts";

/** The longest wait before a failed budget seed is offered again; the first wait is one poll. */
export const SEED_RETRY_MAX_MS = 30_000;
/**
 * How many seeds run at once (here, and in each list of `policy/seed_budgets.ts`: the seeds at start, on
 * reload, after a replay): one slow usage database or Redis must not make N budgets wait N seeds in a row, nor
 * may a burst of new tokens take every connection of the shared pools.
 */
export const SEED_CONCURRENCY = 4;

/** The callbacks of `TokenDirectoryOptions`: each resolves to the ids whose seed failed, and never rejects. */
export interface BudgetSeedCallbacks {
  readonly seedBudgets?: (tokens: readonly StoredToken[]) => Promise<readonly string[] | void>;
  readonly seedTeamBudgets?: (
    teams: readonly StoredTeam[],
    tokens: readonly StoredToken[],
  ) => Promise<readonly string[] | void>;
}

/** The seeds of one directory. */
export interface BudgetSeeds {
  /** Whether `owner`'s budget waits for its first seed to finish (never tried, or being tried the first time). */
  pending(owner: StoredToken | StoredTeam): boolean;
  /**
   * Starts the seeds not under way of the budgets among `tokens` and `teams` never tried, and of those that
   * failed when their retry is due. Resolves once every budget among them that was pending is tried.
   */
  start(tokens: readonly StoredToken[], teams: readonly StoredTeam[]): Promise<void>;
  /** Whether a failed seed waits to be offered again and its wait is over. */
  retryDue(): boolean;
  /** Resolves once the seeds under way are over. */
  idle(): Promise<void>;
}

/** The key a budget is seeded under: its owner, unit and period (a budget in another unit starts afresh). */
export function budgetSeedKey(owner: StoredToken | StoredTeam): string | null {
  const budget = owner.budget;
  if (budget === null) return null;
  if ("revoked_at" in owner && owner.revoked_at !== null) return null;
  return `${owner.id}\u0000${budget.tokens === undefined ? "cost" : "tokens"}\u0000${budget.period}`;
}

/**
 * Makes the seeds of one directory. `onTried` is called whenever a budget's first seed is over (seeded or
 * failed), so the directory serves what waited for it.
 */
export function createBudgetSeeds(
  callbacks: BudgetSeedCallbacks,
  pollMs: number,
  onTried: () => void,
): BudgetSeeds {
  const seeded = new Set<string>();
  /** Tried and failed: served meanwhile, offered again at `retryAt`. */
  const failed = new Set<string>();
  const running = new Map<string, Promise<void>>();
  let retryAt = 0;
  let retryMs = pollMs;
  let retrying = false;

  let active = 0;
  const slots: (() => void)[] = [];
  const limited = async <T>(work: () => Promise<T>): Promise<T> => {
    if (active >= SEED_CONCURRENCY) await new Promise<void>((resolve) => slots.push(resolve));
    else active++;
    try {
      return await work();
    } finally {
      const next = slots.shift();
      if (next) next(); // the slot passes on as it is
      else active--;
    }
  };

  const tryOne = async (key: string, id: string, seed: () => Promise<readonly string[] | void>) => {
    const first = !failed.has(key);
    let ok = false;
    try {
      ok = !((await limited(seed)) ?? []).includes(id);
    } catch {
      // The callbacks must not reject; one that does failed its seed.
    }
    running.delete(key);
    if (ok) {
      seeded.add(key);
      failed.delete(key);
    } else {
      // The first failure waits one retry period; a retry round sets its own wait when it is over.
      if (failed.size === 0 && !retrying) {
        retryAt = Date.now() + retryMs;
        retryMs = Math.min(SEED_RETRY_MAX_MS, retryMs * 2);
      }
      failed.add(key);
    }
    if (first) onTried();
  };

  const pending = (owner: StoredToken | StoredTeam): boolean => {
    const key = budgetSeedKey(owner);
    if (key === null || seeded.has(key) || failed.has(key)) return false;
    return "revoked_at" in owner
      ? callbacks.seedBudgets !== undefined
      : callbacks.seedTeamBudgets !== undefined;
  };

  const retryDue = () => failed.size > 0 && !retrying && Date.now() >= retryAt;

  return {
    pending,
    retryDue,
    start(tokens, teams) {
      const retry = retryDue();
      const waits: Promise<void>[] = [];
      const retries: Promise<void>[] = [];
      const consider = (owner: StoredToken | StoredTeam, seed: () => Promise<readonly string[] | void>) => {
        const key = budgetSeedKey(owner);
        if (key === null || seeded.has(key)) return;
        const wasPending = pending(owner);
        let run = running.get(key);
        if (run === undefined && (wasPending || (retry && failed.has(key)))) {
          run = tryOne(key, owner.id, seed);
          running.set(key, run);
          if (!wasPending) retries.push(run);
        }
        if (wasPending && run !== undefined) waits.push(run);
      };
      const { seedBudgets, seedTeamBudgets } = callbacks;
      if (seedBudgets) { for (const token of tokens) consider(token, () => seedBudgets([token])); }
      if (seedTeamBudgets) {
        for (const team of teams) {
          consider(team, () => seedTeamBudgets([team], tokens));
        }
      }
      if (retries.length > 0) {
        retrying = true;
        void Promise.all(retries).then(() => {
          retrying = false;
          if (failed.size === 0) retryMs = pollMs;
          else {
            retryAt = Date.now() + retryMs;
            retryMs = Math.min(SEED_RETRY_MAX_MS, retryMs * 2);
          }
        });
      }
      return Promise.all(waits).then(() => {});
    },
    async idle() {
      while (running.size > 0) await Promise.all(running.values());
    },
  };
}

/**
 * The rows served while budgets wait for their first seed. A budget never seeded is not served: a new token
 * whose budget is pending is left out, and one whose budget changed keeps the budget it was served with
 * (seeded) until the new one is tried; the same for a team, and a token joining a team not served before keeps
 * the team it had (or is left out, if new). Everything else in a row (revoked, disabled, secrets, models...)
 * is served as loaded, at once.
 */
export function servedRows(
  tokens: readonly StoredToken[],
  teams: readonly StoredTeam[],
  before: { readonly tokens: readonly StoredToken[]; readonly teams: readonly StoredTeam[] },
  pending: (owner: StoredToken | StoredTeam) => boolean,
): { tokens: readonly StoredToken[]; teams: readonly StoredTeam[] } {
  const teamsBefore = new Map(before.teams.map((t) => [t.id, t]));
  /** Teams whose budget waits and that were not served before: their members wait with them. */
  const newPending = new Set<string>();
  const servedTeams = teams.map((team) => {
    if (!pending(team)) return team;
    const was = teamsBefore.get(team.id);
    if (was === undefined) {
      newPending.add(team.id);
      return team;
    }
    return { ...team, budget: was.budget };
  });
  // Nothing waits (the usual case): the loaded arrays themselves.
  if (newPending.size === 0 && servedTeams.every((t, i) => t === teams[i]) && !tokens.some(pending)) {
    return { tokens, teams };
  }
  const tokensBefore = new Map(before.tokens.map((t) => [t.id, t]));
  const servedTokens: StoredToken[] = [];
  for (const token of tokens) {
    const own = pending(token);
    const joins = token.revoked_at === null && token.team_id != null && newPending.has(token.team_id);
    if (!own && !joins) {
      servedTokens.push(token);
      continue;
    }
    const was = tokensBefore.get(token.id);
    if (was === undefined) continue;
    servedTokens.push({
      ...token,
      ...(own ? { budget: was.budget } : {}),
      ...(joins ? { team: was.team, team_id: was.team_id } : {}),
    });
  }
  return { tokens: servedTokens, teams: servedTeams };
}
