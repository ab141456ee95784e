/**
 * The money budgets stored through the admin API are held to the prices of the config a reload would swap in,
 * as the file's are: a token's own and its end users', a stored team's over its `models:`, and a team without
 * `models:` (of the file or stored) over the aliases of each stored member. What is not served (revoked,
 * deleted, shadowed by a config owner's name) is not held.
 */
import assert from "node:assert/strict";
import { hashToken } from "../auth/authenticate.ts";
import { parseConfigText } from "../config/load.ts";
import type { ResolvedConfig } from "../config/types.ts";
import { makeToken } from "./store_contract_test_helpers.ts";
import { unpricedBudgetIssue, unpricedStoredBudgets } from "./stored_budget_prices.ts";
import type { StoredTeam, StoredToken } from "./types.ts";

const PRICE = "price: { input: 1, output: 2 }";

function config(extra = ""): ResolvedConfig {
  const result = parseConfigText(
    `
providers:
  local: { type: builtin }
models:
  chat-priced: { type: chat, targets: [ { provider: local, model: echo, ${PRICE} } ] }
  chat-free: { type: chat, targets: [ { provider: local, model: echo } ] }
teams:
  file-team: { budget: { cost: 5, period: day } }
  file-scoped: { budget: { cost: 5, period: day }, models: ["chat-priced"] }
tokens:
  - { name: file-client, sha256: ${hashToken("gw-file-client-0123456789abcdef")}, models: ["chat-priced"] }
${extra}`,
    { source: "<test>", env: {} },
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

/** A stored token with nothing that counts money but what `overrides` gives. */
function token(overrides: Partial<StoredToken>): StoredToken {
  return makeToken({
    budget: null,
    end_user_limits: null,
    team: null,
    team_id: null,
    guardrails: null,
    ...overrides,
  });
}

function team(overrides: Partial<StoredTeam>): StoredTeam {
  return {
    id: "tm_000000000000000000000001",
    name: "api-team",
    description: null,
    budget: { cost: 5, period: "day" },
    limits: null,
    models: ["*"],
    created_at: "2026-11-24T09:00:00.000Z",
    updated_at: "2026-11-24T09:00:00.000Z",
    created_by: "ops",
    deleted_at: null,
    ...overrides,
  };
}

const COST = { cost: 5, period: "day" } as const;

Deno.test("stored budgets: each money budget over an unpriced alias is found, naming its owner and the alias", () => {
  const own = token({ id: "tok_own", name: "own", models: ["*"], budget: COST });
  const users = token({
    id: "tok_users",
    name: "users",
    models: ["chat-*"],
    end_user_limits: { budget: COST, max_users: 100 },
  });
  const member = token({ id: "tok_member", name: "member", models: ["*"], team: "file-team" });
  const found = unpricedStoredBudgets(config(), [own, users, member], [team({})]);
  assert.deepEqual(
    found.map((f) => [f.owner, f.id, f.field, f.team ?? null, f.aliases]),
    [
      ["team", "tm_000000000000000000000001", "budget", null, ["chat-free"]],
      ["token", "tok_own", "budget", null, ["chat-free"]],
      ["token", "tok_users", "end_user_limits.budget", null, ["chat-free"]],
      ["token", "tok_member", "team", "file-team", ["chat-free"]],
    ],
  );
  const issue = unpricedBudgetIssue(found[1]);
  assert.equal(issue.path, "admin_api.tokens.tok_own.budget.cost");
  assert.match(
    issue.message,
    /the token "own" \(tok_own\).*cost budget over "chat-free".*PATCH \/admin\/tokens\/tok_own/,
  );
  const teamIssue = unpricedBudgetIssue(found[0]);
  assert.equal(teamIssue.path, "admin_api.teams.tm_000000000000000000000001.budget.cost");
  assert.match(teamIssue.message, /PATCH \/admin\/teams\/api-team/);
  assert.match(unpricedBudgetIssue(found[3]).message, /is in the team "file-team", whose cost budget covers/);
});

Deno.test("stored budgets: priced aliases, token budgets, and owners not served are not held", () => {
  const found = unpricedStoredBudgets(
    config(),
    [
      token({ name: "priced", models: ["chat-priced"], budget: COST }),
      token({ name: "tokens-only", models: ["*"], budget: { tokens: 1000, period: "day" } }),
      token({ name: "revoked", models: ["*"], budget: COST, revoked_at: "2026-11-24T10:00:00.000Z" }),
      token({ name: "file-client", models: ["*"], budget: COST }), // the file's token of that name is served
      // A team with models: narrows its member, so the member's own budget covers only the priced alias.
      token({ name: "narrowed", models: ["*"], budget: COST, team: "file-scoped" }),
    ],
    [
      team({ name: "priced-team", models: ["chat-priced"] }),
      team({ id: "tm_2", name: "gone", deleted_at: "2026-11-24T10:00:00.000Z" }),
      team({ id: "tm_3", name: "file-team" }), // the file's team of that name is served
      team({ id: "tm_4", name: "members-only", models: null }),
    ],
  );
  assert.deepEqual(found, []);
});

Deno.test("stored budgets: a config that prices every alias holds them all", () => {
  const priced = config().models.get("chat-priced")!;
  const all: ResolvedConfig = {
    ...config(),
    models: new Map([["chat-priced", priced], ["chat-free", priced]]),
  };
  const own = token({ models: ["*"], budget: COST });
  assert.deepEqual(unpricedStoredBudgets(all, [own], [team({})]), []);
});
