/**
 * The worker thread that owns the SQLite usage database (started by `sqlite_worker_store.ts`). Index updates,
 * WAL writes and checkpoints (with their fsync) run here, so they never pause the event loop that serves
 * requests; admin queries over a large database no longer do either.
 *
 * Protocol: each message is a {@linkcode StoreCall}; each answer a {@linkcode StoreAnswer} with the same id.
 * The first call must be `open`.
 *
 * @module
 */
import { createSqliteStore } from "./sqlite_store.ts";
import { BatchStaging, recordsOf, type StoreAnswer, type StoreCall } from "./sqlite_worker_protocol.ts";
import type { UsageDatabase } from "./store.ts";
import { lowerThreadPriority } from "../runtime/thread_priority.ts";
import { TeamHasMembersError } from "../tokens/types.ts";

/** Rows per transaction off the request thread: a whole pipeline batch is one commit. */
const ROWS_PER_TRANSACTION = 1000;

/** The worker global scope, as far as this module uses it (typed here so it checks under the window lib). */
const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<StoreCall>) => void) | null;
  postMessage(message: StoreAnswer): void;
};

// Inserts, checkpoints and admin queries must not hold up requests on a core shared with them.
lowerThreadPriority();

let store: UsageDatabase | undefined;

/** The batch being sent in parts. */
const staging = new BatchStaging();

async function answer(call: StoreCall): Promise<unknown> {
  if (call.method === "open") {
    store = createSqliteStore(call.path, { rowsPerTransaction: ROWS_PER_TRANSACTION });
    return null;
  }
  if (store === undefined) throw new Error("usage store is not open");
  switch (call.method) {
    case "stage":
      return staging.stage(call.batch, recordsOf(call.records));
    case "insert":
      return await store.insert(staging.whole(call.batch, call.staged, recordsOf(call.records)));
    case "query":
      return await store.query(call.query);
    case "listRecords":
      return await store.listRecords(call.query);
    case "sumSince":
      return await store.sumSince(call.tokenId, call.since);
    case "sumTeamSince":
      return await store.sumTeamSince(call.teamId, call.since);
    case "deleteOlderThan":
      return await store.deleteOlderThan(call.before, call.limit);
    case "close":
      return await store.close();
    case "responses.put":
      return await store.responses.put(call.record);
    case "responses.get":
      return await store.responses.get(call.rid, call.owner);
    case "responses.delete":
      return await store.responses.delete(call.rid, call.owner);
    case "responses.inputItems":
      return await store.responses.inputItems(call.rid, call.owner, call.page);
    case "responses.chain":
      return await store.responses.chain(call.rid, call.owner);
    case "responses.items":
      return await store.responses.items(call.ids, call.owner);
    case "responses.prune":
      return await store.responses.prune(call.before, call.limit);
    case "tokens.loadAll":
      return await store.tokens.loadAll();
    case "tokens.version":
      return await store.tokens.version();
    case "tokens.put":
      return await store.tokens.put(call.token, call.audit, call.basedOn, call.joins);
    case "tokens.putTeam":
      return await store.tokens.putTeam(call.team, call.audit, call.basedOn);
    case "tokens.audit":
      return await store.tokens.audit(call.query);
  }
}

scope.onmessage = (event) => {
  const call = event.data;
  answer(call).then(
    (value) => scope.postMessage({ id: call.id, ok: true, value }),
    (err: unknown) =>
      scope.postMessage({
        id: call.id,
        ok: false,
        error: {
          name: err instanceof Error ? err.name : "Error",
          message: err instanceof Error ? err.message : String(err),
          param: typeof err === "object" && err !== null && "param" in err ? String(err.param) : undefined,
          members: err instanceof TeamHasMembersError ? [...err.members] : undefined,
        },
      }),
  );
};
