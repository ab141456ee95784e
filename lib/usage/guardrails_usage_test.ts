/**
 * A usage record's `guardrails` (what the guardrails did to the request: name, phase, action, the kinds of
 * content found; never the text) in the SQLite store (on the request thread and in its worker) and the
 * PostgreSQL store: written and read back (null when none or absent), bounded when written, found by the
 * request log's `guardrail=`, and kept in a JSONL line (through the pipeline too). The PostgreSQL case runs in
 * CI always; off CI it skips only when the database is unreachable.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createMemoryLogger } from "../log.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../../tests/helpers/postgres.ts";
import { makeRecord, readJsonl } from "../../tests/helpers/usage.ts";
import { createUsagePipeline } from "./pipeline.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { UsageQueryError } from "./query.ts";
import { boundedGuardrails, GUARDRAIL_LIMITS, type GuardrailOutcome } from "./record.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import { entryLine, type UsageDatabase } from "./store.ts";

const PII: GuardrailOutcome[] = [
  { name: "pii", phase: "input", action: "mask", types: ["email", "phone"] },
  { name: "moderation", phase: "output", action: "flag", types: ["violence"] },
];
const DENIED: GuardrailOutcome[] = [{ name: "secrets", phase: "input", action: "deny", types: ["api_key"] }];
const FAILED: GuardrailOutcome[] = [
  { name: "moderation", phase: "input", action: "error", error: "guardrail service timed out" },
];

/** 20 outcomes of 20 types each, with names and types longer than 64 characters. */
function oversized(): GuardrailOutcome[] {
  return Array.from({ length: 20 }, (_, i) => ({
    name: `g${i}-${"n".repeat(100)}`,
    phase: "output",
    action: "replace",
    types: Array.from({ length: 20 }, (_, j) => `t${j}-${"t".repeat(100)}`),
    error: "e".repeat(100),
  }));
}

function assertBounded(outcomes: GuardrailOutcome[] | null | undefined): void {
  assert.ok(outcomes);
  assert.equal(outcomes.length, GUARDRAIL_LIMITS.outcomes);
  for (const [i, o] of outcomes.entries()) {
    assert.equal(o.name, `g${i}-${"n".repeat(100)}`.slice(0, 64));
    assert.equal(o.types?.length, GUARDRAIL_LIMITS.types);
    assert.ok(o.types?.every((t) => t.length === 64));
    assert.equal(o.error, "e".repeat(64));
  }
}

async function assertGuardrails(db: UsageDatabase): Promise<void> {
  const { guardrails: _g, ...absent } = makeRecord(4);
  await db.insert([
    { ...makeRecord(1, { guardrails: PII, outcome: "modify", rule: "guardrail:pii" }), uid: "u1" },
    {
      ...makeRecord(2, { guardrails: DENIED, outcome: "deny", status: 400, rule: "guardrail:secrets" }),
      uid: "u2",
    },
    { ...makeRecord(3, { guardrails: null }), uid: "u3" },
    { ...absent, uid: "u4" },
    { ...makeRecord(5, { guardrails: FAILED }), uid: "u5" },
    { ...makeRecord(6, { guardrails: [] }), uid: "u6" },
    { ...makeRecord(7, { guardrails: oversized() }), uid: "u7" },
  ]);
  const log = (await db.listRecords({})).data;
  assert.deepEqual(log.map((r) => [r.request_id, r.guardrails]).slice(1), [
    ["req_6", null],
    ["req_5", FAILED],
    ["req_4", null],
    ["req_3", null],
    ["req_2", DENIED],
    ["req_1", PII],
  ]);
  assert.deepEqual(log[1], makeRecord(6), "the whole record reads back as written (no outcome: null)");
  assert.deepEqual(log.at(-1), makeRecord(1, { guardrails: PII, outcome: "modify", rule: "guardrail:pii" }));
  assertBounded(log[0].guardrails);

  const of = async (guardrail: string, extra = {}) =>
    (await db.listRecords({ guardrail, ...extra })).data.map((r) => r.request_id);
  assert.deepEqual(await of("moderation"), ["req_5", "req_1"]);
  assert.deepEqual(await of("pii"), ["req_1"]);
  assert.deepEqual(await of("secrets", { outcome: "deny" }), ["req_2"]);
  assert.deepEqual(await of("secrets", { outcome: "allow" }), []);
  assert.deepEqual(await of("nobody"), []);
  assert.deepEqual(await of("g3-" + "n".repeat(61)), ["req_7"], "the stored (cut) name");
  assert.deepEqual(await of("%"), [], "no pattern matching");
  const page = await db.listRecords({ guardrail: "moderation", limit: 1 });
  assert.deepEqual(page.data.map((r) => r.request_id), ["req_5"]);
  const next = await db.listRecords({ guardrail: "moderation", limit: 1, before: page.next_cursor! });
  assert.deepEqual(next.data.map((r) => r.request_id), ["req_1"]);
  for (const bad of ["", "x".repeat(65), 7 as unknown as string]) {
    await assert.rejects(
      db.listRecords({ guardrail: bad }),
      (e) => e instanceof UsageQueryError && e.param === "guardrail",
    );
  }
  // `/admin/usage` counts a guardrail's denials by its rule, as before.
  assert.deepEqual((await db.query({})).totals.denials, { "guardrail:secrets": 1 });
}

Deno.test("usage guardrails: round-trip, bound and filter in the SQLite store, on the request thread and in the worker", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "usage-guardrails-" });
    const db = await open(`${dir}/usage.sqlite`);
    try {
      await assertGuardrails(db);
    } finally {
      await db.close();
    }
    const file = new DatabaseSync(`${dir}/usage.sqlite`);
    const stored = file.prepare("SELECT guardrails FROM usage WHERE uid = 'u1'").get();
    assert.equal(stored?.guardrails, JSON.stringify(PII), "JSON text");
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("usage guardrails: round-trip, bound and filter in the PostgreSQL store", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("usageguard");
  const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  try {
    await assertGuardrails(db);
    const [row] = await queryOnce(
      `SELECT guardrails::text AS text, json_typeof(guardrails) AS type FROM "${schema}".usage WHERE uid = 'u2'`,
    );
    assert.deepEqual([JSON.parse(String(row.text)), row.type], [DENIED, "array"]);
  } finally {
    await db.close();
    await dropSchema(schema);
  }
});

Deno.test("usage guardrails: a record that is not an array of outcomes is stored without them", async () => {
  const db = createSqliteStore(":memory:");
  try {
    const odd = [
      "deny",
      null,
      { name: "x", phase: "during", action: "deny" },
      { name: "y", phase: "input", action: "explode" },
      { name: 5, phase: "input", action: "deny" },
      { name: "ok\u0000", phase: "input", action: "deny", types: ["a", 7, "b"], text: "the matched text" },
    ];
    await db.insert([
      { ...makeRecord(1, { guardrails: { name: "x" } as unknown as GuardrailOutcome[] }), uid: "u1" },
      { ...makeRecord(2, { guardrails: odd as unknown as GuardrailOutcome[] }), uid: "u2" },
    ]);
    const log = (await db.listRecords({})).data;
    assert.deepEqual(log.map((r) => r.guardrails), [
      [{ name: "ok\uFFFD", phase: "input", action: "deny", types: ["a", "b"] }],
      null,
    ]);
  } finally {
    await db.close();
  }
});

Deno.test("usage guardrails: bounded guardrails cuts lists and strings and keeps known fields only", () => {
  assertBounded(boundedGuardrails(oversized()));
  assert.equal(boundedGuardrails(null), null);
  assert.equal(boundedGuardrails([]), null);
  assert.deepEqual(boundedGuardrails(PII), PII);
  // A cut that splits a surrogate pair leaves no lone half.
  const [cut] = boundedGuardrails([{ name: "a".repeat(63) + "😀", phase: "input", action: "flag" }])!;
  assert.equal(cut.name, "a".repeat(63) + "\uFFFD");
});

Deno.test("usage guardrails: a JSONL or spill line keeps them, bounded", async () => {
  assert.deepEqual(
    JSON.parse(entryLine({ record: makeRecord(1, { guardrails: PII }), uid: "u1" })).guardrails,
    PII,
  );
  assert.equal(JSON.parse(entryLine({ record: makeRecord(1), uid: "u1" })).guardrails, null);
  const big = { record: makeRecord(1, { guardrails: oversized() }), uid: "u1" };
  assertBounded(JSON.parse(entryLine(big)).guardrails);
  assert.equal(big.record.guardrails?.length, 20, "the caller's record is left as it was");

  const dir = await Deno.makeTempDir({ prefix: "usage-guardrails-jsonl-" });
  try {
    const jsonlPath = `${dir}/usage.jsonl`;
    const pipeline = createUsagePipeline({
      store: null,
      jsonlPath,
      spillPath: `${dir}/spill.jsonl`,
      queueSize: 100,
      batchSize: 10,
      flushIntervalMs: 20,
      logger: createMemoryLogger(),
    });
    pipeline.write(makeRecord(1, { guardrails: DENIED }));
    pipeline.write(makeRecord(2));
    await pipeline.close();
    const lines = await readJsonl(jsonlPath);
    assert.deepEqual(lines.map((l) => [l.request_id, l.guardrails]), [["req_1", DENIED], ["req_2", null]]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
