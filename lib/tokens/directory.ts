/**
 * The tokens and teams made through the admin API as the request path sees them: loaded from the token store,
 * kept current (notifications, and a version check every second as the safety net), and merged into each
 * request's config (teams first, so stored tokens resolve against the config's teams and the stored ones).
 *
 * Fail static: when the store cannot be read, the tokens loaded last keep authenticating, and `status()`
 * (for `/readyz`) and the metrics say so; a replica that loses its database keeps serving the tokens it knew.
 * A replica that has never loaded them (it started while the store was down) knows none: until its first load
 * succeeds (`unloaded()`), a token the config file does not have may be a stored one, and is answered 503
 * (`auth/authenticate.ts`), which clients retry, never the 401 of a bad key, which they do not.
 * One log line per change of state (unreachable, recovered), never one per failed check.
 *
 * @module
 */
import type { ResolvedConfig } from "../config/types.ts";
import type { Logger } from "../log.ts";
import type { GatewayMetrics } from "../metrics/gateway_metrics.ts";
import { createBudgetSeeds, servedRows } from "./budget_seeds.ts";
import { mergeStoredTeams, mergeStoredTokens } from "./resolve_stored.ts";
import { unpricedBudgetIssue, unpricedStoredBudgets } from "./stored_budget_prices.ts";
import type { StoredTeam, StoredToken, TokenStore } from "./types.ts";

/** What `/readyz` and the metrics say about the token store. */
export interface TokenDirectoryStatus {
  readonly store: TokenStore["kind"];
  /** False while the store cannot be read: the tokens loaded last keep serving (fail static). */
  readonly ok: boolean;
  readonly error: string | null;
  /** ISO time of the last successful load, or null before the first. */
  readonly loaded_at: string | null;
  /** Stored tokens loaded (revoked ones not counted). */
  readonly count: number;
  readonly version: number;
}

/** Stored tokens, merged into the request path's config. */
export interface TokenDirectory {
  readonly store: TokenStore;
  /**
   * `state` with the stored teams in its config's `teams` and the stored tokens in its token map (config teams
   * and tokens win a name clash). Memoized on the state and the loaded version, so the request path pays two
   * reference checks.
   */
  apply<S extends { readonly config: ResolvedConfig }>(state: S): S;
  /** Loads from the store now (after this process's own change, before answering it). Never rejects. */
  refresh(): Promise<void>;
  status(): TokenDirectoryStatus;
  /** True until a load of the store has succeeded: the stored tokens are not known yet, not known to be none. */
  unloaded(): boolean;
  /** The stored tokens loaded last, revoked ones included, ordered by name then id (the admin API lists these). */
  tokens(): readonly StoredToken[];
  /** The stored teams loaded last (not deleted), ordered by name then id. */
  teams(): readonly StoredTeam[];
  /** Stops watching and polling. */
  close(): Promise<void>;
}

/** Options of {@linkcode createTokenDirectory}. */
export interface TokenDirectoryOptions {
  readonly store: TokenStore;
  readonly logger: Logger;
  /** Where `gateway_token_store_up` and `gateway_tokens_loaded` are registered. */
  readonly metrics?: GatewayMetrics;
  /** How often the store's version is checked, in ms (the safety net under `watch`). */
  readonly pollMs?: number;
  /**
   * Called with a stored token whose budget (by id, unit and period) this process has not seeded yet, so its
   * counter starts from the usage already recorded (as config tokens' do), a few at a time
   * (`SEED_CONCURRENCY`). The budget is not served until the first call for it is over (`budget_seeds.ts`);
   * the token's other changes are. Resolves to the ids of those whose seed failed (nothing: none): they are
   * served meanwhile and offered again (see {@linkcode SEED_RETRY_MAX_MS}) until seeded. Must not reject.
   */
  readonly seedBudgets?: (tokens: readonly StoredToken[]) => Promise<readonly string[] | void>;
  /**
   * Called with a stored team whose budget (by id, unit and period) this process has not seeded yet, and every
   * stored token loaded with it, so a team's counter starts from its recorded usage, as a config team's does;
   * its budget waits as a token's does. Resolves to the ids of those whose seed failed, offered again as
   * tokens' are. Must not reject.
   */
  readonly seedTeamBudgets?: (
    teams: readonly StoredTeam[],
    tokens: readonly StoredToken[],
  ) => Promise<readonly string[] | void>;
}

export { SEED_RETRY_MAX_MS } from "./budget_seeds.ts";

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Loads the store's tokens now and keeps them current until `close()`. */
export function createTokenDirectory(options: TokenDirectoryOptions): TokenDirectory {
  const { store, logger } = options;
  const pollMs = options.pollMs ?? 1_000;
  let loaded: readonly StoredToken[] = [];
  let loadedTeams: readonly StoredTeam[] = [];
  /** What `apply` merges: `loaded`, but for budgets waiting for their first seed (`servedRows`). */
  let served: { tokens: readonly StoredToken[]; teams: readonly StoredTeam[] } = { tokens: [], teams: [] };
  let version = -1;
  /** Bumped whenever `loaded` is replaced: what `apply`'s memo is keyed on beside the state. */
  let generation = 0;
  let ok = true;
  let error: string | null = null;
  let loadedAt: string | null = null;
  let count = 0;
  let closed = false;
  const serve = () => {
    served = servedRows(loaded, loadedTeams, served, seeds.pending);
    generation++;
  };
  // A budget's first seed over (seeded or failed): what waited for it is served.
  const seeds = createBudgetSeeds(options, pollMs, serve);
  const clashesLogged = new Set<string>();
  let memo: { state: unknown; generation: number; result: unknown } | null = null;
  /**
   * A money budget stored over an alias the config gives no price (a reload refuses that, but not one made on
   * another replica after, or a start on a config edited meanwhile): said once each; its requests there are
   * refused (`http/accounting.ts`).
   */
  const unpricedLogged = new Set<string>();
  const warnUnpriced = (config: ResolvedConfig) => {
    for (const found of unpricedStoredBudgets(config, loaded, loadedTeams)) {
      const key = `${found.id}\u0000${found.field}\u0000${found.aliases.join(",")}`;
      if (unpricedLogged.has(key)) continue;
      unpricedLogged.add(key);
      logger.warn("budget_unpriced", {
        ...unpricedBudgetIssue(found),
        refused: "its requests to these aliases",
      });
    }
  };

  const up = options.metrics?.registry.gauge(
    "gateway_token_store_up",
    "1 while the token store (tokens issued through the admin API) can be read, 0 while the tokens loaded last serve.",
    [],
  );
  const loadedGauge = options.metrics?.registry.gauge(
    "gateway_tokens_loaded",
    "Tokens issued through the admin API that this replica has loaded (revoked ones not counted).",
    [],
  );
  up?.set([], 1);
  loadedGauge?.set([], 0);

  const failed = (err: unknown) => {
    // A call the shutdown ended (the store closes under it): not an outage worth a line.
    if (closed) return;
    const message = messageOf(err);
    if (ok) logger.warn("token_store_unreachable", { store: store.kind, error: message, count });
    ok = false;
    error = message;
    up?.set([], 0);
  };
  const succeeded = () => {
    if (!ok) logger.info("token_store_recovered", { store: store.kind, count, version });
    ok = true;
    error = null;
    up?.set([], 1);
  };

  /**
   * Loads the store and serves what it holds at once, seeds apart: resolves to the seeds that what was loaded
   * waits for. Not awaited by the next load, so a revoke is served however long the seeds of others take.
   */
  const loadOnce = async (): Promise<{ seeding: Promise<void> }> => {
    if (closed) return { seeding: Promise.resolve() };
    try {
      const result = await store.loadAll();
      if (result.version !== version) {
        loaded = result.tokens;
        // A store written before teams were stored (or a test's) may answer without them: none.
        loadedTeams = result.teams ?? [];
        version = result.version;
        serve();
        count = loaded.filter((t) => t.revoked_at === null).length;
        loadedGauge?.set([], count);
      }
      loadedAt = new Date().toISOString();
      succeeded();
      return { seeding: seeds.start(loaded, loadedTeams) };
    } catch (err) {
      failed(err);
      return { seeding: Promise.resolve() };
    }
  };

  // Loads run one at a time. A caller gets a load that starts after its call (so it sees every write made
  // before it), shared with the other callers that came while that load was still waiting its turn; it
  // resolves once the first seeds of the budgets that load found pending are over, so the replica that made a
  // token answers once it serves it. The next load waits for the load only.
  let queue: Promise<unknown> = Promise.resolve();
  let waiting: Promise<void> | null = null;
  const refresh = (): Promise<void> => {
    if (waiting !== null) return waiting;
    const loading = queue.then(() => {
      waiting = null;
      return loadOnce();
    });
    queue = loading;
    const next = loading.then(({ seeding }) => seeding);
    waiting = next;
    return next;
  };

  let timer: ReturnType<typeof setTimeout> | undefined;
  let polling: Promise<void> = Promise.resolve();
  const poll = async () => {
    timer = undefined;
    try {
      const current = await store.version();
      if (current !== version || !ok || seeds.retryDue()) await refresh();
    } catch (err) {
      failed(err);
    }
    if (!closed) timer = setTimeout(() => polling = poll(), pollMs);
  };

  let unwatch: (() => Promise<void>) | null = null;
  const watching = store.watch?.(() => void refresh()).then(
    (stop) => {
      if (closed) return stop();
      unwatch = stop;
    },
    (err) => logger.warn("token_store_watch_failed", { store: store.kind, error: messageOf(err) }),
  );

  void refresh();
  timer = setTimeout(() => polling = poll(), pollMs);

  return {
    store,
    apply<S extends { readonly config: ResolvedConfig }>(state: S): S {
      if (memo !== null && memo.state === state && memo.generation === generation) return memo.result as S;
      let result = state;
      if (served.tokens.length > 0 || served.teams.length > 0) {
        // Teams first: a stored token resolves its team from the merged map.
        const { teams, clashes: teamClashes } = mergeStoredTeams(state.config, served.teams);
        for (const team of teamClashes) {
          if (clashesLogged.has(team.id)) continue;
          clashesLogged.add(team.id);
          logger.warn("team_name_clash", {
            team: team.name,
            id: team.id,
            detail: "a team of the config file has this name; the stored team is not served",
          });
        }
        const config = teams === state.config.teams ? state.config : { ...state.config, teams };
        const { tokens, clashes } = mergeStoredTokens(config, served.tokens, served.teams);
        for (const token of clashes) {
          if (clashesLogged.has(token.id)) continue;
          clashesLogged.add(token.id);
          logger.warn("token_name_clash", {
            token: token.name,
            id: token.id,
            detail: "a token of the config file has this name; the stored token is not served",
          });
        }
        result = { ...state, config: Object.freeze({ ...config, tokens }) };
        warnUnpriced(state.config);
      }
      memo = { state, generation, result };
      return result;
    },
    refresh,
    status: () => ({ store: store.kind, ok, error, loaded_at: loadedAt, count, version }),
    unloaded: () => loadedAt === null,
    tokens: () => loaded,
    teams: () => loadedTeams,
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      await polling;
      await watching;
      await (unwatch as (() => Promise<void>) | null)?.();
      await queue;
      await seeds.idle();
    },
  };
}
