/**
 * A worker's proxies of the state the primary owns: the counters of limits and budgets, the usage database
 * (queries, stored responses, issued tokens and teams). Every call is one message to the primary and one
 * answer, so a reservation is decided by the one counter store every worker shares, exactly as in a single
 * process. Errors the callers tell apart by class are rebuilt on this side.
 *
 * @module
 */
import type { CounterStore, ReserveResult } from "../policy/counter_store.ts";
import { UsageQueryError } from "../usage/query.ts";
import type { ResponsesStore } from "../usage/responses_store.ts";
import type { UsageDatabase } from "../usage/store.ts";
import {
  TeamGoneError,
  TeamHasMembersError,
  TeamNameTakenError,
  TokenChangedError,
  TokenNameTakenError,
  type TokenStore,
} from "../tokens/types.ts";
import type { Channel } from "./channel.ts";

/** The counter store's methods, as the primary serves them (`counters.<name>`). */
export const COUNTER_METHODS = [
  "reserve",
  "adjust",
  "release",
  "periodGet",
  "periodAdd",
  "periodRaise",
  "settle",
  "peek",
] as const;

/** The method the primary serves the end users a worker saw under. */
export const SEEN_METHOD = "counters.seen";

/**
 * The counters, decided by the primary's store. An admission its local limiter decided (Redis away,
 * `fail_open`) names a proxy of that limiter as its `store`, so the engine settles it there, as in one process.
 * The end users a worker sees go to the primary (`seen`), which keeps the one list of recent users for every
 * worker and forgets on its own store: a worker's list, seeing part of the traffic, would forget the counters
 * of a user active on another worker.
 */
export function remoteCounterStore(channel: Channel): CounterStore {
  const proxy = (prefix: string) => {
    const store: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
    for (const name of COUNTER_METHODS) store[name] = (...args) => channel.call(`${prefix}${name}`, ...args);
    return store as unknown as CounterStore;
  };
  const shared = proxy("counters.");
  const local = proxy("counters.local.");
  return {
    ...shared,
    seen: (users) => channel.call(SEEN_METHOD, users),
    async reserve(checks) {
      const { ok, results, local: byLocal, reservation, checks: judged } = await channel.call<
        ReserveResult & { local?: boolean }
      >("counters.reserve", checks);
      // The local limiter's checks carry what it took (capped at the replica's share): settled from those,
      // named by its name for the admission (what its refund may take back from the shared counters).
      if (byLocal) {
        return {
          ok,
          results,
          store: local,
          ...(judged === undefined ? {} : { checks: judged }),
          ...(reservation === undefined ? {} : { reservation }),
        };
      }
      return reservation === undefined ? { ok, results } : { ok, results, reservation };
    },
  };
}

/** Rebuilds the errors whose class a caller tests, from their name. */
function rebuilt(err: unknown, subject: { name?: string; id: string; team?: string | null }): Error {
  if (!(err instanceof Error)) return new Error(String(err));
  switch (err.name) {
    case "UsageQueryError":
      return new UsageQueryError(err.message, (err as { param?: string }).param ?? "");
    case "TokenNameTakenError":
      return new TokenNameTakenError(subject.name ?? "");
    case "TeamNameTakenError":
      return new TeamNameTakenError(subject.name ?? "");
    case "TokenChangedError":
      return new TokenChangedError(subject.id);
    case "TeamGoneError":
      return new TeamGoneError(subject.team ?? "");
    case "TeamHasMembersError":
      return new TeamHasMembersError(subject.name ?? "", []);
  }
  return err;
}

/** Stored responses, kept by the primary (in its usage database, else in its memory). */
export function remoteResponses(channel: Channel): ResponsesStore {
  const call = async <T>(method: string, ...args: unknown[]): Promise<T> => {
    try {
      return await channel.call<T>(method, ...args);
    } catch (err) {
      throw rebuilt(err, { id: "" });
    }
  };
  return {
    put: (record) => call("responses.put", record),
    get: (id, owner) => call("responses.get", id, owner),
    delete: (id, owner) => call("responses.delete", id, owner),
    inputItems: (id, owner, page) => call("responses.inputItems", id, owner, page),
    chain: (id, owner) => call("responses.chain", id, owner),
    items: (ids, owner) => call("responses.items", ids, owner),
    prune: (before, limit) => call("responses.prune", before, limit),
  };
}

/**
 * The usage database, served by the primary (`db.<name>`, `responses.<name>`, `tokens.<name>`). Closing it
 * closes nothing: the primary's database outlives every worker.
 */
export function remoteUsageDatabase(
  channel: Channel,
  kind: TokenStore["kind"],
  onTokensChanged: () => Promise<void>,
): UsageDatabase {
  const call = async <T>(method: string, ...args: unknown[]): Promise<T> => {
    try {
      return await channel.call<T>(method, ...args);
    } catch (err) {
      throw rebuilt(err, { id: "" });
    }
  };
  const write = async (
    method: string,
    subject: { name: string; id: string; team?: string | null },
    ...args: unknown[]
  ) => {
    try {
      await channel.call(method, ...args);
    } catch (err) {
      throw rebuilt(err, subject);
    }
    // The other workers load the change before this write returns, rather than at their next poll: a token
    // revoked through one worker is refused by all of them once the revocation is answered.
    await onTokensChanged();
  };
  const tokens: TokenStore = {
    kind,
    loadAll: () => call("tokens.loadAll"),
    version: () => call("tokens.version"),
    put: (token, audit, basedOn, joins) => write("tokens.put", token, token, audit, basedOn, joins),
    putTeam: (team, audit, basedOn) => write("tokens.putTeam", team, team, audit, basedOn),
    audit: (query) => call("tokens.audit", query),
    close: () => Promise.resolve(),
  };
  return {
    tokens,
    responses: remoteResponses(channel),
    insert: (records) => call("db.insert", records),
    query: (q) => call("db.query", q),
    listRecords: (q) => call("db.listRecords", q),
    sumSince: (tokenId, since) => call("db.sumSince", tokenId, since),
    sumTeamSince: (teamId, since) => call("db.sumTeamSince", teamId, since),
    deleteOlderThan: (before, limit) => call("db.deleteOlderThan", before, limit),
    close: () => Promise.resolve(),
  };
}
