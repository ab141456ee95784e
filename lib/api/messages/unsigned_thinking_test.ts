/** The thinking blocks the gateway made, left out of the body a native Claude target gets. */
import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { nativeMessagesBody } from "./native.ts";
import { withoutUnsignedThinking } from "./unsigned_thinking.ts";

const MADE = { type: "thinking", thinking: "Call write.", signature: "" };
const SIGNED = { type: "thinking", thinking: "Claude's own.", signature: "EqQBsigned" };
const REDACTED = { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" };
const CALL = { type: "tool_use", id: "t1", name: "write", input: {} };
const RESULT = { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] };
const THINKING = { type: "enabled", budget_tokens: 2048 };

const body = (messages: unknown[], extra: JsonObject = {}): JsonObject => ({
  model: "claude-alias",
  max_tokens: 4096,
  thinking: THINKING,
  messages,
  ...extra,
});

Deno.test("unsigned thinking: a body without any is the client's own", () => {
  const client = body([
    { role: "user", content: "hi" },
    { role: "assistant", content: [SIGNED, REDACTED, CALL] },
    RESULT,
  ]);
  const out = withoutUnsignedThinking(client);
  assert.equal(out.body, client);
  assert.deepEqual(out.dropped, []);
});

Deno.test("unsigned thinking: left out, and thinking off when the tool loop's last turn then starts without it", () => {
  const client = body([
    { role: "user", content: "hi" },
    { role: "assistant", content: [MADE, CALL] },
    RESULT,
  ], {
    context_management: {
      edits: [{ type: "clear_thinking_20251015" }, { type: "clear_tool_uses_20250919" }],
    },
  });
  const out = withoutUnsignedThinking(client);
  assert.deepEqual(out.body.messages, [
    { role: "user", content: "hi" },
    { role: "assistant", content: [CALL] },
    RESULT,
  ]);
  assert.equal(out.body.thinking, undefined);
  // Clearing thinking that is off would be refused too; the other edit stays.
  assert.deepEqual(out.body.context_management, { edits: [{ type: "clear_tool_uses_20250919" }] });
  assert.deepEqual(out.dropped, ["messages.1.content.0", "thinking", "context_management.edits.0"]);
  assert.deepEqual(
    (client.messages as JsonObject[])[1].content,
    [MADE, CALL],
    "the client's body is not changed",
  );
  assert.deepEqual(client.thinking, THINKING);
});

Deno.test("unsigned thinking: thinking stays on where Claude's rule still holds", () => {
  // An earlier turn's (Claude reads only the last one's), a signed block still leading, adaptive thinking too.
  const earlier = withoutUnsignedThinking(body([
    { role: "user", content: "hi" },
    { role: "assistant", content: [MADE, { type: "text", text: "Hello." }] },
    { role: "user", content: "Write it." },
  ], { thinking: { type: "adaptive" } }));
  assert.deepEqual(earlier.dropped, ["messages.1.content.0"]);
  assert.deepEqual(earlier.body.thinking, { type: "adaptive" });
  const signedFirst = withoutUnsignedThinking(body([
    { role: "user", content: "hi" },
    { role: "assistant", content: [SIGNED, MADE, CALL] },
    RESULT,
  ]));
  assert.deepEqual(signedFirst.dropped, ["messages.1.content.1"]);
  assert.deepEqual(signedFirst.body.thinking, THINKING);
  // A signature missing altogether is no Claude's either.
  const { signature: _, ...bare } = MADE;
  const missing = withoutUnsignedThinking(body([
    { role: "user", content: "hi" },
    { role: "assistant", content: [bare, { type: "text", text: "Hello." }] },
    { role: "user", content: "Go on." },
  ]));
  assert.deepEqual(missing.dropped, ["messages.1.content.0"]);
});

Deno.test("unsigned thinking: a turn of it alone is left out; a prefill that loses it turns thinking off", () => {
  const alone = withoutUnsignedThinking(body([
    { role: "user", content: "hi" },
    { role: "assistant", content: [MADE] },
    { role: "user", content: "Go on." },
  ]));
  assert.deepEqual(alone.body.messages, [{ role: "user", content: "hi" }, {
    role: "user",
    content: "Go on.",
  }]);
  assert.deepEqual(alone.dropped, ["messages.1.content.0"]);
  const prefill = withoutUnsignedThinking(body([
    { role: "user", content: "hi" },
    { role: "assistant", content: [MADE, { type: "text", text: "Sure" }] },
  ]));
  assert.deepEqual(prefill.dropped, ["messages.1.content.0", "thinking"]);
  // Without thinking on there is nothing to turn off.
  const off = withoutUnsignedThinking(body([
    { role: "user", content: "hi" },
    { role: "assistant", content: [MADE, CALL] },
    RESULT,
  ], { thinking: undefined }));
  assert.deepEqual(off.dropped, ["messages.1.content.0"]);
});

Deno.test("messages native body: a native target never gets the gateway's own thinking", () => {
  const client = body([
    { role: "user", content: "hi" },
    { role: "assistant", content: [MADE, CALL] },
    RESULT,
  ]);
  const sent = nativeMessagesBody(client, { model: "claude-sonnet-4-5", maxTokens: 1000 });
  assert.deepEqual((sent.messages as JsonObject[])[1].content, [CALL]);
  assert.equal(sent.thinking, undefined, "no budget lowered for thinking that is off");
  assert.equal(sent.max_tokens, 1000);
  assert.equal(sent.model, "claude-sonnet-4-5");
});
