/**
 * Issue 14, acceptance 3: PostgreSQL restarted (crashed: `pg_ctl stop -m immediate`) mid-run under load.
 * Every request is answered meanwhile, none waiting on the database (its record queues, then spills to the
 * local spill file), and afterwards every request has exactly one usage row: none lost, none doubled by the
 * replay. The phases are counted in requests answered, not timed: a hundred are answered while the database is
 * down, more than the usage queue holds.
 *
 * Budgets span a restart during an outage too: spend that waited in the spill file counts once replayed.
 *
 * The test runs its own PostgreSQL server on a free port (`helpers/private_postgres.ts`), so stopping it
 * disturbs no one else.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { queryOnce } from "../helpers/postgres.ts";
import { startPrivatePostgres } from "../helpers/private_postgres.ts";
import { eventually } from "../helpers/backstop.ts";

const TOKEN = "gw-pg-restart-0123456789abcdef";
const ADMIN = "gw-pg-restart-admin-0123456789abcdef";

function config(url: string, schema: string, dir: string): string {
  return `
server: { public_metrics: true }
postgres: { url: "${url}", schema: ${schema}, timeout: 3s, pool_size: 2 }
usage: { spill: "${dir}/spill.jsonl", queue_size: 40, batch_size: 20, flush_interval: 20ms }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: loader, environment: test, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;
}

Deno.test("postgres restarted under load: every request has exactly one usage row", async () => {
  const pg = await startPrivatePostgres();
  const dir = await Deno.makeTempDir();
  const schema = "gw_restart";
  const gw = await startGateway(config(pg.url, schema, dir));
  const ids: string[] = [];
  let failure: unknown;
  let running = true;
  const metrics = async () => await (await fetch(`${gw.url}/metrics`)).text();
  const worker = async () => {
    try {
      while (running) {
        const res = await fetch(`${gw.baseURL}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
        });
        await res.body?.cancel();
        assert.equal(res.status, 200);
        const id = res.headers.get("x-request-id");
        assert.ok(id, "every answer names its request");
        ids.push(id);
        await new Promise((r) => setTimeout(r, 2));
      }
    } catch (err) {
      failure ??= err;
    }
  };
  /** Waits until `n` more requests than now are answered (a worker's failure fails it at once). */
  const answered = (n: number, what: string) => {
    const target = ids.length + n;
    return eventually(what, () => {
      if (failure !== undefined) throw failure;
      return ids.length >= target;
    }, { everyMs: 10 });
  };
  try {
    const load = Array.from({ length: 8 }, worker);
    await answered(60, "60 requests answered before the outage");
    await pg.stop("immediate"); // a crash: open connections are cut, nothing is flushed politely
    await eventually(
      "the outage shows in /metrics",
      async () => /^gateway_usage_store_up 0$/m.test(await metrics()),
    );
    // Answered while the database is down: none waits on it. More than the queue's 40 records, so some spill.
    await answered(100, "100 requests answered while the database is down");
    await pg.start();
    await answered(20, "20 requests answered after the restart");
    running = false;
    await Promise.all(load);
    if (failure !== undefined) throw failure;
    assert.ok(gw.logs.some((l) => l.msg === "usage_store_failed"), "the outage is logged");

    // Every record reaches PostgreSQL once the pipeline's backoff retries and the spill file is replayed.
    const rows = async () =>
      await queryOnce(
        `SELECT COUNT(*) AS n, COUNT(DISTINCT request_id) AS d FROM "${schema}".usage`,
        [],
        pg.url,
      );
    const deadline = Date.now() + 60_000;
    let counted = await rows();
    while (Number(counted[0].n) < ids.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      counted = await rows();
    }
    assert.match(await metrics(), /^gateway_usage_store_up 1$/m, "and so does the recovery");
    // `/admin/usage` is answered from PostgreSQL.
    const admin = await fetch(`${gw.url}/admin/usage?token=loader`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(admin.status, 200);
    assert.equal((await admin.json()).totals.requests, ids.length);
    await gw.stop(); // flushes whatever is still queued
    counted = await rows();
    // The outage outlasted the in-memory bound: records went through the spill file and were replayed.
    const closed = gw.logs.find((l) => l.msg === "usage_pipeline_closed");
    assert.ok(closed && Number(closed.spilled) > 0, `spilled: ${JSON.stringify(closed)}`);
    assert.ok(Number(closed.replayed) >= Number(closed.spilled), JSON.stringify(closed));
    assert.ok(gw.logs.some((l) => l.msg === "usage_store_recovered"), "the recovery is logged");
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(Number(counted[0].n), ids.length, "one row per request, none lost or doubled");
    assert.equal(Number(counted[0].d), ids.length);
    const stored = await queryOnce(`SELECT request_id FROM "${schema}".usage`, [], pg.url);
    assert.deepEqual(stored.map((r) => String(r.request_id)).sort(), [...ids].sort());
  } finally {
    running = false;
    await gw.stop().catch(() => {});
    await pg.destroy();
    await Deno.remove(dir, { recursive: true });
  }
});

const SPENDER = "gw-pg-spender-0123456789abcdef";

/** A token of a 40-token daily budget; the usage queue holds one record, so a burst spills. */
function budgetConfig(url: string, dir: string): string {
  return `
postgres: { url: "${url}", schema: gw_budget, timeout: 2s }
usage: { spill: "${dir}/spill.jsonl", queue_size: 1, flush_interval: 50ms }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: spender, environment: test, sha256: ${
    hashToken(SPENDER)
  }, models: ["*"], budget: { tokens: 40, period: day } }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;
}

/** Sends a 10-token chat request (echo: 5 prompt + 5 completion tokens) as the spender. */
async function spend(gw: TestGateway): Promise<{ status: number; code: string | undefined }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${SPENDER}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "chat-echo",
      messages: [{ role: "user", content: "one two three four five" }],
    }),
  });
  const body = await res.json();
  return { status: res.status, code: body.error?.code };
}

/** What the spender's budget counter holds, as `/admin/explain` shows it. */
async function budgetUsed(gw: TestGateway): Promise<number> {
  const res = await fetch(`${gw.url}/admin/explain?token=spender&model=chat-echo`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  return (await res.json()).budget.used;
}

/** Polls until the spender's budget counter holds `want`, for up to `ms`; fails saying what it held. */
async function untilBudgetUsed(gw: TestGateway, want: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let used = await budgetUsed(gw);
  while (used !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    used = await budgetUsed(gw);
  }
  assert.equal(used, want, `the budget counts ${used} of the ${want} tokens spent today`);
}

Deno.test("postgres down across a restart: spend that waited in the spill file counts against the budget once replayed", async () => {
  const pg = await startPrivatePostgres();
  const dir = await Deno.makeTempDir();
  try {
    await pg.stop("fast");
    // The outage starts before the first run: every record of it ends up in the spill file.
    const first = await startGateway(budgetConfig(pg.url, dir));
    try {
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push((await spend(first)).status);
      assert.deepEqual(answers, [200, 200, 200, 200, 429]);
    } finally {
      await first.stop();
    }
    const second = await startGateway(budgetConfig(pg.url, dir));
    try {
      await pg.start();
      // The spill file is replayed when the database answers, after the gateway started serving.
      await untilBudgetUsed(second, 40, 45_000);
      assert.deepEqual(await spend(second), { status: 429, code: "insufficient_quota" });
    } finally {
      await second.stop();
    }
  } finally {
    await pg.destroy();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("postgres down when a replica starts: the budget is seeded once the database answers", async () => {
  const pg = await startPrivatePostgres();
  const dir = await Deno.makeTempDir();
  try {
    const first = await startGateway(budgetConfig(pg.url, dir).replace("queue_size: 1", "queue_size: 100"));
    try {
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push((await spend(first)).status);
      assert.deepEqual(answers, [200, 200, 200, 200, 429]);
    } finally {
      await first.stop(); // every record is in PostgreSQL
    }
    await pg.stop("fast"); // maintenance while the replica restarts
    const second = await startGateway(budgetConfig(pg.url, dir));
    try {
      assert.ok(second.logs.some((l) => l.msg === "budget_seed_failed"), "the failed seed is logged");
      await pg.start();
      await untilBudgetUsed(second, 40, 45_000);
      assert.deepEqual(await spend(second), { status: 429, code: "insufficient_quota" });
      // An info line: a binary writes it up to 10 ms after the seed, and the pipe may deliver it after the answer.
      await waitForLog(second, (l) => l.msg === "budget_seed_recovered", 5_000); // and so is the late seed
    } finally {
      await second.stop();
    }
  } finally {
    await pg.destroy();
    await Deno.remove(dir, { recursive: true });
  }
});
