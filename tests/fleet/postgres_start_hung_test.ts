/**
 * A gateway started while PostgreSQL hangs on the budget seeds' queries (it takes them and answers nothing) must
 * listen after about one `postgres.timeout`, however many budgets it seeds: before, it seeded one budget after
 * another, each waiting out the whole timeout, and with 12 budgeted tokens at the default 5 s the port stayed
 * closed for over a minute, while the docs say a database that is down at start does not stop the gateway.
 *
 * What is counted is the seeds that had failed when the gateway listened, not time: seeded side by side under
 * one bound, the gateway listens after one timeout with most of its 12 seeds still waiting; one after another,
 * it listened only once all 12 had failed, each after its timeout. A budgeted token is served meanwhile (as with a
 * database that refuses connections: counted from what the counter holds), and the seeds are tried again in
 * the background until the database answers.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { eventually } from "../helpers/backstop.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";
import { bytesInclude, startTcpProxy } from "../helpers/tcp_proxy.ts";

const BUDGETED = 12;
const secret = (i: number) => `gw-pg-start-hung-${String(i).padStart(2, "0")}-0123456789abcdef`;

function config(url: string, schema: string, dir: string): string {
  const tokens = Array.from(
    { length: BUDGETED },
    (_, i) =>
      `  - { name: b${i}, sha256: ${
        hashToken(secret(i))
      }, models: ["*"], budget: { tokens: 100000, period: month } }`,
  ).join("\n");
  return `
postgres: { url: "${url}", schema: ${schema}, timeout: 1s }
usage: { spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
${tokens}
`;
}

Deno.test("postgres hung at the budget seeds: the gateway listens without waiting a timeout per budget", async () => {
  const schema = randomSchema("gw_start_hung");
  const dir = await Deno.makeTempDir();
  const database = new URL(TEST_DATABASE_URL);
  // The schema's migration and the token load are answered; a budget's seed (the sum of its spend) is not.
  const proxy = startTcpProxy(Number(database.port || 5432), database.hostname, {
    stallWhen: (data) => bytesInclude(data, "FROM usage WHERE token_id"),
  });
  const throughProxy = new URL(TEST_DATABASE_URL);
  throughProxy.hostname = "127.0.0.1";
  throughProxy.port = String(proxy.port);
  let gw: TestGateway | undefined;
  try {
    gw = await startGateway(config(throughProxy.href, schema, dir));
    const listening = gw.logs.findIndex((l) => l.msg === "listening");
    const failed = gw.logs.slice(0, listening).filter((l) => l.msg === "budget_seed_failed").length;
    assert.ok(
      failed < BUDGETED,
      `listening once ${failed} of ${BUDGETED} budget seeds had waited out their timeout: it waited for every one`,
    );
    // The seeds do reach the hung database (on a loaded machine the token load may use up the start's bound,
    // and they are sent only after listening: the bound covers the whole start, so that is right too).
    await eventually("the seeds are sent to the hung database", () => proxy.stalledWhen > 0);
    assert.ok(
      gw.logs.some((l) => l.msg === "start_seeds_pending"),
      "the start says it did not wait for the seeds",
    );

    // A budgeted token is served while its seed waits on the database.
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret(BUDGETED - 1)}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
    });
    await res.body?.cancel();
    assert.equal(res.status, 200);

    // The seeds that waited out their timeout are tried again in the background, and succeed once the
    // database answers again.
    await eventually(
      "the seeds the database did not answer are pending",
      () => gw!.logs.some((l) => l.msg === "budget_seed_pending"),
    );
    proxy.up();
    await eventually(
      "the budgets are seeded once the database answers",
      () => gw!.logs.some((l) => l.msg === "budget_seed_recovered"),
    );
  } finally {
    await gw?.stop(100);
    await proxy.close();
    await dropSchema(schema);
    await Deno.remove(dir, { recursive: true });
  }
});
