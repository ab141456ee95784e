/**
 * `GET /admin/usage?group_by=team_id` over HTTP, on an in-process gateway with a real usage pipeline and SQLite
 * store: each team's group says the team's name beside its id (`key.team`), as a token's group says the token's,
 * so an operator reads "payments", not `team_payments` or `tm_4f…`. A team that is gone (deleted through the
 * admin API, or removed from the file) keeps the name its records carry; requests of no team are one group
 * that names none.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { parseConfigText } from "../../lib/config/load.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { createUsagePipeline } from "../../lib/usage/pipeline.ts";
import { createSqliteStore } from "../../lib/usage/sqlite_store.ts";
import type { UsageDatabase } from "../../lib/usage/store.ts";
import { makeRecord } from "../helpers/usage.ts";

const MEMBER = "gw-team-labels-member-0123456789";
const LONER = "gw-team-labels-loner-0123456789";
const ADMIN = "gw-team-labels-admin-0123456789";

const CONFIG = `
providers: { local: { type: builtin } }
models:
  chat-echo:
    type: chat
    targets: [ { provider: local, model: echo } ]
teams:
  payments: { description: "Card payments" }
tokens:
  - { name: payments-api, sha256: ${hashToken(MEMBER)}, models: ["*"], team: payments }
  - { name: loner, sha256: ${hashToken(LONER)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;

type Call = (path: string, init?: RequestInit) => Promise<Response>;

async function withGateway(fn: (call: Call, store: UsageDatabase) => Promise<void>): Promise<void> {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  assert.ok(result.ok);
  const state = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const store = createSqliteStore(":memory:");
  const dir = await Deno.makeTempDir();
  const pipeline = createUsagePipeline({
    store,
    spillPath: `${dir}/spill.jsonl`,
    queueSize: 1000,
    batchSize: 500,
    flushIntervalMs: 60_000,
    retryMaxMs: 50,
    logger,
  });
  const handler = createGateway({
    state: () => state,
    logger,
    services: {
      usage: pipeline,
      usageStore: {
        flush: () => pipeline.flush(),
        query: (q) => store.query(q),
        listRecords: (q) => store.listRecords(q),
      },
    },
  });
  try {
    await fn((path, init) => handler(new Request(`http://gw.test${path}`, init)), store);
  } finally {
    await pipeline.close();
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const admin = { headers: { authorization: `Bearer ${ADMIN}` } };

async function chat(call: Call, token: string): Promise<void> {
  const res = await call("/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
}

interface Group {
  key: Record<string, string | null>;
  requests: number;
}

async function groups(call: Call, query: string): Promise<[Record<string, string | null>, number][]> {
  const res = await call(`/admin/usage?${query}`, admin);
  assert.equal(res.status, 200);
  return (await res.json()).groups.map((g: Group) => [g.key, g.requests]);
}

Deno.test("admin usage: group_by=team_id names each team beside its id, a team gone since by its records' name", async () => {
  await withGateway(async (call, store) => {
    // A team made through the admin API, spent, and deleted since: its records are all that is left of it.
    await store.insert([{
      ...makeRecord(1, {
        token: "growth-bot",
        token_id: "tok_0123456789abcdef",
        team: "growth",
        team_id: "tm_gone",
      }),
      time: new Date(Date.now() - 60_000).toISOString(),
      uid: "gone-1",
    }]);
    await chat(call, MEMBER);
    await chat(call, MEMBER);
    await chat(call, LONER);

    assert.deepEqual(await groups(call, "group_by=team_id"), [
      [{ team_id: null, team: null }, 1],
      [{ team_id: "team_payments", team: "payments" }, 2],
      [{ team_id: "tm_gone", team: "growth" }, 1],
    ]);
    // With another key, and on a page of one group, the name comes along.
    assert.deepEqual(await groups(call, "group_by=team_id,alias&team_id=team_payments"), [
      [{ team_id: "team_payments", alias: "chat-echo", team: "payments" }, 2],
    ]);
    assert.deepEqual(await groups(call, "group_by=team_id&limit=1&offset=2"), [
      [{ team_id: "tm_gone", team: "growth" }, 1],
    ]);
    // Grouped by name as well, the name is that key's value, not said twice.
    assert.deepEqual(await groups(call, "group_by=team,team_id&team=payments"), [
      [{ team: "payments", team_id: "team_payments" }, 2],
    ]);
  });
});
