import assert from "node:assert/strict";
import { openSqliteWorkerStore, RECORDS_PER_MESSAGE } from "./sqlite_worker_store.ts";
import {
  BatchStaging,
  recordsJson,
  recordsOf,
  type StoreAnswer,
  type StoreCall,
} from "./sqlite_worker_protocol.ts";
import type { StoredUsageRecord } from "./store.ts";
import { countRows, makeRecord } from "../../tests/helpers/usage.ts";
import { tempDb } from "./sqlite_worker_test_helpers.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { DatabaseSync } from "node:sqlite";

function records(n: number, from = 0, overrides: (i: number) => object = () => ({})): StoredUsageRecord[] {
  return Array.from(
    { length: n },
    (_, k) => ({ ...makeRecord(from + k, overrides(from + k)), uid: `u${from + k}` }),
  );
}

Deno.test("worker store: a batch crosses to the worker in parts of at most RECORDS_PER_MESSAGE records, each sent after the last was taken", async () => {
  const { dir, path } = await tempDb();
  const store = await openSqliteWorkerStore(path);
  const sent: { method: string; records: number; answered: number }[] = [];
  let answers = 0;
  const post = Worker.prototype.postMessage;
  const dispatch = Worker.prototype.dispatchEvent;
  // Every message the proxy sends, and how many answers had come back when it was sent.
  Worker.prototype.postMessage = function (
    this: Worker,
    message: StoreCall,
    ...rest: [StructuredSerializeOptions?]
  ) {
    if (message.method === "stage" || message.method === "insert") {
      sent.push({ method: message.method, records: recordsOf(message.records).length, answered: answers });
    }
    return post.call(this, message, ...rest);
  } as Worker["postMessage"];
  Worker.prototype.dispatchEvent = function (this: Worker, event: Event) {
    if (event.type === "message") answers++;
    return dispatch.call(this, event);
  };
  try {
    await store.insert(records(5 * RECORDS_PER_MESSAGE + 7));
  } finally {
    Worker.prototype.postMessage = post;
    Worker.prototype.dispatchEvent = dispatch;
  }
  assert.deepEqual(sent.map((m) => [m.method, m.records]), [
    ...Array.from({ length: 5 }, () => ["stage", RECORDS_PER_MESSAGE]),
    ["insert", 7],
  ]);
  // Each part waited for the worker's answer to the one before: the request thread was free in between.
  assert.deepEqual(sent.map((m) => m.answered - sent[0].answered), [0, 1, 2, 3, 4, 5]);
  await store.insert(records(RECORDS_PER_MESSAGE, 10_000)); // one part: a plain insert
  await store.close();
  assert.equal(countRows(path).distinct, 5 * RECORDS_PER_MESSAGE + 7 + RECORDS_PER_MESSAGE);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("worker store: a worker that dies part-way through a batch stores none of it; the retry stores it once", async () => {
  const { dir, path } = await tempDb();
  const store = await openSqliteWorkerStore(path, {
    workerUrl: new URL("../../tests/helpers/crashing_sqlite_worker.ts", import.meta.url),
  });
  const batch = records(
    3 * RECORDS_PER_MESSAGE,
    0,
    (i) => i === RECORDS_PER_MESSAGE + 3 ? { request_id: "crash-the-worker" } : {},
  );
  await assert.rejects(() => store.insert(batch), /usage store worker failed/);
  assert.equal((await store.query({})).totals.requests, 0);
  const retried = batch.map((r, i) => i === RECORDS_PER_MESSAGE + 3 ? { ...r, request_id: "fine-now" } : r);
  await store.insert(retried);
  await store.close();
  assert.equal(countRows(path).rows, 3 * RECORDS_PER_MESSAGE);
  assert.equal(countRows(path).distinct, 3 * RECORDS_PER_MESSAGE);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("worker: a batch's last part after parts that never arrived is refused, and nothing is stored", async () => {
  const { dir, path } = await tempDb();
  const worker = new Worker(new URL("./sqlite_worker.ts", import.meta.url).href, { type: "module" });
  const answers: StoreAnswer[] = [];
  const answered = (n: number) =>
    new Promise<void>((resolve) => {
      worker.onmessage = (event: MessageEvent<StoreAnswer>) => {
        answers.push(event.data);
        if (answers.length === n) resolve();
      };
    });
  const calls: StoreCall[] = [
    { id: 1, method: "open", path },
    // What a worker restarted part-way sees: the batch's second part and its last, without the first.
    { id: 2, method: "stage", batch: 7, records: recordsJson(records(10, 10)) },
    { id: 3, method: "insert", batch: 7, staged: 20, records: recordsJson(records(5, 20)) },
    { id: 4, method: "close" },
  ];
  const done = answered(calls.length);
  for (const call of calls) worker.postMessage(call);
  await done;
  worker.terminate();
  const insert = answers.find((a) => a.id === 3);
  assert.ok(insert !== undefined && !insert.ok);
  assert.match(insert.error.message, /usage batch incomplete: 10 of its first 20 records arrived/);
  assert.equal(countRows(path).rows, 0);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("batch staging: parts join in order; another batch's part starts over; a batch is taken once", () => {
  const staging = new BatchStaging();
  assert.equal(staging.stage(1, records(2, 0)), 2);
  assert.equal(staging.stage(1, records(2, 2)), 4);
  assert.deepEqual(staging.whole(1, 4, records(1, 4)).map((r) => r.uid), ["u0", "u1", "u2", "u3", "u4"]);
  // Taken: the same batch again has no parts left.
  assert.throws(() => staging.whole(1, 4, []), /0 of its first 4/);
  assert.equal(staging.stage(2, records(3, 0)), 3);
  assert.equal(staging.stage(3, records(1, 9)), 1); // batch 2 abandoned
  assert.throws(() => staging.whole(2, 3, []), /0 of its first 3/);
  assert.deepEqual(staging.whole(4, 0, records(2, 0)).map((r) => r.uid), ["u0", "u1"]);
});

Deno.test("worker store: records crossing as JSON are stored column for column as the in-thread store stores them", async () => {
  const { dir, path } = await tempDb();
  const directPath = `${dir}/direct.sqlite`;
  // Every kind of value a record holds: optional fields absent and present, nested guardrail outcomes,
  // non-ASCII and a lone surrogate, fractions, a non-finite number, in more than one part.
  const batch = records(RECORDS_PER_MESSAGE + 3, 0, (i) =>
    i % 2 === 0
      ? {
        stream: true,
        ttft_ms: 12.5 + i,
        cost: 1 / 3,
        latency_ms: i === 4 ? Number.NaN : 0.125 * i,
        team: "tëam ✓",
        trace_id: "0af7651916cd43dd8448eb211c80319c",
        dropped: "messages[0].cache_control,top_k",
        cache: "miss",
        error_code: "upstream_timeout\ud800",
        guardrails: [{ name: "pii", phase: "input", action: "mask", types: ["email", "phone"] }],
      }
      : { token_id: undefined, team: undefined, guardrails: undefined, rule: "token.rpm", outcome: "deny" });
  const direct = createSqliteStore(directPath);
  await direct.insert(batch);
  await direct.close();
  const worker = await openSqliteWorkerStore(path);
  await worker.insert(batch);
  await worker.close();
  const rows = (file: string) => {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      return db.prepare("SELECT * FROM usage ORDER BY uid").all();
    } finally {
      db.close();
    }
  };
  const stored = rows(path);
  assert.equal(stored.length, batch.length);
  assert.deepEqual(stored, rows(directPath));
  await Deno.remove(dir, { recursive: true });
});
