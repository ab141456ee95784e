/**
 * The directory's stored teams: merged into the config it hands out (as `ResolvedTeam`s with their `tm_…` id
 * and `source: "api"`), before the stored tokens are resolved, so a member token carries its stored team; a
 * config team wins a name clash (logged once as `team_name_clash`); and a stored team's budget is seeded once
 * per (id, unit, period) with the stored tokens loaded beside it.
 */
import assert from "node:assert/strict";
import { hashToken } from "../auth/authenticate.ts";
import { parseConfigText } from "../config/load.ts";
import type { ResolvedConfig } from "../config/types.ts";
import { createMemoryLogger } from "../log.ts";
import { createTokenDirectory } from "./directory.ts";
import { createMemoryTokenStore } from "./store_memory.ts";
import type { AuditEntry, StoredTeam, StoredToken } from "./types.ts";

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-a: { type: chat, targets: [ { provider: local, model: echo } ] }
  chat-b: { type: chat, targets: [ { provider: local, model: echo } ] }
teams:
  research: { limits: { rpm: 100 } }
`;

function config(): ResolvedConfig {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

let seq = 0;
const hex = () => (++seq).toString(16).padStart(24, "0");
const TIME = "2026-11-24T09:00:00.000Z";

function team(name: string, fields: Partial<StoredTeam> = {}): StoredTeam {
  return {
    id: `tm_${hex()}`,
    name,
    description: null,
    budget: null,
    limits: { rpm: 1 },
    models: ["chat-a"],
    created_at: TIME,
    updated_at: TIME,
    created_by: "ops",
    deleted_at: null,
    ...fields,
  };
}

/** A stored token in the team named `teamName`, by `teamId` (default: the config team of that name). */
function token(name: string, teamName: string | null, teamId = teamName && `team_${teamName}`): StoredToken {
  return {
    id: `tok_${hex()}`,
    name,
    environment: "test",
    description: null,
    models: ["chat-*"],
    endpoints: null,
    limits: null,
    budget: null,
    max_tokens: null,
    cache: null,
    team: teamName,
    team_id: teamId,
    expires_at: null,
    disabled: false,
    created_at: TIME,
    updated_at: TIME,
    created_by: "ops",
    revoked_at: null,
    rotated_at: null,
    secrets: [{ sha256: hashToken(`secret-of-${name}`), expires_at: null }],
  };
}

function audit(of: { id: string; name: string }): AuditEntry {
  return {
    id: `aud_${hex()}`,
    time: TIME,
    actor: "ops",
    action: "create",
    token_id: of.id,
    token_name: of.name,
    changes: {},
  };
}

Deno.test("token directory: stored teams are merged before the tokens, which resolve against them", async () => {
  const store = createMemoryTokenStore();
  const platform = team("platform");
  const shadowed = team("research", { limits: { rpm: 7 } });
  for (const t of [platform, shadowed]) await store.putTeam(t, audit(t));
  const member = token("member", "platform", platform.id);
  const inConfigTeam = token("in-research", "research");
  // A member of the stored team a config team shadows is served the config's team, as the name is.
  const inShadowed = token("in-shadowed", "research", shadowed.id);
  for (const t of [member, inConfigTeam, inShadowed]) await store.put(t, audit(t));
  const logger = createMemoryLogger();
  const directory = createTokenDirectory({ store, logger, pollMs: 60_000 });
  try {
    await directory.refresh();
    assert.deepEqual(directory.teams().map((t) => t.name), ["platform", "research"]);
    const state = { config: config() };
    const served = directory.apply(state).config;
    assert.deepEqual(served.teams?.get("platform"), {
      name: "platform",
      id: platform.id,
      description: null,
      budget: null,
      limits: { rpm: 1 },
      patterns: ["chat-a"],
      source: "api",
    });
    assert.equal(served.teams?.get("research")?.id, "team_research", "the config's team wins the name");
    const resolved = served.tokens.get(hashToken("secret-of-member"));
    assert.equal(resolved?.team?.id, platform.id);
    assert.deepEqual([...resolved?.aliases ?? []], ["chat-a"], "narrowed by the stored team's models");
    assert.equal(served.tokens.get(hashToken("secret-of-in-research"))?.team?.id, "team_research");
    assert.equal(served.tokens.get(hashToken("secret-of-in-shadowed"))?.team?.id, "team_research");
    directory.apply({ config: config() }); // applied again: logged once only
    const clashes = logger.lines.filter((l) => l.msg === "team_name_clash");
    assert.equal(clashes.length, 1);
    assert.equal(clashes[0].id, shadowed.id);

    // Deleted: gone from the next load, and a member left in it (stored before the store refused to delete a
    // team with members) keeps its own rules only.
    const moved = { ...member, team: null, team_id: null };
    await store.put(moved, audit(moved));
    await store.putTeam({ ...platform, deleted_at: TIME }, audit(platform));
    await store.put(member, audit(member));
    await directory.refresh();
    const after = directory.apply(state).config;
    assert.equal(after.teams?.has("platform"), false);
    assert.equal(after.tokens.get(hashToken("secret-of-member"))?.team, null);

    // A team made later under the deleted one's name is another team: the old member does not join it.
    const again = team("platform", { limits: { rpm: 2 } });
    await store.putTeam(again, audit(again));
    await directory.refresh();
    const later = directory.apply(state).config;
    assert.equal(later.teams?.get("platform")?.id, again.id);
    assert.equal(later.tokens.get(hashToken("secret-of-member"))?.team, null, "not by the reused name");
  } finally {
    await directory.close();
  }
});

Deno.test("token directory: a stored team's budget is seeded once, with the tokens loaded beside it", async () => {
  const store = createMemoryTokenStore();
  const budgeted = team("budgeted", { budget: { tokens: 1000, period: "day" } });
  const free = team("free");
  for (const t of [budgeted, free]) await store.putTeam(t, audit(t));
  const member = token("member", "budgeted", budgeted.id);
  await store.put(member, audit(member));
  const seeded: [string[], string[]][] = [];
  const directory = createTokenDirectory({
    store,
    logger: createMemoryLogger(),
    pollMs: 60_000,
    seedTeamBudgets: (teams, tokens) => {
      seeded.push([teams.map((t) => t.name), tokens.map((t) => t.name)]);
      return Promise.resolve();
    },
  });
  try {
    await directory.refresh();
    const other = token("other", null);
    await store.put(other, audit(other));
    await directory.refresh();
    assert.deepEqual(seeded, [[["budgeted"], ["member"]]], "once, teams without a budget never");
    await store.putTeam({ ...budgeted, budget: { cost: 5, period: "day" } }, audit(budgeted));
    await directory.refresh();
    assert.deepEqual(seeded.at(-1), [["budgeted"], ["member", "other"]], "a new unit is seeded again");
  } finally {
    await directory.close();
  }
});
