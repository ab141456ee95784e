/**
 * A team's spend belongs to the team, not to its name: a team made through the admin API spends and is deleted,
 * and a team later given its name (declared in the file, or made again) starts its budget from nothing, after a
 * restart or a reload, while a config team declared again keeps what it spent itself. `/admin/usage?team_id=`
 * totals one team's records alone, `team=` every team that had the name, and `group_by=team_id` keeps them
 * apart. Each case runs on the embedded SQLite store and on PostgreSQL (a schema of its own; in CI always, off
 * CI skipped only when the database is unreachable).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway } from "../helpers/gateway.ts";
import { dropSchema, postgresOrSkip, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";
import { spawnReplica } from "../helpers/replica.ts";

const ADMIN = "gw-team-identity-admin-0123456789abcdef";
const MEMBER = "gw-team-identity-member-0123456789abcdef";
/** A 40-token monthly budget: four requests of {@linkcode echo}. */
const BUDGET = { tokens: 40, period: "month" } as const;

/** A gateway serving at `url` (in this process, or one of its own). */
type Served = { readonly url: string };

/** Where the records are kept: a SQLite file in `dir`, or PostgreSQL `schema`. */
type Store = { dir: string; schema: string | null };

/**
 * The echo model, an admin token, and, when `team` is given, that team in the file with a 40-token budget and
 * the config token `member` in it.
 */
function config(store: Store, team: string | null): string {
  const usage = store.schema === null
    ? `usage: { sqlite: "${store.dir}/usage.sqlite", spill: "${store.dir}/spill.jsonl", flush_interval: 20ms }`
    : `postgres: { url: "${TEST_DATABASE_URL}", schema: ${store.schema}, timeout: 2s, pool_size: 2 }
usage: { spill: "${store.dir}/spill.jsonl", flush_interval: 20ms }`;
  const declared = team === null ? "" : `teams:
  ${team}: { budget: { tokens: ${BUDGET.tokens}, period: ${BUDGET.period} } }
tokens:
  - { name: member, sha256: ${hashToken(MEMBER)}, models: ["*"], team: ${team} }`;
  return `
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${declared}
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
${usage}
`;
}

async function adminCall(gw: Served, method: string, path: string, body?: unknown) {
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
async function echo(gw: Served, secret: string): Promise<[number, string | undefined]> {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
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

/** Sends `n` echo requests, each answered. */
async function spend(gw: Served, secret: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) assert.deepEqual(await echo(gw, secret), [200, undefined]);
}

/** What the team has spent of its budget this period, as `/admin/teams/{name}` shows it. */
async function teamUsed(gw: Served, name: string): Promise<number> {
  return (await adminCall(gw, "GET", `/admin/teams/${name}`)).spend.used;
}

/** The total tokens `/admin/usage?<query>` reports (it flushes the records still queued first). */
async function usageTokens(gw: Served, query: string): Promise<number> {
  return (await adminCall(gw, "GET", `/admin/usage?${query}`)).totals.total_tokens;
}

/** Makes team `name` through the admin API with a member issued there; spends 10 tokens × `n`; deletes both. */
async function apiTeamSpends(gw: Served, name: string, n: number): Promise<string> {
  const team = await adminCall(gw, "POST", "/admin/teams", { name, budget: BUDGET });
  assert.match(team.id, /^tm_/);
  const token = await adminCall(gw, "POST", "/admin/tokens", {
    name: `${name}-issued`,
    models: ["*"],
    team: name,
  });
  await spend(gw, token.token, n);
  assert.equal(await teamUsed(gw, name), 10 * n);
  await adminCall(gw, "DELETE", `/admin/tokens/${token.id}`);
  await adminCall(gw, "DELETE", `/admin/teams/${name}`);
  return team.id;
}

/** Runs `body` over each store: SQLite, then PostgreSQL when reachable. */
async function onBothStores(t: Deno.TestContext, body: (store: Store) => Promise<void>): Promise<void> {
  for (const postgres of [false, true]) {
    if (postgres && !await postgresOrSkip(t)) return;
    const store: Store = { dir: await Deno.makeTempDir(), schema: postgres ? randomSchema("teamid") : null };
    try {
      await t.step(postgres ? "PostgreSQL" : "SQLite", () => body(store));
    } finally {
      if (store.schema !== null) await dropSchema(store.schema);
      await Deno.remove(store.dir, { recursive: true });
    }
  }
}

Deno.test("team identity: a config team given a deleted API team's name starts afresh after a restart", async (t) => {
  await onBothStores(t, async (store) => {
    let oldId: string;
    const first = await startGateway(config(store, null));
    try {
      oldId = await apiTeamSpends(first, "growth", 3);
      assert.equal(await usageTokens(first, "team=growth"), 30);
    } finally {
      await first.stop();
    }
    const second = await startGateway(config(store, "growth"));
    try {
      assert.equal(await teamUsed(second, "growth"), 0, "none of the deleted team's spend");
      await spend(second, MEMBER, 4);
      assert.deepEqual(await echo(second, MEMBER), [429, "insufficient_quota"]);
      assert.equal(await usageTokens(second, "team_id=team_growth"), 40, "the config team's records alone");
      assert.equal(await usageTokens(second, `team_id=${oldId}`), 30, "the deleted team's records alone");
      assert.equal(await usageTokens(second, "team=growth"), 70, "by name: every team that had it");
      const grouped = await adminCall(second, "GET", "/admin/usage?team=growth&group_by=team_id");
      assert.deepEqual(
        grouped.groups.map((
          g: { key: { team_id: string }; total_tokens: number },
        ) => [g.key.team_id, g.total_tokens])
          .sort(),
        [[oldId, 30], ["team_growth", 40]].sort(),
      );
      const log = await adminCall(second, "GET", "/admin/requests?team_id=team_growth&limit=10");
      assert.equal(log.data.length, 5, "four answered and one denied");
      for (const record of log.data) {
        assert.deepEqual([record.team, record.team_id], ["growth", "team_growth"]);
      }
    } finally {
      await second.stop();
    }
  });
});

Deno.test("team identity: a config team declared again after an API team had its name keeps only its own spend", async (t) => {
  await onBothStores(t, async (store) => {
    const gw = await startGateway(config(store, "ops"));
    try {
      await spend(gw, MEMBER, 2);
      assert.equal(await teamUsed(gw, "ops"), 20);
      // The file's team goes (and its member with it); a team made through the admin API takes the name.
      await Deno.writeTextFile(gw.configFile, config(store, null));
      await adminCall(gw, "POST", "/admin/reload");
      const apiId = await apiTeamSpends(gw, "ops", 1);
      // The file's team is back: what it spent itself, not the API team's.
      await Deno.writeTextFile(gw.configFile, config(store, "ops"));
      await adminCall(gw, "POST", "/admin/reload");
      assert.equal(await teamUsed(gw, "ops"), 20, "after the reload");
      assert.equal(await usageTokens(gw, `team_id=${apiId}`), 10, "the API team's records alone");
    } finally {
      await gw.stop();
    }
    const restarted = await startGateway(config(store, "ops"));
    try {
      assert.equal(await teamUsed(restarted, "ops"), 20, "after a restart");
      await spend(restarted, MEMBER, 2);
      assert.deepEqual(await echo(restarted, MEMBER), [429, "insufficient_quota"]);
      assert.equal(await usageTokens(restarted, "team_id=team_ops"), 40);
      assert.equal(await usageTokens(restarted, "team=ops"), 50);
    } finally {
      await restarted.stop();
    }
  });
});

Deno.test("team identity: a team made again through the admin API under a deleted one's name starts afresh", async (t) => {
  await onBothStores(t, async (store) => {
    const first = await startGateway(config(store, null));
    let second: { id: string; token: string };
    try {
      const oldId = await apiTeamSpends(first, "growth", 3);
      const team = await adminCall(first, "POST", "/admin/teams", { name: "growth", budget: BUDGET });
      assert.notEqual(team.id, oldId);
      const token = await adminCall(first, "POST", "/admin/tokens", {
        name: "new",
        models: ["*"],
        team: "growth",
      });
      second = { id: team.id, token: token.token };
      await spend(first, second.token, 1);
      assert.equal(await teamUsed(first, "growth"), 10);
      assert.equal(await usageTokens(first, `team_id=${team.id}`), 10);
      assert.equal(await usageTokens(first, "team=growth"), 40);
    } finally {
      await first.stop();
    }
    const restarted = await startGateway(config(store, null));
    try {
      assert.equal(await teamUsed(restarted, "growth"), 10, "only what the new team spent");
      await spend(restarted, second.token, 3);
      assert.deepEqual(await echo(restarted, second.token), [429, "insufficient_quota"]);
    } finally {
      await restarted.stop();
    }
  });
});

Deno.test("team identity: with `serve --workers 2`, a config team given a deleted API team's name starts afresh", async (t) => {
  await onBothStores(t, async (store) => {
    const file = `${store.dir}/gateway.yaml`;
    await Deno.writeTextFile(file, config(store, null));
    const gw = await spawnReplica(file, ["--workers", "2"]);
    try {
      const oldId = await apiTeamSpends(gw, "growth", 3);
      // The file declares the name now: the primary seeds the config team's budget on the reload.
      await Deno.writeTextFile(file, config(store, "growth"));
      await adminCall(gw, "POST", "/admin/reload");
      assert.equal(await teamUsed(gw, "growth"), 0, "after the reload");
      await spend(gw, MEMBER, 1);
      assert.equal(await usageTokens(gw, "team_id=team_growth"), 10);
      assert.equal(await usageTokens(gw, `team_id=${oldId}`), 30);
    } finally {
      await gw.stop();
    }
    const restarted = await spawnReplica(file, ["--workers", "2"]);
    try {
      assert.equal(await teamUsed(restarted, "growth"), 10, "after a restart: its own spend alone");
      await spend(restarted, MEMBER, 3);
      assert.deepEqual(await echo(restarted, MEMBER), [429, "insufficient_quota"]);
    } finally {
      await restarted.stop();
    }
  });
});
