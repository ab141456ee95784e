/**
 * `/admin/tokens` with teams and end-user limits, in-process over the memory token store: a token joins a team
 * of the config (an unknown one is a 400 on `team`), gets end-user limits (the config's schema, each refusal on
 * its path), both are cleared by null, shown for issued and config tokens alike, and audited.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../auth/authenticate.ts";
import { CONFIG, errorOf, FILE_TOKEN, type Json, setup } from "./tokens_test_helpers.ts";

const TEAM_FILE_TOKEN = "gw-team-file-token-0123456789abcdef";

/** The helpers' config with two teams, and a config token in one of them with end-user limits. */
const TEAM_CONFIG = `${CONFIG}
teams:
  research: { limits: { rpm: 100 }, models: ["chat-a"] }
  platform: { budget: { tokens: 1000000, period: month } }
`.replace(
  "admin_tokens:",
  `  - { name: team-file, sha256: ${hashToken(TEAM_FILE_TOKEN)}, models: ["chat-*"], team: research,
      end_user_limits: { rpm: 5, header: X-End-User } }
admin_tokens:`,
);

Deno.test("admin tokens: team and end_user_limits are set, shown, cleared by null and audited", async () => {
  const gw = setup(true, TEAM_CONFIG);
  try {
    const created = await gw.admin("POST", "/admin/tokens", {
      name: "member",
      models: ["chat-*"],
      team: "research",
      end_user_limits: { rpm: 10, budget: { tokens: 5000, period: "day" } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const limits = { rpm: 10, budget: { tokens: 5000, period: "day" }, max_users: 10_000 };
    assert.equal(created.body.team, "research");
    assert.deepEqual(created.body.end_user_limits, limits);
    const id = String(created.body.id);
    const secret = String(created.body.token);
    const shown = (await gw.admin("GET", `/admin/tokens/${id}`)).body;
    assert.equal(shown.team, "research");
    assert.deepEqual(shown.end_user_limits, limits);
    const listed = ((await gw.admin("GET", "/admin/tokens")).body.data as Json[]).find((t) => t.id === id)!;
    assert.equal(listed.team, "research");
    // The team bounds its members: `research` reaches chat-a only.
    assert.equal((await gw.chat(secret, "chat-a")).status, 200);
    assert.notEqual((await gw.chat(secret, "chat-b")).status, 200, "outside the team's models");

    const moved = await gw.admin("PATCH", `/admin/tokens/${id}`, { team: "platform" });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.equal(moved.body.team, "platform");
    assert.equal((await gw.chat(secret, "chat-b")).status, 200, "platform does not narrow its members");
    const cleared = await gw.admin("PATCH", `/admin/tokens/${id}`, { team: null, end_user_limits: null });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.team, null);
    assert.equal(cleared.body.end_user_limits, null);
    const same = await gw.admin("PATCH", `/admin/tokens/${id}`, { team: null }); // no change: no entry

    const plain = await gw.admin("POST", "/admin/tokens", { name: "plain", models: ["chat-a"] });
    assert.equal(plain.body.team, null, "null when not set");
    assert.equal(plain.body.end_user_limits, null);
    assert.equal(same.status, 200);

    const entries = (await gw.admin("GET", `/admin/audit?token=${id}`)).body.data as Json[];
    assert.deepEqual(entries.map((e) => [e.action, e.changes]).slice(0, 2), [
      ["update", {
        team: { from: "platform", to: null },
        team_id: { from: "team_platform", to: null },
        end_user_limits: { from: limits, to: null },
      }],
      // The team's id is what membership is by, so the trail records it beside the name.
      ["update", {
        team: { from: "research", to: "platform" },
        team_id: { from: "team_research", to: "team_platform" },
      }],
    ]);
    const create = entries[2].changes as Json;
    assert.equal(create.team, "research", "the create entry has them");
    assert.equal(create.team_id, "team_research");
    assert.deepEqual(create.end_user_limits, limits);
  } finally {
    await gw.close();
  }
});

Deno.test("admin tokens: an unknown team and bad end_user_limits are 400s naming the param", async () => {
  const gw = setup(true, TEAM_CONFIG);
  try {
    const unknown = await gw.admin("POST", "/admin/tokens", {
      name: "x",
      models: ["chat-a"],
      team: "finance",
    });
    assert.equal(unknown.status, 400);
    assert.equal(errorOf(unknown.body).param, "team");
    assert.match(String(errorOf(unknown.body).message), /"platform", "research"/);
    const bad = await gw.admin("POST", "/admin/tokens", {
      name: "x",
      models: ["chat-a"],
      end_user_limits: { rpm: 1, header: "Authorization" },
    });
    assert.equal(bad.status, 400);
    assert.equal(errorOf(bad.body).param, "end_user_limits.header");
    const empty = await gw.admin("POST", "/admin/tokens", {
      name: "x",
      models: ["chat-a"],
      end_user_limits: {},
    });
    assert.equal(errorOf(empty.body).param, "end_user_limits");

    const created = await gw.admin("POST", "/admin/tokens", { name: "x", models: ["chat-a"] });
    const id = String(created.body.id);
    const patched = await gw.admin("PATCH", `/admin/tokens/${id}`, { team: "finance" });
    assert.equal(patched.status, 400);
    assert.equal(errorOf(patched.body).param, "team");
    const badRpm = await gw.admin("PATCH", `/admin/tokens/${id}`, { end_user_limits: { rpm: 0 } });
    assert.equal(errorOf(badRpm.body).param, "end_user_limits.rpm");
    assert.equal((await gw.admin("GET", `/admin/tokens/${id}`)).body.team, null, "nothing was changed");
  } finally {
    await gw.close();
  }
});

Deno.test("admin tokens: a config token shows its team and end-user limits", async () => {
  const gw = setup(true, TEAM_CONFIG);
  try {
    const file = (await gw.admin("GET", "/admin/tokens/cfg_team-file")).body;
    assert.equal(file.team, "research");
    assert.deepEqual(file.end_user_limits, { rpm: 5, header: "x-end-user", max_users: 10_000 });
    const plain = (await gw.admin("GET", "/admin/tokens/cfg_from-file")).body;
    assert.equal(plain.team, null);
    assert.equal(plain.end_user_limits, null);
    assert.equal((await gw.chat(FILE_TOKEN)).status, 200);
  } finally {
    await gw.close();
  }
});
