/**
 * `budget.stop_streams` weighs reasoning text at a reasoning rate priced apart from output
 * (lib/answer/budget_guard.ts), so every client API's stream must keep the reasoning it sent apart in its
 * texts (`StreamTexts.reasoningChars`) while counting it with the rest: translated from a chat upstream
 * (`reasoning_content`) and passed through natively (Anthropic's thinking deltas, the Responses API's reasoning
 * deltas, Gemini's thought parts).
 */
import assert from "node:assert/strict";
import type { ChatCompletionChunk } from "../../lib/openai/types.ts";
import { StreamTexts } from "../../lib/usage/stream_texts.ts";
import { type ChatStreamOutcome, presentChunk } from "../../lib/api/chat/stream.ts";
import { GeminiChunks } from "../../lib/api/gemini/response.ts";
import { pushAnswerParts } from "../../lib/api/gemini/native.ts";
import { MessageEvents } from "../../lib/api/messages/stream.ts";
import { pushEventText as pushMessagesEventText } from "../../lib/api/messages/native.ts";
import { ResponseEvents } from "../../lib/api/responses/stream.ts";
import { StreamOutputTexts } from "../../lib/api/responses/output_texts.ts";
import { parseResponsesRequest } from "../../lib/api/responses/request.ts";
import { newId } from "../../lib/api/responses/response.ts";

const THINKING = "Let me think this through."; // 26 characters
const ANSWER = "The answer is 42."; // 17 characters

function chunk(delta: Record<string, unknown>): ChatCompletionChunk {
  return {
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "u",
    choices: [{ index: 0, delta, finish_reason: null }],
  };
}

const CHUNKS = [chunk({ reasoning_content: THINKING }), chunk({ content: ANSWER })];

function assertApart(texts: StreamTexts, api: string) {
  assert.equal(texts.chars, THINKING.length + ANSWER.length, `${api}: every text counted`);
  assert.equal(texts.reasoningChars, THINKING.length, `${api}: the reasoning kept apart`);
}

Deno.test("stream budget: each translated client API's stream keeps the reasoning it sent apart", () => {
  const chat: ChatStreamOutcome = { end: "ok", chunks: 0, texts: new StreamTexts() };
  for (const c of CHUNKS) presentChunk(structuredClone(c), "a", false, chat);
  assertApart(chat.texts, "chat");

  const gemini = new GeminiChunks({ alias: "a", responseId: "r", thoughts: true });
  for (const c of CHUNKS) gemini.chunk(structuredClone(c));
  assertApart(gemini.texts, "gemini");

  const messages = new MessageEvents({ id: "msg_1", alias: "a", stopSequences: [], provider: "up" });
  messages.start(10);
  for (const c of CHUNKS) messages.chunk(structuredClone(c));
  assertApart(messages.texts, "messages");

  const responses = new ResponseEvents({
    id: newId("resp_"),
    createdAt: 1,
    alias: "a",
    params: parseResponsesRequest({ model: "a", input: "Hi" }).params,
  });
  responses.start();
  for (const c of CHUNKS) responses.chunk(structuredClone(c));
  assertApart(responses.texts, "responses");
});

Deno.test("stream budget: each native pass-through keeps the upstream's reasoning apart", () => {
  const anthropic = new StreamTexts();
  pushMessagesEventText({
    type: "content_block_delta",
    index: 0,
    delta: { type: "thinking_delta", thinking: THINKING },
  }, anthropic);
  pushMessagesEventText({
    type: "content_block_delta",
    index: 0,
    delta: { type: "signature_delta", signature: "sig" },
  }, anthropic);
  pushMessagesEventText({
    type: "content_block_delta",
    index: 1,
    delta: { type: "text_delta", text: ANSWER },
  }, anthropic);
  assertApart(anthropic, "messages (native)");

  const openai = new StreamTexts();
  const written = new StreamOutputTexts();
  const pushResponsesEventText = (event: Record<string, unknown>, out: StreamTexts) =>
    written.push(event, out);
  pushResponsesEventText(
    { type: "response.reasoning_summary_text.delta", delta: THINKING.slice(0, 10) },
    openai,
  );
  pushResponsesEventText({ type: "response.reasoning_text.delta", delta: THINKING.slice(10) }, openai);
  pushResponsesEventText({ type: "response.output_text.delta", delta: ANSWER }, openai);
  assertApart(openai, "responses (native)");

  const google = new StreamTexts();
  pushAnswerParts({
    candidates: [{ content: { role: "model", parts: [{ text: THINKING, thought: true }] } }],
  }, google);
  pushAnswerParts({ candidates: [{ content: { role: "model", parts: [{ text: ANSWER }] } }] }, google);
  assertApart(google, "gemini (native)");
});
