/**
 * The admin API's token bodies are checked as strictly as the config file's tokens, against the live config,
 * and every refusal is a 400 naming the field.
 */
import assert from "node:assert/strict";
import { parseConfigText } from "../config/load.ts";
import type { ResolvedConfig } from "../config/types.ts";
import { GatewayError } from "../errors.ts";
import { type TokenFields, validateNewToken, validatePatch, validateRotate } from "./validate.ts";

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-priced:
    type: chat
    targets: [ { provider: local, model: echo, price: { input: 1, output: 2 } } ]
  chat-free: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed: { type: embedding, targets: [ { provider: local, model: hash } ] }
`;

function config(): ResolvedConfig {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

const NOW = Date.parse("2026-11-24T09:00:00Z");

/** The `param` of the 400 that `f` throws. */
function paramOf(f: () => unknown): string | null {
  try {
    f();
  } catch (err) {
    assert.ok(err instanceof GatewayError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.type, "invalid_request_error");
    return err.param;
  }
  assert.fail("expected a 400");
}

Deno.test("validate: a full token is accepted, defaults filled in, expiry normalized", () => {
  const token = validateNewToken(
    {
      name: "ci-bot",
      models: ["chat-*"],
      endpoints: ["chat", "embeddings"],
      limits: { rpm: 60, concurrent: 2 },
      budget: { cost: 5, period: "month" },
      max_tokens: 100,
      expires_at: "2027-01-01",
      description: "CI",
    },
    { ...config(), models: new Map([["chat-priced", config().models.get("chat-priced")!]]) },
    NOW,
  );
  assert.equal(token.environment, "default");
  assert.equal(token.disabled, false);
  assert.equal(token.expires_at, "2027-01-02T00:00:00.000Z", "a date is valid through that day, as in YAML");
  assert.deepEqual(token.limits, { rpm: 60, concurrent: 2 });
  const minimal = validateNewToken({ name: "m", models: ["embed"], limits: null }, config(), NOW);
  assert.equal(minimal.limits, null);
  assert.equal(minimal.expires_at, null);
});

Deno.test("validate: every refusal names its field", () => {
  const c = config();
  const create = (body: Record<string, unknown>) => () => validateNewToken(body, c, NOW);
  const base = { name: "x", models: ["chat-free"] };
  const cases: [Record<string, unknown>, string][] = [
    [{ models: ["chat-free"] }, "name"],
    [{ ...base, name: "has space" }, "name"],
    [{ name: "x" }, "models"],
    [{ ...base, models: [] }, "models"],
    [{ ...base, models: ["chat-free", "nope-*"] }, "models.1"],
    [{ ...base, models: ["*a*b*c*d*e*f*g*h*i"] }, "models.0"],
    [{ ...base, limits: { rpm: 0 } }, "limits.rpm"],
    [{ ...base, limits: { rpm: 1.5 } }, "limits.rpm"],
    [{ ...base, limits: { rps: 3 } }, "limits.rps"],
    [{ ...base, limits: "60/min" }, "limits"],
    [{ ...base, budget: { tokens: 5 } }, "budget.period"],
    [{ ...base, budget: { period: "day" } }, "budget"],
    [{ ...base, budget: { tokens: 5, cost: 1, period: "day" } }, "budget"],
    [{ ...base, budget: { cost: 1, period: "day" } }, "budget.cost"],
    [{ ...base, endpoints: ["chat", "images"] }, "endpoints.1"],
    [{ ...base, max_tokens: 0 }, "max_tokens"],
    [{ ...base, cache: true }, "cache"],
    [{ ...base, cache: "off" }, "cache"],
    [{ ...base, cache: { max_age: "soon" } }, "cache.max_age"],
    [{ ...base, cache: { no_store: "yes" } }, "cache.no_store"],
    [{ ...base, cache: { ttl: "1h" } }, "cache.ttl"],
    [{ ...base, expires_at: "2020-01-01" }, "expires_at"],
    [{ ...base, expires_at: "tomorrow" }, "expires_at"],
    [{ ...base, expires_at: "2027-01-01T00:00:00" }, "expires_at"],
    [{ ...base, description: "d".repeat(501) }, "description"],
    [{ ...base, disabled: "yes" }, "disabled"],
    [{ ...base, owner: "me" }, "owner"],
    [{ ...base, sha256: "a".repeat(64) }, "sha256"],
    [{ ...base, token: "gw-my-own-secret-0123456789" }, "token"],
  ];
  for (const [body, param] of cases) assert.equal(paramOf(create(body)), param, JSON.stringify(body));
});

Deno.test("validate: a patch checks only what it changes, against the token as it will be", () => {
  const c = config();
  const current: TokenFields = {
    environment: "test",
    description: null,
    models: ["chat-priced"],
    endpoints: null,
    limits: null,
    budget: { cost: 5, period: "month" },
    max_tokens: null,
    cache: null,
    team: null,
    team_id: null,
    end_user_limits: null,
    guardrails: null,
    expires_at: null,
    disabled: false,
  };
  assert.deepEqual(validatePatch({ disabled: true, limits: { rpm: 5 } }, current, c, NOW), {
    disabled: true,
    limits: { rpm: 5 },
  });
  assert.deepEqual(validatePatch({ limits: null, expires_at: null }, current, c, NOW), {
    limits: null,
    expires_at: null,
  });
  const patch = (body: Record<string, unknown>) => () => validatePatch(body, current, c, NOW);
  assert.equal(paramOf(patch({ name: "renamed" })), "name");
  assert.equal(
    paramOf(patch({ models: ["chat-*"] })),
    "models",
    "the money budget would cover an unpriced alias",
  );
  assert.equal(paramOf(patch({ models: null })), "models");
  assert.equal(paramOf(patch({ environment: null })), "environment");
  assert.equal(paramOf(patch({ disabled: null })), "disabled");
  assert.equal(paramOf(patch({ limits: { tpm: -1 } })), "limits.tpm");
  assert.equal(paramOf(patch({ sha256: "a".repeat(64) })), "sha256");
  assert.equal(paramOf(patch({ extra: 1 })), "extra");
});

Deno.test("validate: cache is false, an object with durations in ms, or null; false is kept apart from null", () => {
  const c = config();
  const base = { name: "c", models: ["chat-free"] };
  assert.equal(validateNewToken(base, c, NOW).cache, null);
  assert.equal(validateNewToken({ ...base, cache: null }, c, NOW).cache, null);
  assert.equal(validateNewToken({ ...base, cache: false }, c, NOW).cache, false);
  assert.deepEqual(validateNewToken({ ...base, cache: { max_age: "10m" } }, c, NOW).cache, {
    no_store: false,
    no_cache: false,
    max_age: 600_000,
  });
  const current = { ...validateNewToken({ ...base, cache: false }, c, NOW) };
  assert.deepEqual(validatePatch({ cache: { no_cache: true } }, current, c, NOW), {
    cache: { no_store: false, no_cache: true },
  });
  assert.deepEqual(validatePatch({ cache: null }, current, c, NOW), { cache: null });
  assert.deepEqual(validatePatch({ cache: false }, current, c, NOW), { cache: false });
  assert.deepEqual(validatePatch({}, current, c, NOW), {}, "absent leaves it as it is");
});

Deno.test("validate: rotate grace is a duration of at most 30 days", () => {
  assert.equal(validateRotate({}), 0);
  assert.equal(validateRotate({ grace: "60s" }), 60_000);
  assert.equal(validateRotate({ grace: "1.5s" }), 1_500);
  assert.equal(validateRotate({ grace: 500 }), 500);
  assert.equal(validateRotate({ grace: "30d" }), 30 * 86_400_000);
  assert.equal(paramOf(() => validateRotate({ grace: "31d" })), "grace");
  assert.equal(paramOf(() => validateRotate({ grace: "soon" })), "grace");
  assert.equal(paramOf(() => validateRotate({ grace: -1 })), "grace");
  assert.equal(paramOf(() => validateRotate({ wait: "1s" })), "wait");
});

Deno.test("validate: expires_at stays within year 9999, so the stored value is one the API takes back", () => {
  const c = config();
  const create = (expires_at: string) => () =>
    validateNewToken({ name: "far", models: ["*"], expires_at }, c, NOW);
  for (const far of ["9999-12-31", "9999-12-31T23:00:00-05:00"]) {
    assert.equal(paramOf(create(far)), "expires_at", far);
  }
  const latest = validateNewToken({ name: "far", models: ["*"], expires_at: "9999-12-31T23:59:59Z" }, c, NOW);
  assert.equal(latest.expires_at, "9999-12-31T23:59:59.000Z");
  // What is stored is accepted when sent back (a console edit, a script's PATCH of the token it read).
  const again = validateNewToken({ name: "far", models: ["*"], expires_at: latest.expires_at! }, c, NOW);
  assert.equal(again.expires_at, latest.expires_at);
  assert.equal(
    validateNewToken({ name: "far", models: ["*"], expires_at: "9999-12-30" }, c, NOW).expires_at,
    "9999-12-31T00:00:00.000Z",
  );
  const current = validateNewToken({ name: "far", models: ["*"] }, c, NOW);
  assert.equal(paramOf(() => validatePatch({ expires_at: "9999-12-31" }, current, c, NOW)), "expires_at");
});
