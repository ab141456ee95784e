/**
 * The SQLite usage store (and the stored responses in the same database), run in a worker thread. The request
 * thread keeps only this proxy: a batch insert becomes a few `postMessage`s of the records
 * ({@linkcode RECORDS_PER_MESSAGE} each), and the worker (`sqlite_worker.ts`) does the index updates, WAL writes
 * and checkpoints that would otherwise pause every request for milliseconds at a time.
 *
 * If the worker dies, the calls in flight reject (the pipeline keeps their records and retries, spilling them
 * if the queue fills) and the next call starts a fresh worker that reopens the database.
 *
 * @module
 */
import type { RecordListQuery, RecordPage, UsageQuery, UsageReport } from "./record.ts";
import { UsageQueryError } from "./query.ts";
import {
  recordsJson,
  type StoreAnswer,
  type StoreCall,
  type StoreFailure,
} from "./sqlite_worker_protocol.ts";
import type { UsageDatabase } from "./store.ts";
import type { Conversation, ItemsList, StoredResponse } from "./responses_store.ts";
import type { JsonObject } from "../openai/types.ts";
import {
  AuditCursorError,
  type AuditPage,
  TeamGoneError,
  TeamHasMembersError,
  TeamNameTakenError,
  TokenChangedError,
  TokenNameTakenError,
  type TokenStore,
} from "../tokens/types.ts";

/** A call without its id (distributed over the union, so each method keeps its own fields). */
type CallBody = StoreCall extends infer C ? C extends StoreCall ? Omit<C, "id"> : never : never;

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

function errorOf(failure: StoreFailure): Error {
  if (failure.name === "UsageQueryError") return new UsageQueryError(failure.message, failure.param ?? "");
  const error = new Error(failure.message);
  error.name = failure.name;
  if (failure.members !== undefined) Object.assign(error, { members: failure.members });
  return error;
}

/**
 * Records per message to the worker. Serializing a message for the worker runs on the request thread, all at
 * once: a whole 500-record batch, structured-cloned, held it for 1.3 ms on Bun in isolation and 2.5–4.5 ms
 * under load (a cluster of slow requests once per batch, every 500 ms at 1,000 requests/s); 50 records took
 * about 0.2 ms, and cost less again as one JSON string (`RecordsJson`). The worker gathers the parts
 * and still commits the batch as one transaction. The pipeline inserts one batch at a time (its lane), so parts
 * of two batches never interleave.
 */
export const RECORDS_PER_MESSAGE = 50;

/** Options for {@linkcode openSqliteWorkerStore}. */
export interface SqliteWorkerStoreOptions {
  /**
   * The worker module (default: `sqlite_worker.ts` beside this file). A single binary passes it from its entry
   * point; tests swap in one that wraps the worker to make it fail.
   */
  workerUrl?: URL;
}

/**
 * Starts the worker and opens the database at `path` in it; rejects, leaving no worker behind, when the file
 * cannot be opened or was written by a newer schema (the same errors `createSqliteStore` throws).
 */
export async function openSqliteWorkerStore(
  path: string,
  options: SqliteWorkerStoreOptions = {},
): Promise<UsageDatabase> {
  const workerUrl = options.workerUrl ?? new URL("./sqlite_worker.ts", import.meta.url);
  let worker: Worker | undefined;
  let ready: Promise<unknown> | undefined;
  let nextId = 1;
  let nextBatch = 1;
  let closed = false;
  const pending = new Map<number, Pending>();

  const failAll = (error: Error) => {
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };

  const post = (body: CallBody): Promise<unknown> => {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker!.postMessage({ ...body, id });
    });
  };

  const start = () => {
    const w = new Worker(workerUrl.href, { type: "module" });
    w.onmessage = (event: MessageEvent<StoreAnswer>) => {
      const answer = event.data;
      const p = pending.get(answer.id);
      if (p === undefined) return;
      pending.delete(answer.id);
      if (answer.ok) p.resolve(answer.value);
      else p.reject(errorOf(answer.error));
    };
    w.onerror = (event: ErrorEvent) => {
      // Handled here: an uncaught error in the worker must not take the server down with it.
      event.preventDefault();
      if (worker === w) {
        worker = undefined;
        ready = undefined;
      }
      w.terminate();
      failAll(new Error(`usage store worker failed: ${event.message}`));
    };
    worker = w;
    const opening = post({ method: "open", path });
    ready = opening;
    // A worker that cannot open the database is of no use: the next call starts over with a fresh one.
    opening.catch(() => {
      if (worker !== w) return;
      w.terminate();
      worker = undefined;
      ready = undefined;
    });
    return opening;
  };

  const call = async (body: CallBody): Promise<unknown> => {
    if (closed) throw new Error("usage store is closed");
    await (ready ?? start());
    return await post(body);
  };

  await start();

  let tokensClosed = false;
  const tokenCall = (body: CallBody) => {
    if (tokensClosed) return Promise.reject(new Error("token store is closed"));
    return call(body);
  };
  // Only this process writes the file, so `watch` is absent; `close` stops this handle's calls (the
  // database closes with the usage store).
  const tokens: TokenStore = {
    kind: "sqlite",
    async loadAll() {
      return await tokenCall({ method: "tokens.loadAll" }) as Awaited<ReturnType<TokenStore["loadAll"]>>;
    },
    async version() {
      return await tokenCall({ method: "tokens.version" }) as number;
    },
    async put(token, audit, basedOn, joins) {
      try {
        await tokenCall({ method: "tokens.put", token, audit, basedOn, joins });
      } catch (err) {
        // Rebuilt on this side of the thread boundary, so callers can tell it by its class.
        if (err instanceof Error && err.name === "TokenNameTakenError") {
          throw new TokenNameTakenError(token.name);
        }
        if (err instanceof Error && err.name === "TeamGoneError") throw new TeamGoneError(token.team ?? "");
        if (err instanceof Error && err.name === "TokenChangedError") throw new TokenChangedError(token.id);
        throw err;
      }
    },
    async putTeam(team, audit, basedOn) {
      try {
        await tokenCall({ method: "tokens.putTeam", team, audit, basedOn });
      } catch (err) {
        // As for `put`: rebuilt here, so callers can tell the refusal by its class.
        if (err instanceof Error && err.name === "TeamNameTakenError") {
          throw new TeamNameTakenError(team.name);
        }
        if (err instanceof Error && err.name === "TeamHasMembersError") {
          throw new TeamHasMembersError(team.name, (err as { members?: string[] }).members ?? []);
        }
        if (err instanceof Error && err.name === "TokenChangedError") throw new TokenChangedError(team.id);
        throw err;
      }
    },
    async audit(query) {
      try {
        return await tokenCall({ method: "tokens.audit", query }) as AuditPage;
      } catch (err) {
        // As for `put`: an unknown cursor is the caller's 400, not the store's failure.
        if (err instanceof Error && err.name === "AuditCursorError") {
          throw new AuditCursorError(query.after ?? "");
        }
        throw err;
      }
    },
    close() {
      tokensClosed = true;
      return Promise.resolve();
    },
  };

  return {
    tokens,
    responses: {
      async put(record) {
        await call({ method: "responses.put", record });
      },
      async get(rid, owner) {
        return await call({ method: "responses.get", rid, owner }) as StoredResponse | null;
      },
      async delete(rid, owner) {
        return await call({ method: "responses.delete", rid, owner }) as boolean;
      },
      async inputItems(rid, owner, page) {
        return await call({ method: "responses.inputItems", rid, owner, page }) as ItemsList | null;
      },
      async chain(rid, owner) {
        return await call({ method: "responses.chain", rid, owner }) as Conversation | null;
      },
      async items(ids, owner) {
        return await call({ method: "responses.items", ids, owner }) as (JsonObject | null)[];
      },
      async prune(before, limit) {
        return await call({ method: "responses.prune", before, limit }) as number;
      },
    },
    async insert(records) {
      // Piece by piece, each sent once the worker has taken the one before: the request thread serves requests
      // between the copies. A worker restarted part-way refuses the batch as incomplete; the pipeline retries it.
      const batch = nextBatch++;
      let staged = 0;
      for (; records.length - staged > RECORDS_PER_MESSAGE; staged += RECORDS_PER_MESSAGE) {
        const part = records.slice(staged, staged + RECORDS_PER_MESSAGE);
        await call({ method: "stage", batch, records: recordsJson(part) });
      }
      await call({
        method: "insert",
        batch,
        staged,
        records: recordsJson(staged === 0 ? records : records.slice(staged)),
      });
    },
    async query(query: UsageQuery) {
      return await call({ method: "query", query }) as UsageReport;
    },
    async listRecords(query: RecordListQuery) {
      return await call({ method: "listRecords", query }) as RecordPage;
    },
    async sumSince(tokenId, since) {
      return await call({ method: "sumSince", tokenId, since }) as { tokens: number; cost: number };
    },
    async sumTeamSince(teamId, since) {
      return await call({ method: "sumTeamSince", teamId, since }) as { tokens: number; cost: number };
    },
    async deleteOlderThan(before, limit) {
      return await call({ method: "deleteOlderThan", before, limit }) as number;
    },
    async close() {
      if (closed) return;
      closed = true;
      const w = worker;
      if (w === undefined) return;
      try {
        await post({ method: "close" });
      } finally {
        w.terminate();
        worker = undefined;
        failAll(new Error("usage store is closed"));
      }
    },
  };
}
