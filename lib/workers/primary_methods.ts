/**
 * What the primary serves each worker: the counters (with a ledger of the concurrency slots each worker
 * holds, so a worker's death gives them back), the usage database, stored responses and token store, and
 * the reports of its requests (records into the one pipeline; the open ones remembered for a death).
 *
 * @module
 */
import { genAiOperationOf } from "../http/endpoints.ts";
import type { GatewayMetrics } from "../metrics/gateway_metrics.ts";
import type { Check, CounterStore, SeenUser, SettleOps } from "../policy/counter_store.ts";
import type { EndUserTracker } from "../policy/end_users.ts";
import type { SharedState } from "../serve_state.ts";
import type { UsageRecord } from "../usage/record.ts";
import type { Methods } from "./channel.ts";
import { COUNTER_METHODS, SEEN_METHOD } from "./remote_stores.ts";
import { diedRecord, type ReportBatch, type StartNotice } from "./report.ts";

/** A ledger key's prefix for a slot the local limiter holds (Redis away, `fail_open`), not the shared store. */
export const LOCAL_SLOT = "local\u0000";

/** One worker's share of the primary's state: its open requests and the concurrency slots it holds. */
export class WorkerLedger {
  /** Open requests by the worker's number for them. */
  readonly open = new Map<number, StartNotice>();
  /**
   * Concurrency slots held, by counter key (a key can be held several times); a slot of the local limiter's
   * under {@linkcode LOCAL_SLOT} + its key.
   */
  readonly slots = new Map<string, number>();
  /** The limiter that decided when the shared store could not (set once one did), which holds those slots. */
  local: CounterStore | undefined;

  take(key: string): void {
    this.slots.set(key, (this.slots.get(key) ?? 0) + 1);
  }

  give(key: string): void {
    const held = this.slots.get(key) ?? 0;
    if (held <= 1) this.slots.delete(key);
    else this.slots.set(key, held - 1);
  }

  /** Applies one report: starts remembered (and what was learnt of them later), records written, ends forgotten. */
  apply(batch: ReportBatch, write: (record: UsageRecord) => void): void {
    for (const start of batch.starts) this.open.set(start.n, start);
    for (const { n, ...learnt } of batch.described ?? []) {
      const start = this.open.get(n);
      if (start !== undefined) this.open.set(n, { ...start, ...learnt });
    }
    for (const record of batch.records) write(record);
    for (const n of batch.ends) this.open.delete(n);
  }
}

/**
 * The worker of `ledger` died: the requests open in it are recorded as failed (into the pipeline and `metrics`), the
 * concurrency slots it held given back. Its reservations of rates and budgets stay spent (the upstream may have
 * been called). Returns how many requests it recorded.
 */
export function settleDeadLedger(ledger: WorkerLedger, shared: SharedState, metrics: GatewayMetrics): number {
  const now = Date.now();
  let recorded = 0;
  for (const notice of ledger.open.values()) {
    const record = diedRecord(notice, now);
    if (record === null) continue;
    shared.pipeline?.write(record);
    // Counted here: the worker that would have counted it is gone. Its GenAI operation is its route's, from
    // the path and method its start told (a prewarm, which asks nothing, cannot be told apart here).
    metrics.recordRequest(record, genAiOperationOf(notice.method, notice.path));
    recorded++;
  }
  for (const [key, held] of ledger.slots) {
    // A slot the local limiter holds (Redis away when it was taken) goes back to that limiter.
    const local = key.startsWith(LOCAL_SLOT);
    const store = local ? ledger.local : shared.counters;
    const counter = local ? key.slice(LOCAL_SLOT.length) : key;
    for (let i = 0; i < held; i++) void store?.release(counter).catch(() => {});
  }
  return recorded;
}

/** What the engine may call on the store that decided, besides `release` and `settle` (which keep the ledger). */
const LOCAL_PASSED = ["adjust", "periodGet", "periodAdd", "periodRaise"] as const;

/** `ops` on `store`: in one call where it has one, else one operation at a time. */
async function settleOn(store: CounterStore, ops: SettleOps): Promise<void> {
  if (store.settle) return await store.settle(ops);
  for (const key of ops.release) await store.release(key);
  for (const { bucket, delta } of ops.adjust) await store.adjust(bucket, delta);
  for (const p of ops.periods) await store.periodAdd(p.key, p.period, p.amount, p.expiresAt, p.heldIn);
}

/**
 * The counter store's methods for one worker, keeping its ledger of concurrency slots; the end users it saw
 * go to `endUsers`, the primary's one list for every worker. Exported for tests of the worker's side.
 */
export function counterMethods(
  counters: CounterStore,
  ledger: WorkerLedger,
  endUsers: EndUserTracker,
): Methods {
  const methods: Record<string, (...args: never[]) => unknown> = {};
  for (const name of COUNTER_METHODS) {
    const method = counters[name] as ((...args: unknown[]) => Promise<unknown>) | undefined;
    methods[`counters.${name}`] = method === undefined
      ? () => Promise.reject(new Error(`the counter store has no ${name}`))
      : (...args: unknown[]) => method.apply(counters, args);
  }
  methods["counters.reserve"] = async (checks: readonly Check[]) => {
    const result = await counters.reserve(checks);
    // `store` names the store that decided, for the engine to settle with: the shared store's fallback (Redis
    // away, `fail_open`) decides on the primary's local limiter, and the worker must settle there too.
    const local = result.store !== undefined;
    if (local) ledger.local = result.store;
    if (result.ok) {
      for (const check of checks) {
        if (check.kind === "concurrency") ledger.take(local ? LOCAL_SLOT + check.key : check.key);
      }
    }
    // The shared store's name for the admission goes back with its settlement (its slots, its retries); the
    // checks as the local limiter judged them, with what it took, are what the worker's engine settles from.
    return {
      ok: result.ok,
      results: result.results,
      local,
      reservation: result.reservation,
      checks: result.checks,
    };
  };
  // What an admission the local limiter decided gives back, on that limiter.
  const onLocal = <T>(use: (store: CounterStore) => Promise<T>): Promise<T> =>
    ledger.local === undefined ? Promise.reject(new Error("no local limiter decided")) : use(ledger.local);
  methods["counters.local.release"] = (key: string) => {
    ledger.give(LOCAL_SLOT + key);
    return onLocal((local) => local.release(key));
  };
  methods["counters.local.settle"] = (ops: SettleOps) => {
    for (const key of ops.release) ledger.give(LOCAL_SLOT + key);
    return onLocal((local) => settleOn(local, ops));
  };
  for (const name of LOCAL_PASSED) {
    methods[`counters.local.${name}`] = (...args: unknown[]) =>
      onLocal((local) => (local[name] as (...a: unknown[]) => Promise<unknown>).apply(local, args));
  }
  // Forgetting touches only memory of this process (the in-memory store, Redis's local limiter): nothing to report.
  methods[SEEN_METHOD] = (users: readonly SeenUser[]) => endUsers.seen(counters, users, () => {});
  methods["counters.release"] = async (key: string) => {
    ledger.give(key);
    await counters.release(key);
  };
  methods["counters.settle"] = async (ops: SettleOps) => {
    for (const key of ops.release) ledger.give(key);
    await settleOn(counters, ops);
  };
  return methods;
}

/**
 * Every method a worker may call on the primary but `reload`, `metrics` and `usage.flush` (the supervisor's
 * own: they reach every worker).
 */
export function primaryMethods(
  shared: SharedState,
  ledger: WorkerLedger,
  endUsers: EndUserTracker,
  onTokensChanged: () => Promise<void>,
): Methods {
  const store = shared.store;
  const responses = shared.responses;
  const noStore = () => Promise.reject(new Error("no usage database"));
  const methods: Record<string, (...args: never[]) => unknown> = {
    ...counterMethods(shared.counters, ledger, endUsers),
    report: (batch: ReportBatch) => ledger.apply(batch, (r) => shared.pipeline?.write(r)),
    "tokens.changed": () => onTokensChanged(),
    "responses.put": (r: Parameters<typeof responses.put>[0]) => responses.put(r),
    "responses.get": (id: string, owner: string) => responses.get(id, owner),
    "responses.delete": (id: string, owner: string) => responses.delete(id, owner),
    "responses.inputItems": (id: string, owner: string, page: Parameters<typeof responses.inputItems>[2]) =>
      responses.inputItems(id, owner, page),
    "responses.chain": (id: string, owner: string) => responses.chain(id, owner),
    "responses.items": (ids: string[], owner: string) => responses.items(ids, owner),
    "responses.prune": (before: string, limit: number) => responses.prune(before, limit),
  };
  if (store === null) {
    for (
      const name of [
        "db.insert",
        "db.query",
        "db.listRecords",
        "db.sumSince",
        "db.sumTeamSince",
        "db.deleteOlderThan",
      ]
    ) {
      methods[name] = noStore;
    }
    return methods;
  }
  const tokens = store.tokens;
  return {
    ...methods,
    "db.insert": (records: Parameters<typeof store.insert>[0]) => store.insert(records),
    "db.query": (q: Parameters<typeof store.query>[0]) => store.query(q),
    "db.listRecords": (q: Parameters<typeof store.listRecords>[0]) => store.listRecords(q),
    "db.sumSince": (id: string, since: string) => store.sumSince(id, since),
    "db.sumTeamSince": (teamId: string, since: string) => store.sumTeamSince(teamId, since),
    "db.deleteOlderThan": (before: string, limit: number) => store.deleteOlderThan(before, limit),
    "tokens.loadAll": () => tokens.loadAll(),
    "tokens.version": () => tokens.version(),
    "tokens.put": (...a: Parameters<typeof tokens.put>) => tokens.put(...a),
    "tokens.putTeam": (...a: Parameters<typeof tokens.putTeam>) => tokens.putTeam(...a),
    "tokens.audit": (q: Parameters<typeof tokens.audit>[0]) => tokens.audit(q),
  };
}
