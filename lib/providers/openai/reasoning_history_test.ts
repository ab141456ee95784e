import assert from "node:assert/strict";
import type { ReasoningHistory } from "../../config/schema.ts";
import type { ChatMessage, ChatRequest } from "../../openai/types.ts";
import { toUpstreamChatBody } from "./request.ts";

const CALL = { id: "call_1", type: "function", function: { name: "ls", arguments: "{}" } };

/** A tool loop whose assistant turns carry reasoning as each kind of client sends it back. */
const HISTORY: ChatMessage[] = [
  { role: "user", content: "List the files." },
  // Codex / Claude Code through the gateway, and DeepSeek's own clients: `reasoning_content`.
  { role: "assistant", content: null, reasoning_content: "I should run ls.", tool_calls: [CALL] },
  { role: "tool", tool_call_id: "call_1", content: "a.txt" },
  // An OpenRouter client: `reasoning`.
  { role: "assistant", content: "One file.", reasoning: "It listed one." },
  { role: "user", content: "Thanks." },
];

const request: ChatRequest = { model: "chat-alias", messages: HISTORY };

function sent(mode: ReasoningHistory): ChatMessage[] {
  const body = toUpstreamChatBody(request, "m", { stream_usage: true, reasoning_history: mode });
  return body.messages as ChatMessage[];
}

Deno.test("reasoning history: reasoning_content (the default) sends the history as the client did", () => {
  assert.equal(sent("reasoning_content"), HISTORY);
});

Deno.test("reasoning history: reasoning sends each assistant turn's reasoning under that name", () => {
  const messages = sent("reasoning");
  assert.deepEqual(messages[1], {
    role: "assistant",
    content: null,
    tool_calls: [CALL],
    reasoning: "I should run ls.",
  });
  assert.deepEqual(messages[3], { role: "assistant", content: "One file.", reasoning: "It listed one." });
  // A turn carrying both names goes with the one the upstream reads, once.
  const both = toUpstreamChatBody(
    { model: "a", messages: [{ role: "assistant", content: "x", reasoning: "r", reasoning_content: "rc" }] },
    "m",
    { stream_usage: true, reasoning_history: "reasoning" },
  );
  assert.deepEqual(both.messages, [{ role: "assistant", content: "x", reasoning: "r" }]);
});

Deno.test("reasoning history: drop sends no assistant turn's reasoning, and leaves the client's request as it was", () => {
  const before = structuredClone(HISTORY);
  const messages = sent("drop");
  assert.deepEqual(messages, [
    HISTORY[0],
    { role: "assistant", content: null, tool_calls: [CALL] },
    HISTORY[2],
    { role: "assistant", content: "One file." },
    HISTORY[4],
  ]);
  // The alias's next target (a DeepSeek that needs it) gets the request as the client sent it.
  assert.deepEqual(HISTORY, before);
  // A message of another role is not an assistant turn's reasoning; it goes as sent.
  const user: ChatMessage[] = [{ role: "user", content: "hi", reasoning_content: "odd" }];
  const body = toUpstreamChatBody({ model: "a", messages: user }, "m", {
    stream_usage: true,
    reasoning_history: "drop",
  });
  assert.equal(body.messages, user);
});

Deno.test("reasoning history: reasoning sends no reasoning for a turn whose reasoning_content is null", () => {
  const body = toUpstreamChatBody(
    { model: "a", messages: [{ role: "assistant", content: "x", reasoning_content: null }] },
    "m",
    { stream_usage: true, reasoning_history: "reasoning" },
  );
  assert.deepEqual(body.messages, [{ role: "assistant", content: "x" }]);
});
