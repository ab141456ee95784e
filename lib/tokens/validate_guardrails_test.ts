/**
 * A token's `guardrails` through the admin API's bodies: names of the live config's `guardrails:` only (an
 * unknown one is a 400 on `guardrails.<i>` naming the known ones), kept in order; null (or an empty list)
 * clears them; a patch checks only the names it gives.
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
  chat-free: { type: chat, targets: [ { provider: local, model: echo } ] }
guardrails:
  no-cards: { type: pii, entities: [CREDIT_CARD] }
  no-mail: { type: pii, entities: [EMAIL], action: mask }
`;

function config(text = CONFIG): ResolvedConfig {
  const result = parseConfigText(text, { source: "<test>", env: {} });
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

Deno.test("validate guardrails: known names are kept in order; none, null and [] are null", () => {
  const c = config();
  const base = { name: "a", models: ["chat-free"] };
  assert.deepEqual(validateNewToken({ ...base, guardrails: ["no-mail", "no-cards"] }, c, NOW).guardrails, [
    "no-mail",
    "no-cards",
  ]);
  assert.equal(validateNewToken(base, c, NOW).guardrails, null);
  assert.equal(validateNewToken({ ...base, guardrails: null }, c, NOW).guardrails, null);
  assert.equal(validateNewToken({ ...base, guardrails: [] }, c, NOW).guardrails, null);
});

Deno.test("validate guardrails: an unknown name is a 400 on its index, naming the known guardrails", () => {
  const c = config();
  const base = { name: "a", models: ["chat-free"] };
  const err = refusal(() => validateNewToken({ ...base, guardrails: ["no-cards", "no-ssn"] }, c, NOW));
  assert.equal(err.param, "guardrails.1");
  assert.match(err.message, /"no-ssn"/);
  assert.match(err.message, /"no-cards", "no-mail"/);
  // A config without guardrails says there are none.
  const bare = config(CONFIG.slice(0, CONFIG.indexOf("guardrails:")));
  const none = refusal(() => validateNewToken({ ...base, guardrails: ["no-cards"] }, bare, NOW));
  assert.equal(none.param, "guardrails.0");
  assert.match(none.message, /there are none/);
  // Not a list of names: the schema's own refusals, on their path.
  assert.equal(
    refusal(() => validateNewToken({ ...base, guardrails: "no-cards" }, c, NOW)).param,
    "guardrails",
  );
  assert.equal(refusal(() => validateNewToken({ ...base, guardrails: [7] }, c, NOW)).param, "guardrails.0");
});

Deno.test("validate guardrails in a patch: set, cleared by null, left alone when absent", () => {
  const c = config();
  const current: TokenFields = validateNewToken({ name: "a", models: ["chat-free"] }, c, NOW);
  assert.deepEqual(validatePatch({ guardrails: ["no-cards"] }, current, c, NOW), {
    guardrails: ["no-cards"],
  });
  const guarded: TokenFields = { ...current, guardrails: ["no-cards"] };
  assert.deepEqual(validatePatch({ guardrails: null }, guarded, c, NOW), { guardrails: null });
  assert.deepEqual(validatePatch({ guardrails: [] }, guarded, c, NOW), { guardrails: null });
  assert.deepEqual(validatePatch({ disabled: true }, guarded, c, NOW), { disabled: true });
  assert.equal(refusal(() => validatePatch({ guardrails: ["nope"] }, guarded, c, NOW)).param, "guardrails.0");
  // A guardrail the token has that left the config since: its other fields still change.
  const orphan: TokenFields = { ...current, guardrails: ["gone"] };
  assert.deepEqual(validatePatch({ max_tokens: 5 }, orphan, c, NOW), { max_tokens: 5 });
});
