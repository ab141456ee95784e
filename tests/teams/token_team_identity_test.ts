/**
 * An issued token's team membership is by the team's identity, never its reusable name. A token is issued in
 * the file's team `research`; the file drops the team (reload), then a different team is made through the admin
 * API under the same name with a tight limit. The old token must not become its member: not listed among its
 * members, not bound by its rpm, not blocking its delete; the token's view says it is in no team and which
 * team it joined (`team_id`). On PostgreSQL a second gateway on the same schema (another node of the fleet,
 * loading the token from the shared store) resolves it the same way. Each case runs on the embedded SQLite store
 * and on PostgreSQL (a schema of its own; skipped off CI only when the database is unreachable).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { dropSchema, postgresOrSkip, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";

const ADMIN = "gw-token-team-id-admin-0123456789abcdef";

type Store = { dir: string; schema: string | null };

/** The echo model, an admin token, and the file's team `research` when `withTeam`. */
function config(store: Store, withTeam: boolean): string {
  const usage = store.schema === null
    ? `usage: { sqlite: "${store.dir}/usage.sqlite", spill: "${store.dir}/spill.jsonl", flush_interval: 20ms }`
    : `postgres: { url: "${TEST_DATABASE_URL}", schema: ${store.schema}, timeout: 2s, pool_size: 2 }
usage: { spill: "${store.dir}/spill.jsonl", flush_interval: 20ms }`;
  return `
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${withTeam ? "teams:\n  research: { limits: { rpm: 100 } }" : ""}
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
${usage}
`;
}

async function call(gw: TestGateway, method: string, path: string, body?: unknown, secret = ADMIN) {
  const r = await fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

function chat(gw: TestGateway, secret: string) {
  return call(gw, "POST", "/v1/chat/completions", {
    model: "chat-echo",
    messages: [{ role: "user", content: "hi" }],
  }, secret);
}

/** The new team has no members, does not limit the old token, and can be deleted; the token shows no team. */
async function assertNotInherited(gw: TestGateway, tokenId: string, secret: string): Promise<void> {
  const team = await call(gw, "GET", "/admin/teams/research");
  assert.equal(team.status, 200, JSON.stringify(team.body));
  assert.deepEqual(team.body.members, [], "a brand-new team starts with no members");
  const token = await call(gw, "GET", `/admin/tokens/${tokenId}`);
  assert.equal(token.body.team, null, "its team no longer exists: in no team");
  assert.equal(token.body.team_id, "team_research", "and it still says which team it joined");
  const first = await chat(gw, secret), second = await chat(gw, secret);
  assert.deepEqual([first.status, second.status], [200, 200], "the new team's rpm: 1 does not apply to it");
}

Deno.test("token team identity: a team made under a dropped team's name does not inherit its tokens", async (t) => {
  for (const postgres of [false, true]) {
    if (postgres && !await postgresOrSkip(t)) return;
    const store: Store = { dir: await Deno.makeTempDir(), schema: postgres ? randomSchema("tokteam") : null };
    try {
      await t.step(postgres ? "PostgreSQL" : "SQLite", async () => {
        const gw = await startGateway(config(store, true));
        let other: TestGateway | null = null;
        try {
          const made = await call(gw, "POST", "/admin/tokens", {
            name: "old-member",
            models: ["chat-echo"],
            team: "research",
          });
          assert.equal(made.status, 201, JSON.stringify(made.body));
          assert.equal(made.body.team, "research");
          assert.equal(made.body.team_id, "team_research");
          await Deno.writeTextFile(gw.configFile, config(store, false));
          assert.equal((await call(gw, "POST", "/admin/reload")).status, 200);
          const team = await call(gw, "POST", "/admin/teams", { name: "research", limits: { rpm: 1 } });
          assert.equal(team.status, 201, JSON.stringify(team.body));
          assert.match(String(team.body.id), /^tm_/);
          await assertNotInherited(gw, made.body.id, made.body.token);
          if (postgres) {
            // Another node of the fleet loads the token and the team from the shared store: the same answer.
            other = await startGateway(config(store, false));
            await assertNotInherited(other, made.body.id, made.body.token);
          }
          const deleted = await call(gw, "DELETE", "/admin/teams/research");
          assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
          // Joining the new team is an explicit act: naming it again (PATCH) takes its id.
          const again = await call(gw, "POST", "/admin/teams", { name: "research" });
          const joined = await call(gw, "PATCH", `/admin/tokens/${made.body.id}`, { team: "research" });
          assert.equal(joined.status, 200, JSON.stringify(joined.body));
          assert.deepEqual([joined.body.team, joined.body.team_id], ["research", again.body.id]);
          const members = (await call(gw, "GET", "/admin/teams/research")).body.members as { name: string }[];
          assert.deepEqual(members.map((m) => m.name), ["old-member"]);
        } finally {
          await other?.stop();
          await gw.stop();
        }
      });
    } finally {
      if (store.schema !== null) await dropSchema(store.schema);
      await Deno.remove(store.dir, { recursive: true });
    }
  }
});
