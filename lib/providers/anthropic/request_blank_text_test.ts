/**
 * Anthropic refuses a text block that is empty or only whitespace ("text content blocks must contain
 * non-whitespace text"): one blank turn in a history (an assistant turn of "\n") failed the whole request. What
 * the translation sends instead: no block for blank text, no turn left without blocks.
 */
import assert from "node:assert/strict";
import { translate } from "./request_test_helpers.ts";

Deno.test("anthropic request: whitespace-only text is left out, and a turn left empty with it", () => {
  const body = translate({
    messages: [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "\n" },
      { role: "user", content: [{ type: "text", text: "again" }, { type: "text", text: " \t" }] },
      { role: "assistant", content: [{ type: "text", text: "\n\n" }, { type: "text", text: "Sure." }] },
      { role: "user", content: "Thanks" },
    ],
  });
  // The blank assistant turn is gone, so its neighbours are one user turn (Anthropic needs alternation).
  assert.deepEqual(body.messages, [
    { role: "user", content: [{ type: "text", text: "Hi" }, { type: "text", text: "again" }] },
    { role: "assistant", content: "Sure." },
    { role: "user", content: "Thanks" },
  ]);
});

Deno.test("anthropic request: a blank system part is not sent as a block when the system prompt is marked", () => {
  const body = translate({
    messages: [
      {
        role: "system",
        content: [
          { type: "text", text: "You are terse.", cache_control: { type: "ephemeral" } },
          { type: "text", text: "\n" },
        ],
      },
      { role: "user", content: "Hi" },
    ],
  });
  assert.deepEqual(body.system, [{
    type: "text",
    text: "You are terse.",
    cache_control: { type: "ephemeral" },
  }]);
});
