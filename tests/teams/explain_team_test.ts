/**
 * `/admin/explain` resolves a token the way the request path does, its team included, so that what it says
 * agrees with what enforcement did. Tokens in teams (a file token and an issued one in the file's team `research`
 * with `rpm: 1`, an issued one in a team made through the admin API with a 10-token budget and a model scope)
 * each send until the team's rule denies them; explain names that rule, the team, its limits and its spend. Then
 * the issued tokens are revoked: explain still explains them with their team, their guardrails and the team's
 * model scope (it resolves a revoked token itself, as it is in no token map, and once did so without its team).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const ADMIN = "gw-explain-team-admin-0123456789abcdef";
const FILE_MEMBER = "gw-explain-team-file-0123456789abcdef";

function config(dir: string): string {
  return `
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  chat-other: { type: chat, targets: [ { provider: local, model: echo } ] }
guardrails:
  no-cards: { type: pii, entities: [CREDIT_CARD] }
teams:
  research: { limits: { rpm: 1 } }
tokens:
  - { name: file-member, sha256: ${hashToken(FILE_MEMBER)}, models: ["*"], team: research }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
`;
}

type Json = Record<string, unknown>;

async function call(gw: TestGateway, method: string, path: string, body?: unknown, secret = ADMIN) {
  const r = await fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() as Json };
}

async function admin(gw: TestGateway, method: string, path: string, body?: unknown): Promise<Json> {
  const answer = await call(gw, method, path, body);
  assert.ok(answer.status < 300, `${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** A 10-token echo request (5 prompt + 5 completion tokens): its status and error code. */
async function chat(gw: TestGateway, secret: string, model = "chat-echo"): Promise<[number, unknown]> {
  const { status, body } = await call(gw, "POST", "/v1/chat/completions", {
    model,
    messages: [{ role: "user", content: "one two three four five" }],
  }, secret);
  return [status, (body.error as Json | undefined)?.code];
}

interface Explained {
  allowed: boolean;
  denied_by: { rule: string; status: number; code: string } | null;
  token: { name: string; status: string; team: string | null };
  checks: { rule: string; ok: boolean | null }[];
  limits: { rule: string; limit: number; used: number | null }[];
  team_budget: { used: number | null; limit: number } | null;
  guardrails: { rule: string }[];
}

async function explain(gw: TestGateway, token: string, model = "chat-echo"): Promise<Explained> {
  return await admin(gw, "GET", `/admin/explain?token=${token}&model=${model}`) as unknown as Explained;
}

/** The rule explain says denies, with the status the client gets. */
function denial(e: Explained): [string | undefined, number | undefined] {
  return [e.denied_by?.rule, e.denied_by?.status];
}

/** The team's rate limit as explain shows it: the rule, its limit and what is used. */
function teamRpm(e: Explained) {
  return e.limits.filter((l) => l.rule === "team.rpm").map((l) => [l.limit, l.used]);
}

Deno.test("explain: tokens in a team are explained with the team's rules, as enforcement applies them", async () => {
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(config(dir));
  try {
    const payments = await admin(gw, "POST", "/admin/teams", {
      name: "payments",
      budget: { tokens: 10, period: "month" },
      models: ["chat-echo"],
    });
    const payer = await admin(gw, "POST", "/admin/tokens", {
      name: "api-payer",
      models: ["*"],
      team: "payments",
      guardrails: ["no-cards"],
    });
    assert.equal(payer.team_id, payments.id);
    const researcher = await admin(gw, "POST", "/admin/tokens", {
      name: "api-researcher",
      models: ["*"],
      team: "research",
    });

    // Live tokens: enforcement denies on the team's rule, and explain says so.
    assert.deepEqual(await chat(gw, String(researcher.token)), [200, undefined]);
    assert.deepEqual(await chat(gw, String(researcher.token)), [429, "rate_limit_exceeded"]);
    assert.deepEqual(await chat(gw, FILE_MEMBER), [429, "rate_limit_exceeded"], "the team's rpm is shared");
    for (const name of ["api-researcher", "file-member"]) {
      const e = await explain(gw, name);
      assert.equal(e.token.team, "research", name);
      assert.deepEqual(denial(e), ["team.rpm", 429], name);
      assert.deepEqual(teamRpm(e), [[1, 1]], name);
    }
    assert.deepEqual(await chat(gw, String(payer.token)), [200, undefined]);
    assert.deepEqual(await chat(gw, String(payer.token)), [429, "insufficient_quota"]);
    assert.deepEqual(await chat(gw, String(payer.token), "chat-other"), [404, "model_not_found"]);
    let e = await explain(gw, "api-payer");
    assert.equal(e.token.team, "payments");
    assert.deepEqual(denial(e), ["team.budget", 429]);
    assert.deepEqual([e.team_budget?.used, e.team_budget?.limit], [10, 10]);
    assert.deepEqual(denial(await explain(gw, "api-payer", "chat-other")), ["token.models", 404]);

    // Revoked, they are in no token map: explain resolves them itself, and must do it with their team.
    await admin(gw, "DELETE", `/admin/tokens/${researcher.id}`);
    await admin(gw, "DELETE", `/admin/tokens/${payer.id}`);
    e = await explain(gw, "api-researcher");
    assert.deepEqual([e.token.status, e.token.team], ["revoked", "research"]);
    assert.deepEqual(denial(e), ["token.status", 401]);
    assert.deepEqual(teamRpm(e), [[1, 1]], "the team's limit, as it was served");
    e = await explain(gw, "api-payer");
    assert.deepEqual([e.token.status, e.token.team], ["revoked", "payments"]);
    assert.deepEqual([e.team_budget?.used, e.team_budget?.limit], [10, 10], "the team's spend");
    assert.deepEqual(e.guardrails.map((g) => g.rule), ["guardrail:no-cards"]);
    const scope = (await explain(gw, "api-payer", "chat-other")).checks.find((c) =>
      c.rule === "token.models"
    );
    assert.equal(scope?.ok, false, "the team's model scope narrows the token's models");
  } finally {
    await gw.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
