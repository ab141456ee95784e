/**
 * A budget a reload adds counts what its owner spent before it (docs/spend_control.md): the requests already
 * answered whose records still wait in the usage queue (a long `usage.flush_interval`), and the requests open at
 * the reload, admitted without the budget, once they end. Each request here spends 30 tokens.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGated } from "../helpers/gated_upstream.ts";
import { startGateway, type TestGateway, waitForLog } from "../helpers/gateway.ts";

const ADMIN = "gw-reload-seed-admin-0123456789abcdef";
const CLIENT = "gw-reload-seed-client-0123456789abcdef";

function config(upstream: string, dir: string, budget: string): string {
  return `
providers:
  up: { type: openai, base_url: "${upstream}/v1", api_key: sk-test }
models:
  chat: { type: chat, targets: [ { provider: up, model: m } ] }
teams:
  crew: { ${budget ? `budget: ${budget}` : ""} }
tokens:
  - { name: alice, sha256: ${hashToken(CLIENT)}, models: ["*"], team: crew${
    budget ? `, budget: ${budget}` : ""
  } }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl", flush_interval: 10m }
`;
}

const BUDGET = "{ tokens: 100, period: day }";

async function chat(gw: TestGateway): Promise<number> {
  const response = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${CLIENT}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }),
  });
  await response.body?.cancel();
  return response.status;
}

/** What `/admin/explain` says alice's budget and her team's have used. */
async function used(gw: TestGateway): Promise<{ token: number; team: number }> {
  const response = await fetch(`${gw.url}/admin/explain?token=alice&model=chat`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  const json = await response.json();
  return { token: json.budget.used, team: json.team_budget.used };
}

async function reload(gw: TestGateway, yaml: string): Promise<void> {
  await Deno.writeTextFile(gw.configFile, yaml);
  const response = await fetch(`${gw.url}/admin/reload`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(response.status, 200, await response.text());
}

Deno.test("reload: a budget added counts the requests whose records still wait in the usage queue", async () => {
  const gated = startGated();
  gated.usage = { prompt: 20, completion: 10 };
  gated.release();
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(config(gated.baseURL, dir, ""));
  try {
    for (let i = 0; i < 3; i++) assert.equal(await chat(gw), 200);
    await reload(gw, config(gated.baseURL, dir, BUDGET));
    assert.deepEqual(await used(gw), { token: 90, team: 90 });
  } finally {
    await gw.stop();
    await gated.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("reload: a budget added counts the requests open at the reload once they end", async () => {
  const gated = startGated();
  gated.usage = { prompt: 20, completion: 10 };
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(config(gated.baseURL, dir, ""));
  try {
    const open = [chat(gw), chat(gw)];
    while (gated.arrived < 2) await new Promise((r) => setTimeout(r, 10));
    await reload(gw, config(gated.baseURL, dir, BUDGET));
    assert.deepEqual(await used(gw), { token: 0, team: 0 });
    gated.release();
    assert.deepEqual(await Promise.all(open), [200, 200]);
    await waitForLog(gw, (l) => l.msg === "budget_reseeded_after_reload" && l.open_requests_ended === true);
    assert.deepEqual(await used(gw), { token: 60, team: 60 });
    // A request after the reload is reserved in the budget on top of the spend seeded.
    assert.equal(await chat(gw), 200);
    assert.deepEqual(await used(gw), { token: 90, team: 90 });
  } finally {
    await gw.stop();
    await gated.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
