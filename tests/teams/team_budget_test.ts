/**
 * Issue 26, acceptance 2: a team budget shared by three tokens. Concurrent requests of the three, spread over
 * two gateways sharing one Redis, are admitted exactly up to the team's budget and never past it; the
 * denials are 429 `insufficient_quota` naming `team.budget`; each admitted request settles both its token's
 * budget and its team's. Team limits (`team.rpm`) are shared the same way, and `/admin/teams` and
 * `/admin/explain` show the team, its members and its spend.
 *
 * The upstream holds every admitted request until all decisions are made (gated_upstream.ts), so the counts
 * are exact, not probable. Redis is the machine's (started by .ci/run); each test has its own key prefix.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type Answer, burst, type Gated, send, startGated } from "../helpers/gated_upstream.ts";

const REDIS_URL = "redis://127.0.0.1:6379";
const ADMIN = "gw-teams-admin-0123456789abcdef";
const N = 6;
const SVC = ["svc-a", "svc-b", "svc-c"] as const;
const SECRET: Record<string, string> = Object.fromEntries(
  [...SVC, "probe", "loner"].map((name) => [name, `gw-team-${name}-0123456789abcdef`]),
);

function config(up: Gated, prefix: string | null, team: string, tokenBudget: number): string {
  const token = (name: string, extra: string) =>
    `  - { name: ${name}, sha256: ${hashToken(SECRET[name])}, models: ["*"]${extra} }`;
  return `
${prefix === null ? "" : `redis: { url: "${REDIS_URL}", key_prefix: "${prefix}", timeout: 5s }`}
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ] }
  chat-other: { type: chat, targets: [ { provider: up, model: other, retries: 0 } ] }
teams:
  payments: { description: "three services", ${team} }
tokens:
${
    SVC.map((name) => token(name, `, team: payments, budget: { tokens: ${tokenBudget}, period: day }`)).join(
      "\n",
    )
  }
${token("probe", ", limits: { tpm: 1000000 }")}
${token("loner", "")}
admin_tokens:
  - { name: ops, token: ${ADMIN} }
`;
}

/** The gateway's estimate of one request of `send`, read from a TPM-limited token's headers. */
async function estimateOf(up: Gated): Promise<number> {
  const gw = await startGateway(config(up, null, "", 1_000_000));
  try {
    const a = await send(gw, SECRET.probe);
    assert.equal(a.status, 200);
    return 1_000_000 - Number(a.headers.get("x-ratelimit-remaining-tokens"));
  } finally {
    await gw.stop();
  }
}

async function admin(gw: TestGateway, path: string): Promise<Record<string, unknown>> {
  const r = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(r.status, 200, path);
  return await r.json();
}

async function waitUntil(cond: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!await cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function byToken(answers: Answer[]): Map<string, number> {
  const ok = new Map<string, number>();
  answers.forEach((a, i) => {
    if (a.status === 200) ok.set(SVC[i % SVC.length], (ok.get(SVC[i % SVC.length]) ?? 0) + 1);
  });
  return ok;
}

Deno.test("teams: a budget shared by three tokens on two replicas is never overshot, and both budgets settle", async () => {
  const up = startGated();
  up.release();
  const estimate = await estimateOf(up);
  up.reset();
  // Real usage equal to the estimate: N requests spend the team's budget exactly.
  up.usage = { prompt: estimate - 5, completion: 5 };
  const prefix = `test:${crypto.randomUUID()}:`;
  const yaml = config(up, prefix, `budget: { tokens: ${N * estimate}, period: day }`, 100 * estimate);
  const gws = await Promise.all([startGateway(yaml), startGateway(yaml)]);
  const redis = new Redis(REDIS_URL);
  try {
    const answers = await burst(gws, up, SVC.map((s) => SECRET[s]), true, N);
    const refused = answers.filter((a) => a.status === 429);
    assert.equal(answers.filter((a) => a.status === 200).length, N, "exactly the team's budget admitted");
    assert.equal(refused.length, 2 * N);
    for (const a of refused) {
      const error = JSON.parse(a.body).error;
      assert.equal(error.code, "insufficient_quota");
      assert.match(error.message, /team payments has a budget of \d+ tokens per day/);
      assert.equal(a.headers.get("x-should-retry"), "false");
    }

    // Settled: the team's counter is the whole budget, each token's counter what that token used.
    const teamKey = async () => (await redis.keys(`${prefix}{limits}:team:team_payments:budget:tokens:*`))[0];
    await waitUntil(async () => Number(await redis.get(await teamKey() ?? "none")) === N * estimate, "team");
    for (const [name, count] of byToken(answers)) {
      const [key] = await redis.keys(`${prefix}{limits}:token:cfg_${name}:budget:tokens:*`);
      await waitUntil(async () => Number(await redis.get(key)) === count * estimate, `token ${name}`);
    }
    // No replica lets one more in, for any member; a token outside the team is not held by its budget.
    for (const gw of gws) {
      for (const name of SVC) assert.equal((await send(gw, SECRET[name])).status, 429);
    }
    up.release();
    assert.equal((await send(gws[1], SECRET.loner)).status, 200);

    // The denials are recorded as team.budget; /admin/teams and explain show the team's spend.
    await waitUntil(async () => {
      const page = await admin(gws[0], "/admin/requests?limit=100&outcome=deny");
      return (page.data as { rule: string }[]).filter((r) => r.rule === "team.budget").length >= N;
    }, "denials recorded");
    const teams = (await admin(gws[1], "/admin/teams")).data as Record<string, unknown>[];
    assert.equal(teams.length, 1);
    assert.equal(teams[0].name, "payments");
    assert.deepEqual((teams[0].members as { name: string }[]).map((m) => m.name), [...SVC]);
    const spend = teams[0].spend as Record<string, unknown>;
    assert.equal(spend.used, N * estimate);
    assert.equal(spend.remaining, 0);
    assert.equal(spend.limit, N * estimate);
    const explained = await admin(gws[0], "/admin/explain?token=svc-b&model=chat-gated");
    assert.equal((explained.token as { team: string }).team, "payments");
    assert.equal((explained.team_budget as { used: number }).used, N * estimate);
    assert.equal(explained.allowed, false);
    assert.equal((explained.denied_by as { rule: string }).rule, "team.budget");
  } finally {
    up.release();
    redis.disconnect();
    await Promise.all(gws.map((gw) => gw.stop()));
    await up.stop();
  }
});

Deno.test("teams: team.rpm is shared by the members; a team's models bound its tokens'", async () => {
  const up = startGated();
  up.release();
  const yaml = config(up, null, "limits: { rpm: 4 }, models: [chat-gated]", 1_000_000);
  const gw = await startGateway(yaml);
  try {
    const answers: Answer[] = [];
    for (let i = 0; i < 8; i++) answers.push(await send(gw, SECRET[SVC[i % 3]]));
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 429, 429, 429, 429]);
    const error = JSON.parse(answers[4].body).error;
    assert.equal(error.code, "rate_limit_exceeded");
    assert.match(error.message, /^Rate limit reached for team payments on requests per min \(RPM\): Limit 4/);
    // The member's own headers show the team's limit, the tightest that applies.
    assert.equal(answers[0].headers.get("x-ratelimit-limit-requests"), "4");
    assert.equal((await send(gw, SECRET.loner)).status, 200, "a token outside the team has its own limits");
    // svc-a's own models are ["*"], its team's [chat-gated]: chat-other is out of its reach, not the loner's.
    const other = { model: "chat-other" };
    const narrowed = await send(gw, SECRET["svc-a"], false, other);
    assert.equal(narrowed.status, 404, narrowed.body);
    assert.equal(JSON.parse(narrowed.body).error.code, "model_not_found");
    assert.equal((await send(gw, SECRET.loner, false, other)).status, 200);
  } finally {
    await gw.stop();
    await up.stop();
  }
});

const MEMBER_B = "gw-team-member-b-0123456789abcdef";

/** A config team of a 40-token daily budget with one config member, and the echo model (10 tokens a request). */
function restartConfig(dir: string): string {
  return `
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
teams:
  payments: { budget: { tokens: 40, period: day } }
tokens:
  - { name: member-b, sha256: ${hashToken(MEMBER_B)}, models: ["*"], team: payments }
admin_tokens:
  - { name: ops, token: ${ADMIN} }
usage: { sqlite: "${dir}/usage.sqlite", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
`;
}

async function adminCall(gw: TestGateway, method: string, path: string, body?: unknown) {
  const r = await fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await r.json();
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

/** A 10-token request (echo: 5 prompt + 5 completion tokens); its status and error code. */
async function echo(gw: TestGateway, secret: string): Promise<[number, string | undefined]> {
  const r = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "chat-echo",
      messages: [{ role: "user", content: "one two three four five" }],
    }),
  });
  const body = await r.json();
  return [r.status, body.error?.code];
}

/** What the team has spent of its budget this period, as `/admin/teams/{name}` shows it. */
async function teamUsed(gw: TestGateway, name: string): Promise<number> {
  return (await adminCall(gw, "GET", `/admin/teams/${name}`)).spend.used;
}

Deno.test("teams: what a member spent counts against the team's budget after a restart, though the member was revoked", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const first = await startGateway(restartConfig(dir));
    try {
      const a = await adminCall(first, "POST", "/admin/tokens", {
        name: "member-a",
        models: ["*"],
        team: "payments",
      });
      for (let i = 0; i < 3; i++) assert.deepEqual(await echo(first, a.token), [200, undefined]);
      await adminCall(first, "DELETE", `/admin/tokens/${a.id}`);
      assert.equal(await teamUsed(first, "payments"), 30);
      await waitUntil(
        async () => (await adminCall(first, "GET", "/admin/usage?team=payments")).totals.total_tokens === 30,
        "the records",
      );
    } finally {
      await first.stop();
    }
    const second = await startGateway(restartConfig(dir));
    try {
      assert.equal(await teamUsed(second, "payments"), 30, "the revoked member's spend is still the team's");
      assert.deepEqual(await echo(second, MEMBER_B), [200, undefined]);
      assert.deepEqual(await echo(second, MEMBER_B), [429, "insufficient_quota"]);
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("teams: a team made through the admin API again under a deleted one's name starts afresh after a restart", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const first = await startGateway(restartConfig(dir));
    let member;
    try {
      await adminCall(first, "POST", "/admin/teams", {
        name: "growth",
        budget: { tokens: 40, period: "day" },
      });
      const old = await adminCall(first, "POST", "/admin/tokens", {
        name: "old",
        models: ["*"],
        team: "growth",
      });
      for (let i = 0; i < 3; i++) assert.deepEqual(await echo(first, old.token), [200, undefined]);
      await adminCall(first, "DELETE", `/admin/tokens/${old.id}`);
      await adminCall(first, "DELETE", "/admin/teams/growth");
      await adminCall(first, "POST", "/admin/teams", {
        name: "growth",
        budget: { tokens: 40, period: "day" },
      });
      member = await adminCall(first, "POST", "/admin/tokens", {
        name: "new",
        models: ["*"],
        team: "growth",
      });
      assert.deepEqual(await echo(first, member.token), [200, undefined]);
      assert.equal(await teamUsed(first, "growth"), 10);
      await waitUntil(
        async () => (await adminCall(first, "GET", "/admin/usage?team=growth")).totals.total_tokens === 40,
        "the records",
      );
    } finally {
      await first.stop();
    }
    const second = await startGateway(restartConfig(dir));
    try {
      assert.equal(await teamUsed(second, "growth"), 10, "only what the new team spent");
      for (let i = 0; i < 3; i++) assert.deepEqual(await echo(second, member.token), [200, undefined]);
      assert.deepEqual(await echo(second, member.token), [429, "insufficient_quota"]);
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
