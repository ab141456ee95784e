/**
 * Money budgets of tokens and teams made through the admin API stay counted across a config change
 * (docs/pricing.md): a reload that leaves one over an alias without a price (the price dropped, or a new alias a
 * token's `*` reaches) is refused with a 422 naming the owner's id and the alias, as the same budget in the file
 * makes it, and the old config keeps serving, budgets and all. One the reload could not see (the gateway started
 * on a config edited meanwhile) is warned of, and its requests to the unpriced alias are refused, never served
 * uncounted.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway, waitForLog } from "../helpers/gateway.ts";

const ADMIN = "gw-stored-budget-admin-0123456789abcdef";
const CLIENT = "gw-stored-budget-client-0123456789abcdef";
/** A dollar a token: one request spends any budget below. */
const PRICE = ", price: { input: 1000000, output: 1000000 }";

function config(price: string, usage = ""): string {
  return `
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo${price} } ] }
teams:
  file-team: { budget: { cost: 10, period: day } }
tokens:
  - { name: file-client, sha256: ${hashToken(CLIENT)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
${usage}`;
}

async function admin(gw: TestGateway, method: string, path: string, body?: unknown) {
  const response = await fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

/** A chat request's status and error code ("" when it succeeded), and its error message. */
async function chat(gw: TestGateway, secret: string, model = "chat-echo") {
  const response = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hello there" }] }),
  });
  const json = await response.json();
  return { status: response.status, code: json.error?.code ?? "", message: json.error?.message ?? "" };
}

Deno.test("reload: a stored money budget over an alias the new config does not price refuses the reload", async () => {
  const gw = await startGateway(config(PRICE));
  try {
    const team = await admin(gw, "POST", "/admin/teams", {
      name: "moneyteam",
      models: ["chat-echo"],
      budget: { cost: 10, period: "day" },
    });
    assert.equal(team.status, 201);
    const spender = await admin(gw, "POST", "/admin/tokens", {
      name: "spender",
      models: ["*"],
      budget: { cost: 10, period: "day" },
    });
    const member = await admin(gw, "POST", "/admin/tokens", {
      name: "member",
      models: ["*"],
      team: "file-team",
    });
    assert.equal(spender.status, 201);
    assert.equal(member.status, 201);
    assert.equal((await chat(gw, spender.json.token)).status, 200);
    assert.equal((await chat(gw, spender.json.token)).code, "insufficient_quota");

    // The price dropped: every stored owner whose money budget covers chat-echo is named.
    await Deno.writeTextFile(gw.configFile, config(""));
    const dropped = await admin(gw, "POST", "/admin/reload");
    assert.equal(dropped.status, 422, JSON.stringify(dropped.json));
    const paths = dropped.json.issues.map((i: { path: string }) => i.path).sort();
    assert.deepEqual(
      paths,
      [
        `admin_api.teams.${team.json.id}.budget.cost`,
        `admin_api.tokens.${member.json.id}.team`,
        `admin_api.tokens.${spender.json.id}.budget.cost`,
      ].sort(),
    );
    for (const issue of dropped.json.issues) assert.match(issue.message, /"chat-echo"/);
    // The old config serves on: the spent budget still stops the token.
    assert.equal((await chat(gw, spender.json.token)).code, "insufficient_quota");

    // A new alias without a price, reached by the token's "*".
    await Deno.writeTextFile(
      gw.configFile,
      config(PRICE).replace(
        "models:\n",
        "models:\n  chat-free: { type: chat, targets: [ { provider: local, model: echo } ] }\n",
      ),
    );
    const added = await admin(gw, "POST", "/admin/reload");
    assert.equal(added.status, 422, JSON.stringify(added.json));
    const spenderIssue = added.json.issues.find((i: { path: string }) => i.path.includes(spender.json.id));
    assert.match(spenderIssue.message, /the token "spender" \(tok_\w+\).*"chat-free"/);
    assert.equal((await chat(gw, spender.json.token, "chat-free")).code, "model_not_found");

    // Once the token's budget no longer counts money, the same reload goes through.
    await admin(gw, "PATCH", `/admin/tokens/${spender.json.id}`, { budget: { tokens: 1000, period: "day" } });
    await admin(gw, "PATCH", `/admin/tokens/${member.json.id}`, { team: null });
    const after = await admin(gw, "POST", "/admin/reload");
    assert.equal(after.status, 200, JSON.stringify(after.json));
  } finally {
    await gw.stop();
  }
});

Deno.test("start-up: a stored money budget over an unpriced alias is warned of, and its requests refused", async () => {
  const dir = await Deno.makeTempDir();
  const usage = `usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl", flush_interval: 50ms }`;
  try {
    const first = await startGateway(config(PRICE, usage));
    let capped;
    try {
      capped = await admin(first, "POST", "/admin/tokens", {
        name: "capped",
        models: ["chat-echo"],
        budget: { cost: 10, period: "day" },
      });
      assert.equal(capped.status, 201);
    } finally {
      await first.stop();
    }
    // The config was edited while the gateway was down: no reload saw the stored budget.
    const second = await startGateway(config("", usage));
    try {
      const warning = await waitForLog(second, (l) => l.msg === "budget_unpriced");
      assert.equal(warning.path, `admin_api.tokens.${capped.json.id}.budget.cost`);
      for (let i = 0; i < 3; i++) {
        const refused = await chat(second, capped.json.token);
        assert.equal(refused.status, 403);
        assert.equal(refused.code, "budget_unpriced");
        assert.match(refused.message, /`chat-echo` has no price.*money budget \(token\.budget\)/);
      }
      // A token no money budget counts uses the alias as before.
      assert.equal((await chat(second, CLIENT)).status, 200);
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
