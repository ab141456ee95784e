/**
 * `/admin/teams` writes, in-process over the memory token store: a team is made, read, changed and deleted,
 * each write audited (`create`, `update` with its diff, `delete`, under the team's `tm_…` id); bad bodies are
 * 400s naming the field; config teams are read-only (409), names are unique across both sources (409), a team
 * with members cannot be deleted (409); and a token joined to a stored team is held by the team's limits and
 * models through the real handler chain, while a team made again under a deleted one's name starts afresh.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../auth/authenticate.ts";
import { CONFIG, errorOf, type Json, setup } from "./tokens_test_helpers.ts";

const TEAM_FILE_TOKEN = "gw-teams-api-file-0123456789abcdef";

/** The helpers' config with a config team (and a config token in it). */
const TEAM_CONFIG = `${CONFIG}
teams:
  research: { limits: { rpm: 100 } }
`.replace(
  "admin_tokens:",
  `  - { name: team-file, sha256: ${hashToken(TEAM_FILE_TOKEN)}, models: ["chat-*"], team: research }
admin_tokens:`,
);

Deno.test("admin teams: made, read, changed and deleted; every write audited under the team's id", async () => {
  const gw = setup(true, TEAM_CONFIG);
  try {
    const created = await gw.admin("POST", "/admin/teams", {
      name: "platform",
      description: "the platform group",
      budget: { tokens: 1_000_000, period: "month" },
      limits: { rpm: 600 },
      models: ["chat-*"],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = String(created.body.id);
    assert.match(id, /^tm_[0-9a-f]{24}$/);
    assert.equal(created.body.source, "api");
    assert.equal(created.body.created_by, "ops");
    assert.deepEqual(created.body.members, []);
    assert.deepEqual((created.body.spend as Json).used, 0);

    const one = await gw.admin("GET", "/admin/teams/platform");
    assert.equal(one.status, 200);
    assert.equal(one.body.id, id);
    assert.deepEqual(one.body.models, ["chat-*"]);
    const file = await gw.admin("GET", "/admin/teams/research");
    assert.deepEqual([file.body.id, file.body.source, file.body.created_at], [
      "team_research",
      "config",
      null,
    ]);
    assert.deepEqual((file.body.members as Json[]).map((m) => m.name), ["team-file"]);
    const list = (await gw.admin("GET", "/admin/teams")).body.data as Json[];
    assert.deepEqual(list.map((t) => [t.name, t.source]), [["research", "config"], ["platform", "api"]]);

    const patched = await gw.admin("PATCH", "/admin/teams/platform", { limits: { rpm: 5 }, models: null });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual([patched.body.limits, patched.body.models], [{ rpm: 5 }, null]);
    assert.equal((await gw.admin("PATCH", "/admin/teams/platform", { limits: { rpm: 5 } })).status, 200);

    const deleted = await gw.admin("DELETE", "/admin/teams/platform");
    assert.equal(deleted.status, 200);
    assert.equal(typeof deleted.body.deleted_at, "string");
    assert.equal((await gw.admin("GET", "/admin/teams/platform")).status, 404);
    assert.equal((await gw.admin("DELETE", "/admin/teams/platform")).status, 404);

    const entries = (await gw.admin("GET", `/admin/audit?token=${id}`)).body.data as Json[];
    assert.deepEqual(entries.map((e) => [e.action, e.token_name, e.actor]), [
      ["delete", "platform", "ops"],
      ["update", "platform", "ops"],
      ["create", "platform", "ops"],
    ], "a PATCH that changes nothing writes no entry");
    assert.deepEqual(entries[1].changes, {
      limits: { from: { rpm: 600 }, to: { rpm: 5 } },
      models: { from: ["chat-*"], to: null },
    });
    assert.equal((entries[2].changes as Json).name, "platform");
    const byAction = (await gw.admin("GET", "/admin/audit?action=delete")).body.data as Json[];
    assert.deepEqual(byAction.map((e) => e.token_id), [id]);
  } finally {
    await gw.close();
  }
});

Deno.test("admin teams: bad bodies are 400s naming the field; nothing is written", async () => {
  const gw = setup(true, TEAM_CONFIG);
  try {
    const cases: [unknown, string][] = [
      [{ name: "no spaces" }, "name"],
      [{}, "name"],
      [{ name: "x", limits: { rpm: -1 } }, "limits.rpm"],
      [{ name: "x", models: ["chat-a", "nope-*"] }, "models.1"],
      [{ name: "x", models: [] }, "models"],
      [{ name: "x", color: "red" }, "color"],
      [{ name: "x", budget: { tokens: 5, cost: 5, period: "day" } }, "budget"],
      [{ name: "x", budget: { cost: 5, period: "day", stop_streams: true } }, "budget.stop_streams"],
      // chat-b has no price: a money budget over it cannot count.
      [{ name: "x", budget: { cost: 5, period: "day" }, models: ["chat-b"] }, "budget.cost"],
      [{ name: "x", description: "a\u0000b" }, "description"],
    ];
    for (const [body, param] of cases) {
      const answer = await gw.admin("POST", "/admin/teams", body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.equal(errorOf(answer.body).param, param, JSON.stringify(answer.body));
    }
    assert.equal((await gw.admin("POST", "/admin/teams", { name: "x", models: ["chat-a"] })).status, 201);
    for (
      const [body, param] of [
        [{ name: "y" }, "name"],
        [{ limits: { tpm: 0 } }, "limits.tpm"],
        [{ budget: { cost: 1, period: "day" }, models: ["chat-b"] }, "budget.cost"],
      ] as [unknown, string][]
    ) {
      const answer = await gw.admin("PATCH", "/admin/teams/x", body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.equal(errorOf(answer.body).param, param);
    }
    const entries = (await gw.admin("GET", "/admin/audit")).body.data as Json[];
    assert.deepEqual(entries.map((e) => e.action), ["create"], "only the one good create");
  } finally {
    await gw.close();
  }
});

Deno.test("admin teams: config teams are read-only, names are unique, members block a delete", async () => {
  const gw = setup(true, TEAM_CONFIG);
  try {
    const readOnly = await gw.admin("PATCH", "/admin/teams/research", { limits: { rpm: 1 } });
    assert.deepEqual([readOnly.status, errorOf(readOnly.body).code], [409, "team_read_only"]);
    const noDelete = await gw.admin("DELETE", "/admin/teams/research");
    assert.deepEqual([noDelete.status, errorOf(noDelete.body).code], [409, "team_read_only"]);
    const unknown = await gw.admin("PATCH", "/admin/teams/nobody", { limits: { rpm: 1 } });
    assert.deepEqual([unknown.status, errorOf(unknown.body).code], [404, "team_not_found"]);

    const taken = await gw.admin("POST", "/admin/teams", { name: "research" });
    assert.deepEqual([taken.status, errorOf(taken.body).code], [409, "team_name_taken"]);
    assert.equal((await gw.admin("POST", "/admin/teams", { name: "ops" })).status, 201);
    const again = await gw.admin("POST", "/admin/teams", { name: "ops" });
    assert.deepEqual([again.status, errorOf(again.body).code], [409, "team_name_taken"]);

    const member = await gw.admin("POST", "/admin/tokens", { name: "m", models: ["chat-a"], team: "ops" });
    assert.equal(member.status, 201, JSON.stringify(member.body));
    const members = (await gw.admin("GET", "/admin/teams/ops")).body.members as Json[];
    assert.deepEqual(members.map((m) => [m.name, m.source]), [["m", "api"]]);
    const blocked = await gw.admin("DELETE", "/admin/teams/ops");
    assert.deepEqual([blocked.status, errorOf(blocked.body).code], [409, "team_has_members"]);
    assert.match(String(errorOf(blocked.body).message), /'m'/);
    assert.equal((await gw.admin("DELETE", `/admin/tokens/${member.body.id}`)).status, 200);
    assert.equal((await gw.admin("DELETE", "/admin/teams/ops")).status, 200, "a revoked token is no member");
  } finally {
    await gw.close();
  }
});

Deno.test("admin teams: a stored team's limits and models hold its members; a new team of the name starts afresh", async () => {
  const gw = setup(true, TEAM_CONFIG);
  try {
    const team = await gw.admin("POST", "/admin/teams", {
      name: "tight",
      limits: { rpm: 1 },
      models: ["chat-a"],
    });
    const firstId = String(team.body.id);
    const issue = async (name: string, teamName: string | null) => {
      const made = await gw.admin("POST", "/admin/tokens", { name, models: ["chat-*"], team: teamName });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      return { id: String(made.body.id), secret: String(made.body.token) };
    };
    const a = await issue("member-a", "tight");
    const b = await issue("member-b", "tight");
    const loner = await issue("loner", null);
    assert.deepEqual(
      await gw.chat(a.secret, "chat-b"),
      { status: 404, code: "model_not_found" },
      "team models",
    );
    assert.equal((await gw.chat(a.secret)).status, 200);
    assert.deepEqual(
      await gw.chat(b.secret),
      { status: 429, code: "rate_limit_exceeded" },
      "team.rpm, shared",
    );
    assert.deepEqual(await gw.chat(a.secret), { status: 429, code: "rate_limit_exceeded" });
    assert.equal((await gw.chat(loner.secret)).status, 200, "not in the team: not held by it");

    // Deleted and made again under the same name: a new id, so none of the old team's counters.
    for (const t of [a, b]) assert.equal((await gw.admin("DELETE", `/admin/tokens/${t.id}`)).status, 200);
    assert.equal((await gw.admin("DELETE", "/admin/teams/tight")).status, 200);
    const remade = await gw.admin("POST", "/admin/teams", { name: "tight", limits: { rpm: 1 } });
    assert.notEqual(remade.body.id, firstId);
    const c = await issue("member-c", "tight");
    assert.equal((await gw.chat(c.secret)).status, 200, "fresh counters");
    assert.equal((await gw.chat(c.secret)).status, 429);
  } finally {
    await gw.close();
  }
});

Deno.test("admin teams: without a database the list still serves the config's teams; writes are 503", async () => {
  const gw = setup(false, TEAM_CONFIG);
  try {
    const list = await gw.admin("GET", "/admin/teams");
    assert.deepEqual((list.body.data as Json[]).map((t) => t.name), ["research"]);
    assert.equal((await gw.admin("GET", "/admin/teams/research")).status, 200);
    const made = await gw.admin("POST", "/admin/teams", { name: "x" });
    assert.deepEqual([made.status, errorOf(made.body).code], [503, "token_store_disabled"]);
  } finally {
    await gw.close();
  }
});
