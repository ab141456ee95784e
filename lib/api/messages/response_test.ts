import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { ChatCompletion, JsonObject } from "../../openai/types.ts";
import { completionToMessage, type MessageFrame, messagesUsage, newId } from "./response.ts";

const FRAME: MessageFrame = { id: "msg_1", alias: "coder", stopSequences: ["###"], provider: "up" };

function completion(message: JsonObject, finish: string, extra: JsonObject = {}): ChatCompletion {
  return {
    id: "c",
    object: "chat.completion",
    created: 1,
    model: "upstream-model",
    choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish, ...extra }],
  };
}

const USAGE = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };

Deno.test("messages response: thinking, text and tool_use blocks in Claude's order, alias as model", () => {
  const message = completionToMessage(
    completion({
      content: "Let me check.",
      reasoning_content: "Weather needs a tool.",
      tool_calls: [{
        id: "call_9",
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris"}' },
      }],
    }, "tool_calls"),
    FRAME,
    USAGE,
  );
  assert.deepEqual(message, {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "coder",
    content: [
      { type: "thinking", thinking: "Weather needs a tool.", signature: "" },
      { type: "text", text: "Let me check." },
      { type: "tool_use", id: "call_9", name: "get_weather", input: { city: "Paris" } },
    ],
    stop_reason: "tool_use",
    stop_sequence: null,
    usage: {
      input_tokens: 100,
      output_tokens: 20,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  });
});

Deno.test("messages response: stop reasons from finish reasons, a refusal, a named stop sequence", () => {
  const stop = (finish: string, message: JsonObject = { content: "x" }, extra: JsonObject = {}) => {
    const m = completionToMessage(completion(message, finish, extra), FRAME, USAGE);
    return [m.stop_reason, m.stop_sequence];
  };
  assert.deepEqual(stop("stop"), ["end_turn", null]);
  assert.deepEqual(stop("length"), ["max_tokens", null]);
  assert.deepEqual(stop("content_filter"), ["refusal", null]);
  assert.deepEqual(stop("stop", { content: "x" }, { stop_reason: "###" }), ["stop_sequence", "###"]);
  assert.deepEqual(stop("stop", { content: null, refusal: "I can't." }), ["refusal", null]);
  // A tool call is a tool_use stop whatever the finish says (Gemini's OpenAI layer says `stop`), unless cut off.
  const call = { tool_calls: [{ id: "a", function: { name: "f", arguments: "{}" } }] };
  assert.deepEqual(stop("stop", call), ["tool_use", null]);
  assert.deepEqual(stop("stop", call, { stop_reason: "###" }), ["tool_use", null]);
  assert.deepEqual(stop("length", call), ["max_tokens", null]);
});

Deno.test("messages response: cache reads and writes (both lifetimes, as providers report them) are apart from input_tokens", () => {
  assert.deepEqual(
    messagesUsage({
      prompt_tokens: 1000,
      completion_tokens: 5,
      total_tokens: 1005,
      prompt_tokens_details: { cached_tokens: 800, cache_write_5m_tokens: 100, cache_write_1h_tokens: 50 },
    }),
    { input_tokens: 50, output_tokens: 5, cache_creation_input_tokens: 150, cache_read_input_tokens: 800 },
  );
});

Deno.test("messages response: tool arguments that are not a JSON object are the upstream's fault", () => {
  assert.throws(
    () =>
      completionToMessage(
        completion({ tool_calls: [{ id: "a", function: { name: "f", arguments: "[1," } }] }, "tool_calls"),
        FRAME,
        USAGE,
      ),
    (err: unknown) => err instanceof GatewayError && err.status === 502,
  );
  assert.match(newId("msg_"), /^msg_[0-9A-Za-z]{24}$/);
});
