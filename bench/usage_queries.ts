/**
 * How fast the admin console's reads are on a month of usage records: `deno run -A bench/usage_queries.ts
 * [--records 300000] [--skip-postgres]`. Fills an SQLite file (in a temp dir) and a PostgreSQL schema (the
 * test database, `TEST_DATABASE_URL`; dropped at the end) with the same seeded records spread over 30 days,
 * then times each query the console makes (median of 5 runs after one warm-up) and prints a table.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { openPostgresStore } from "../lib/usage/postgres_store.ts";
import type { PolicyOutcome, RecordListQuery, UsageQuery } from "../lib/usage/record.ts";
import { createSqliteStore } from "../lib/usage/sqlite_store.ts";
import type { StoredUsageRecord, UsageDatabase } from "../lib/usage/store.ts";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../tests/helpers/postgres.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { records: { type: "string", default: "300000" }, "skip-postgres": { type: "boolean" } },
});
const N = Number(values.records);
const DAY = 86_400_000;
const END = Date.UTC(2026, 10, 1);
const START = END - 30 * DAY;

/** A seeded month of records: 60 tokens, 12 aliases, 4 providers, 16 models, ~4% denied, ~6% modified. */
function records(n: number): StoredUsageRecord[] {
  let seed = 42;
  const next = (k: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % k;
  };
  const out: StoredUsageRecord[] = [];
  for (let i = 0; i < n; i++) {
    const r = next(100);
    const outcome: PolicyOutcome = r < 4 ? "deny" : r < 10 ? "modify" : "allow";
    const rule = outcome === "deny"
      ? ["token.rpm", "token.tpm", "token.budget", "alias.content:secrets"][next(4)]
      : outcome === "modify"
      ? ["alias.content:pii", "token.max_tokens", "alias.content:pii,token.max_tokens"][next(3)]
      : null;
    const status = outcome === "deny"
      ? (rule === "alias.content:secrets" ? 400 : 429)
      : next(50) === 0
      ? 502
      : 200;
    const model = next(16);
    out.push({
      uid: `b-${i.toString(36)}`,
      time: new Date(START + Math.floor((i / n) * 30 * DAY) + next(1000)).toISOString(),
      request_id: `req_${i}`,
      token: `token-${next(60)}`,
      environment: ["prod", "staging", "dev"][next(3)],
      alias: `alias-${model % 12}`,
      provider: ["openai", "anthropic", "azure", "bedrock"][model % 4],
      upstream_model: `model-${model}`,
      endpoint: ["chat", "chat", "embeddings", "responses", "messages"][next(5)],
      stream: next(2) === 1,
      status,
      outcome,
      rule,
      prompt_tokens: next(2000),
      completion_tokens: next(800),
      tokens_estimated: false,
      cost: next(10_000) / 1e6,
      latency_ms: 50 + next(3000),
      ttft_ms: null,
      attempts: 1,
      error_code: status >= 500 ? "upstream_error" : null,
    });
  }
  return out;
}

const from = new Date(START).toISOString();
const USAGE: [string, UsageQuery][] = [
  ["usage 30d by hour", { from, group_by: ["hour"] }],
  ["usage 30d by day", { from, group_by: ["day"] }],
  ["usage 30d by token", { from, group_by: ["token"] }],
  ["usage 30d by alias", { from, group_by: ["alias"] }],
  ["usage 30d by provider", { from, group_by: ["provider"] }],
  ["usage 30d by upstream_model", { from, group_by: ["upstream_model"] }],
  ["usage 30d by environment", { from, group_by: ["environment"] }],
  ["policy 30d deny by rule,hour", { from, outcome: "deny", group_by: ["rule", "hour"] }],
  ["policy 30d modify by rule,day", { from, outcome: "modify", group_by: ["rule", "day"] }],
  ["policy 30d by rule", { from, group_by: ["rule"] }],
  ["usage 30d token=token-7 by hour", { from, token: "token-7", group_by: ["hour"] }],
  ["usage 1d by minute", { from: new Date(END - DAY).toISOString(), group_by: ["minute"] }],
];
const LOG: [string, RecordListQuery][] = [
  ["log first page", {}],
  ["log token=token-7", { token: "token-7" }],
  ["log outcome=deny (recent denials)", { outcome: "deny", limit: 20 }],
  ["log status=5xx", { status: { class: 5 } }],
  ["log rule=token.max_tokens", { rule: "token.max_tokens" }],
  ["log upstream_model=model-3, 30d", { upstream_model: "model-3", from }],
  ["log status=404 (no match)", { status: { code: 404 } }],
];

async function time(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    await fn();
    runs.push(performance.now() - t);
  }
  return runs.sort((a, b) => a - b)[2];
}

async function measure(name: string, db: UsageDatabase): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [label, q] of USAGE) out.set(label, await time(() => db.query(q)));
  for (const [label, q] of LOG) out.set(label, await time(() => db.listRecords(q)));
  // The page after the first: the cursor path.
  const first = await db.listRecords({});
  out.set("log second page (cursor)", await time(() => db.listRecords({ before: first.next_cursor! })));
  console.error(`${name}: measured`);
  return out;
}

const data = records(N);
const results: [string, Map<string, number>][] = [];

const dir = await Deno.makeTempDir();
const sqlite = createSqliteStore(`${dir}/usage.sqlite`, { rowsPerTransaction: 5000 });
let t = performance.now();
for (let i = 0; i < data.length; i += 5000) await sqlite.insert(data.slice(i, i + 5000));
console.error(`sqlite: inserted ${N} in ${Math.round(performance.now() - t)} ms`);
await sqlite.close();
t = performance.now();
const reopened = createSqliteStore(`${dir}/usage.sqlite`);
console.error(`sqlite: reopened (indexes ensured) in ${Math.round(performance.now() - t)} ms`);
results.push(["SQLite", await measure("sqlite", reopened)]);
await reopened.close();
await Deno.remove(dir, { recursive: true });

if (!values["skip-postgres"]) {
  const schema = randomSchema("bench_usage");
  try {
    const pg = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 60_000 });
    t = performance.now();
    for (let i = 0; i < data.length; i += 1000) await pg.insert(data.slice(i, i + 1000));
    console.error(`postgres: inserted ${N} in ${Math.round(performance.now() - t)} ms`);
    await pg.close();
    const again = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 60_000 });
    results.push(["PostgreSQL", await measure("postgres", again)]);
    await again.close();
  } finally {
    await dropSchema(schema);
  }
}

console.log(`| query (${N} records over 30 days; median ms) | ${results.map(([n]) => n).join(" | ")} |`);
console.log(`| --- | ${results.map(() => "---:").join(" | ")} |`);
for (const label of results[0][1].keys()) {
  console.log(`| ${label} | ${results.map(([, m]) => m.get(label)!.toFixed(1)).join(" | ")} |`);
}
