/**
 * A request of system (or developer) messages only, which OpenAI answers: Anthropic refuses a request without
 * messages, so their text is the one user turn (and not also the system prompt: the client said it once).
 */
import assert from "node:assert/strict";
import { MODEL, translate } from "./request_test_helpers.ts";

Deno.test("anthropic request: system and developer messages alone are the user's turn, with no system prompt", () => {
  assert.deepEqual(translate({ messages: [{ role: "system", content: "Write a haiku about the sea." }] }), {
    model: MODEL,
    max_tokens: 4096,
    messages: [{ role: "user", content: "Write a haiku about the sea." }],
  });
  const both = translate({
    messages: [
      {
        role: "developer",
        content: [{ type: "text", text: "Write a haiku" }, { type: "text", text: "about the sea." }],
      },
      { role: "system", content: "In French." },
    ],
  });
  assert.deepEqual(both.messages, [{
    role: "user",
    content: [
      { type: "text", text: "Write a haiku" },
      { type: "text", text: "about the sea." },
      { type: "text", text: "In French." },
    ],
  }]);
  assert.equal("system" in both, false);
  // With a turn of the client's, the system prompt stays the system prompt.
  const kept = translate({
    messages: [{ role: "system", content: "Be terse." }, { role: "user", content: "Hi" }],
  });
  assert.equal(kept.system, "Be terse.");
  assert.deepEqual(kept.messages, [{ role: "user", content: "Hi" }]);
});

Deno.test("anthropic request: a prompt-caching marker on a system message alone stays on the user turn made of it", () => {
  const body = translate({
    messages: [{
      role: "system",
      content: "Write a haiku about the sea.",
      cache_control: { type: "ephemeral" },
    }],
  });
  assert.equal("system" in body, false);
  assert.deepEqual(body.messages, [{
    role: "user",
    content: [{ type: "text", text: "Write a haiku about the sea.", cache_control: { type: "ephemeral" } }],
  }]);
});
