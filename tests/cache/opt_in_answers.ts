/**
 * Upstream answers for the cache opt-in tests (cache_opt_ins_test.ts), one per vendor wire format and per way
 * an answer can end that the cache's opt-ins are about, JSON and streamed:
 *
 * - `calls`: it hands the client a tool call to run, and ended normally;
 * - `cut`: it was cut off by its output limit (`length`, `incomplete`, `max_tokens`, `MAX_TOKENS`);
 * - `both`: it holds a tool call for the client and was cut off;
 * - `two`: two choices (Gemini candidates), each ended normally (only where the wire format has choices).
 *
 * @module
 */
import { dataEvents, type RawStep, sseStep, typedEvents } from "../helpers/raw_upstream.ts";

type Json = Record<string, unknown>;

/** How the answer ends (see the module doc). */
export type Ending = "calls" | "cut" | "both" | "two";

const json = (body: unknown): RawStep => ({
  status: 200,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify(body)],
});

/** An OpenAI chat completion (the translated targets' wire format). */
export function chatAnswer(ending: Ending, stream: boolean): RawStep {
  const calls = ending === "calls" || ending === "both";
  const finish = ending === "calls" ? "tool_calls" : ending === "two" ? "stop" : "length";
  const call = { id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } };
  const choices = ending === "two" ? [0, 1] : [0];
  const frame = { id: "chatcmpl-up", created: 1, model: "m" };
  const usage = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };
  if (!stream) {
    return json({
      ...frame,
      object: "chat.completion",
      choices: choices.map((index) => ({
        index,
        message: {
          role: "assistant",
          content: calls ? null : `partial ${index}`,
          ...(calls ? { tool_calls: [call] } : {}),
        },
        logprobs: null,
        finish_reason: finish,
      })),
      usage,
    });
  }
  const chunk = (index: number, delta: Json, finishReason: string | null) => ({
    ...frame,
    object: "chat.completion.chunk",
    choices: [{ index, delta, logprobs: null, finish_reason: finishReason }],
  });
  const events = choices.flatMap((index) => [
    chunk(index, { role: "assistant", content: calls ? null : `partial ${index}` }, null),
    ...(calls ? [chunk(index, { tool_calls: [{ index: 0, ...call }] }, null)] : []),
    chunk(index, {}, finish),
  ]);
  return sseStep(
    dataEvents([...events, { ...frame, object: "chat.completion.chunk", choices: [], usage }], true),
  );
}

/** A Response of OpenAI's Responses API (a `native_responses` target). */
export function responsesAnswer(ending: Ending, stream: boolean): RawStep {
  const cut = ending === "cut" || ending === "both";
  const item = ending === "cut"
    ? {
      type: "message",
      id: "msg_1",
      role: "assistant",
      content: [{ type: "output_text", text: "partial", annotations: [] }],
    }
    : { type: "function_call", id: "fc_1", call_id: "call_1", name: "lookup", arguments: '{"q":"x"}' };
  const done = {
    id: "resp_up1",
    object: "response",
    created_at: 1,
    status: cut ? "incomplete" : "completed",
    incomplete_details: cut ? { reason: "max_output_tokens" } : null,
    model: "gpt-5",
    output: [{ ...item, status: cut ? "incomplete" : "completed" }],
    usage: { input_tokens: 5, output_tokens: 3, total_tokens: 8 },
  };
  if (!stream) return json(done);
  return sseStep(typedEvents([
    {
      type: "response.created",
      sequence_number: 0,
      response: { ...done, status: "in_progress", output: [] },
    },
    {
      type: "response.output_item.added",
      sequence_number: 1,
      output_index: 0,
      item: { ...item, status: "in_progress" },
    },
    { type: "response.output_item.done", sequence_number: 2, output_index: 0, item: done.output[0] },
    { type: cut ? "response.incomplete" : "response.completed", sequence_number: 3, response: done },
  ]));
}

/** A message of Anthropic's Messages API (a Claude target). */
export function messagesAnswer(ending: Ending, stream: boolean): RawStep {
  const text = { type: "text", text: "partial" };
  const tool = { type: "tool_use", id: "toolu_1", name: "lookup", input: { q: "x" } };
  const content = ending === "calls" ? [tool] : ending === "cut" ? [text] : [text, tool];
  const stopReason = ending === "calls" ? "tool_use" : "max_tokens";
  const usage = { input_tokens: 5, output_tokens: 3 };
  const message = {
    id: "msg_up1",
    type: "message",
    role: "assistant",
    model: "claude-x",
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage,
  };
  if (!stream) return json(message);
  const blocks = content.flatMap((block, index) => [
    {
      type: "content_block_start",
      index,
      content_block: block.type === "text" ? { type: "text", text: "" } : { ...block, input: {} },
    },
    {
      type: "content_block_delta",
      index,
      delta: block.type === "text"
        ? { type: "text_delta", text: "partial" }
        : { type: "input_json_delta", partial_json: '{"q":"x"}' },
    },
    { type: "content_block_stop", index },
  ]);
  return sseStep(typedEvents([
    { type: "message_start", message: { ...message, content: [], stop_reason: null } },
    ...blocks,
    {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: 3 },
    },
    { type: "message_stop" },
  ]));
}

/** A GenerateContentResponse of Google's Gemini API (a Gemini target). */
export function geminiAnswer(ending: Ending, stream: boolean): RawStep {
  const parts = ending === "cut" || ending === "two"
    ? [{ text: "partial" }]
    : [{ functionCall: { name: "lookup", args: { q: "x" } } }];
  const finishReason = ending === "calls" || ending === "two" ? "STOP" : "MAX_TOKENS";
  const candidates = (ending === "two" ? [0, 1] : [0]).map((index) => ({
    index,
    content: { role: "model", parts },
    finishReason,
  }));
  const body = {
    candidates,
    usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 },
    modelVersion: "gemini-x",
    responseId: "gem-up-1234",
  };
  return stream ? sseStep(dataEvents([body])) : json(body);
}
