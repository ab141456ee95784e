/**
 * What a whole answer puts in its trace's captured output: the answer's text apart from its reasoning, as the
 * stream of the same answer does (lib/usage/stream_texts.ts `said`), and its tool calls' texts with the answer.
 */
import assert from "node:assert/strict";
import type { ChatCompletion } from "../openai/types.ts";
import type { SaidTexts } from "../openai/said_fields.ts";
import type { RequestTrace } from "../telemetry/request_trace.ts";
import { captureJson } from "./traced_answer.ts";

/** What `captureJson` tells a trace of `message` as a whole chat completion's. */
function captured(message: Record<string, unknown>): SaidTexts[] {
  const out: SaidTexts[] = [];
  const trace = { captureOutput: (said: SaidTexts) => out.push(said) } as unknown as RequestTrace;
  const body = {
    id: "c",
    object: "chat.completion",
    created: 1,
    model: "m",
    choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", ...message } }],
  } as unknown as ChatCompletion;
  captureJson(trace, { kind: "json", body }, undefined);
  return out;
}

Deno.test("content capture: a whole answer's text is its content, its reasoning apart", () => {
  assert.deepEqual(
    captured({ content: "Hi there.", reasoning_content: "The user greets me; answer briefly." }),
    [
      { text: ["Hi there."], reasoning: ["The user greets me; answer briefly."] },
    ],
  );
  assert.deepEqual(captured({ content: "Hi." }), [{ text: ["Hi."], reasoning: [] }]);
});

Deno.test("content capture: a whole answer's tool calls' texts go with its text, a refusal too", () => {
  const call = {
    id: "call_1",
    type: "function",
    function: { name: "get_weather", arguments: '{"city":"Paris"}' },
  };
  assert.deepEqual(captured({ content: null, reasoning_content: "Weather: ask.", tool_calls: [call] }), [
    { text: ['{"city":"Paris"}'], reasoning: ["Weather: ask."] },
  ]);
  assert.deepEqual(captured({ content: null, refusal: "I can't help with that." }), [
    { text: ["I can't help with that."], reasoning: [] },
  ]);
});
