/**
 * A token's `team` and `end_user_limits` through the admin API's bodies: a team must be one of the live
 * config's, end-user limits are the config's schema (each refusal a 400 naming its path), and null clears both.
 */
import assert from "node:assert/strict";
import { parseConfigText } from "../config/load.ts";
import type { ResolvedConfig } from "../config/types.ts";
import { GatewayError } from "../errors.ts";
import { type TokenFields, validateNewToken, validatePatch } from "./validate.ts";

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-priced:
    type: chat
    targets: [ { provider: local, model: echo, price: { input: 1, output: 2 } } ]
  chat-free: { type: chat, targets: [ { provider: local, model: echo } ] }
teams:
  research: { limits: { rpm: 100 }, models: ["chat-*"] }
  platform: { budget: { cost: 100, period: month } }
`;

function config(): ResolvedConfig {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

const NOW = Date.parse("2026-11-24T09:00:00Z");

/** The 400 that `f` throws. */
function refusal(f: () => unknown): GatewayError {
  try {
    f();
  } catch (err) {
    assert.ok(err instanceof GatewayError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.type, "invalid_request_error");
    return err;
  }
  assert.fail("expected a 400");
}

Deno.test("validate team: a known team is kept by name; none is null", () => {
  const c = config();
  const token = validateNewToken({ name: "a", models: ["chat-free"], team: "research" }, c, NOW);
  assert.equal(token.team, "research");
  assert.equal(token.end_user_limits, null);
  assert.equal(validateNewToken({ name: "b", models: ["chat-free"] }, c, NOW).team, null);
  assert.equal(validateNewToken({ name: "b", models: ["chat-free"], team: null }, c, NOW).team, null);
});

Deno.test("validate team: a team the config does not have is a 400 on team, naming the known teams", () => {
  const c = config();
  const err = refusal(() => validateNewToken({ name: "a", models: ["chat-free"], team: "finance" }, c, NOW));
  assert.equal(err.param, "team");
  assert.match(err.message, /"finance"/);
  assert.match(err.message, /"platform", "research"/);
  const none = refusal(() =>
    validateNewToken({ name: "a", models: ["chat-free"], team: "finance" }, { ...c, teams: new Map() }, NOW)
  );
  assert.equal(none.param, "team");
  assert.match(none.message, /there are none/);
  // Not even a team name: the schema's message, on the same param.
  assert.equal(
    refusal(() => validateNewToken({ name: "a", models: ["chat-free"], team: "a b" }, c, NOW)).param,
    "team",
  );
  assert.equal(
    refusal(() => validateNewToken({ name: "a", models: ["chat-free"], team: 7 }, c, NOW)).param,
    "team",
  );
});

Deno.test("validate team: a money budget over members' models needs them priced", () => {
  const c = config();
  // `platform` has a cost budget and no models: it covers what its members reach.
  assert.equal(
    validateNewToken({ name: "a", models: ["chat-priced"], team: "platform" }, c, NOW).team,
    "platform",
  );
  assert.equal(
    refusal(() => validateNewToken({ name: "a", models: ["chat-*"], team: "platform" }, c, NOW)).param,
    "team",
  );
  const current = validateNewToken({ name: "a", models: ["chat-priced"], team: "platform" }, c, NOW);
  assert.equal(refusal(() => validatePatch({ models: ["chat-free"] }, current, c, NOW)).param, "models");
});

Deno.test("validate end_user_limits: the config's schema, defaults filled in, each refusal on its path", () => {
  const c = config();
  const base = { name: "a", models: ["chat-priced"] };
  const token = validateNewToken(
    { ...base, end_user_limits: { rpm: 10, budget: { cost: 1, period: "day" }, header: "X-End-User" } },
    c,
    NOW,
  );
  assert.deepEqual(token.end_user_limits, {
    rpm: 10,
    budget: { cost: 1, period: "day" },
    header: "x-end-user",
    max_users: 10_000,
  });
  const cases: [unknown, string][] = [
    [{ rpm: 0 }, "end_user_limits.rpm"],
    [{ tpm: "many" }, "end_user_limits.tpm"],
    [{ max_users: 5 }, "end_user_limits"],
    [{ rpm: 1, header: "authorization" }, "end_user_limits.header"],
    [{ rpm: 1, header: "no spaces" }, "end_user_limits.header"],
    [{ rpm: 1, max_users: 0 }, "end_user_limits.max_users"],
    [{ rpm: 1, who: "me" }, "end_user_limits.who"],
    [{ budget: { tokens: 5, period: "week" } }, "end_user_limits.budget.period"],
    [{ budget: { tokens: 5, period: "day", stop_streams: true } }, "end_user_limits.budget.stop_streams"],
    [{ budget: { period: "day" } }, "end_user_limits.budget"],
    [{ budget: { tokens: 5, cost: 1, period: "day" } }, "end_user_limits.budget"],
    ["10/min", "end_user_limits"],
  ];
  for (const [limits, param] of cases) {
    const err = refusal(() => validateNewToken({ ...base, end_user_limits: limits }, c, NOW));
    assert.equal(err.param, param, JSON.stringify(limits));
  }
  // A money budget per end user covers the token's aliases: they need a price.
  assert.equal(
    refusal(() =>
      validateNewToken(
        { name: "a", models: ["chat-*"], end_user_limits: { budget: { cost: 1, period: "day" } } },
        c,
        NOW,
      )
    ).param,
    "end_user_limits.budget.cost",
  );
});

Deno.test("validate team and end_user_limits in a patch: set, cleared by null, left alone when absent", () => {
  const c = config();
  const current: TokenFields = {
    ...validateNewToken({ name: "a", models: ["chat-priced"] }, c, NOW),
  };
  assert.deepEqual(validatePatch({ team: "research", end_user_limits: { tpm: 1000 } }, current, c, NOW), {
    team: "research",
    team_id: "team_research", // membership is by the team's id
    end_user_limits: { tpm: 1000, max_users: 10_000 },
  });
  const member: TokenFields = { ...current, team: "research", end_user_limits: { tpm: 1000, max_users: 5 } };
  assert.deepEqual(validatePatch({ team: null, end_user_limits: null }, member, c, NOW), {
    team: null,
    team_id: null,
    end_user_limits: null,
  });
  assert.deepEqual(validatePatch({ disabled: true }, member, c, NOW), { disabled: true });
  assert.equal(refusal(() => validatePatch({ team: "finance" }, member, c, NOW)).param, "team");
  assert.equal(
    refusal(() => validatePatch({ end_user_limits: { rpm: -1 } }, member, c, NOW)).param,
    "end_user_limits.rpm",
  );
  // The token's team left the config since: its other fields still change.
  const orphan: TokenFields = { ...current, team: "gone" };
  assert.deepEqual(validatePatch({ max_tokens: 5 }, orphan, c, NOW), { max_tokens: 5 });
  assert.deepEqual(validatePatch({ models: ["chat-free"] }, orphan, c, NOW), { models: ["chat-free"] });
});
