/**
 * A replayed hit drives the translated stream bodies exactly as a real upstream's stream does: the chunks of
 * `completionChunks` through the Messages and Responses bodies come out as the same answer those APIs give for
 * the completion unstreamed, in their events' order.
 */
import assert from "node:assert/strict";
import type { ChatCompletion, ChatCompletionChunk, JsonObject, Usage } from "../openai/types.ts";
import { completionToMessage, type MessageFrame } from "../api/messages/response.ts";
import { messagesStreamBody } from "../api/messages/stream.ts";
import { parseResponsesRequest } from "../api/responses/request.ts";
import { completionToResponse, newId, type ResponseFrame } from "../api/responses/response.ts";
import { responsesStreamBody } from "../api/responses/stream.ts";
import { loadOpenApiSchemas } from "../../tests/helpers/openapi_schema.ts";
import { checkEvents, parseSse } from "../../tests/helpers/responses_conformance.ts";
import type { Peeked } from "../answer/stream_body.ts";
import { completionChunks } from "./chunks.ts";

/** The spec's schemas (null on a local run without the spec). */
const schemas = await loadOpenApiSchemas();

const USAGE: Usage = { prompt_tokens: 20, completion_tokens: 64, total_tokens: 84 };
const ARGS = JSON.stringify({ city: "Paris", days: 5, hourly: true, units: "metric", lang: "en" });

/** Reasoning, text and two tool calls: every kind of delta a translated body reads. */
const TOOLS: ChatCompletion = {
  id: "chatcmpl-cached",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "gpt-test",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      reasoning_content: "The user wants the weather; I should call the forecast tool for Paris.",
      content: "Let me look that up for you, one moment please.",
      tool_calls: [
        { id: "call_a", type: "function", function: { name: "forecast", arguments: ARGS } },
        { id: "call_b", type: "function", function: { name: "clock", arguments: "{}" } },
      ],
    },
    logprobs: null,
    finish_reason: "tool_calls",
  }],
  usage: USAGE,
};

const REFUSAL: ChatCompletion = {
  ...TOOLS,
  choices: [{
    index: 0,
    message: { role: "assistant", content: null, refusal: "I'm sorry, but I can't help with that request." },
    logprobs: null,
    finish_reason: "stop",
  }],
};

function peeked(completion: ChatCompletion): Peeked<ChatCompletionChunk> {
  const [first, ...rest] = completionChunks(completion, { id: "chatcmpl-hit", created: 2 });
  return { first, rest: ReadableStream.from(rest).getReader() };
}

const noCount = () => Promise.reject(new Error("the replay carries usage"));

const MESSAGE_FRAME: MessageFrame = { id: "msg_hit", alias: "coder", stopSequences: [], provider: "up" };

async function messagesEvents(completion: ChatCompletion): Promise<JsonObject[]> {
  let end = "";
  const body = messagesStreamBody(peeked(completion), {
    frame: MESSAGE_FRAME,
    inputTokens: 20,
    startedAt: performance.now(),
    countUsage: noCount,
    onEnd: (o) => end = o.end,
  });
  const text = await new Response(body).text();
  assert.equal(end, "ok");
  return text.trim().split("\n\n").map((frame) => {
    const [event, data] = frame.split("\n");
    const parsed = JSON.parse(data.slice("data: ".length)) as JsonObject;
    assert.equal(event.slice("event: ".length), parsed.type);
    return parsed;
  });
}

/** The Message a client builds from the events: content blocks with their deltas applied, the final stop. */
function messageOf(events: JsonObject[]): JsonObject {
  const message = structuredClone(events[0].message as JsonObject);
  const blocks = message.content as JsonObject[];
  const json: string[] = [];
  for (const e of events) {
    const index = e.index as number;
    if (e.type === "content_block_start") blocks[index] = structuredClone(e.content_block as JsonObject);
    if (e.type !== "content_block_delta") continue;
    const d = e.delta as JsonObject;
    if (d.type === "text_delta") blocks[index].text += d.text as string;
    if (d.type === "thinking_delta") blocks[index].thinking += d.thinking as string;
    if (d.type === "input_json_delta") json[index] = (json[index] ?? "") + d.partial_json;
  }
  json.forEach((text, index) => blocks[index].input = JSON.parse(text));
  const delta = events.at(-2)!;
  Object.assign(message, delta.delta, { usage: delta.usage });
  return message;
}

/** Event types with runs of the same delta type collapsed to one, to read the order. */
function shape(events: JsonObject[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    const name = e.type === "content_block_delta"
      ? `delta:${(e.delta as JsonObject).type}`
      : e.type === "content_block_start"
      ? `start:${(e.content_block as JsonObject).type}`
      : String(e.type);
    if (out.at(-1) !== name || !name.startsWith("delta:")) out.push(name);
  }
  return out;
}

Deno.test("cache replay: a hit through the Messages body gives OpenAI-upstream events and the unstreamed Message", async () => {
  const events = await messagesEvents(TOOLS);
  assert.deepEqual(shape(events), [
    "message_start",
    "start:thinking",
    "delta:thinking_delta",
    "content_block_stop",
    "start:text",
    "delta:text_delta",
    "content_block_stop",
    "start:tool_use",
    "delta:input_json_delta",
    "content_block_stop",
    "start:tool_use",
    "delta:input_json_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  // Really a stream: several deltas per block.
  assert.ok(events.filter((e) => (e.delta as JsonObject)?.type === "text_delta").length >= 2);
  const streamed = messageOf(events);
  const whole = completionToMessage(TOOLS, MESSAGE_FRAME, USAGE);
  assert.deepEqual(streamed.content, whole.content);
  assert.equal(streamed.stop_reason, "tool_use");
  assert.equal((streamed.usage as JsonObject).output_tokens, 64);
});

Deno.test("cache replay: a refusal through the Messages body ends as a refusal", async () => {
  const events = await messagesEvents(REFUSAL);
  assert.equal(events.at(-1)!.type, "message_stop");
  const streamed = messageOf(events);
  const whole = completionToMessage(REFUSAL, MESSAGE_FRAME, USAGE);
  assert.deepEqual(streamed.content, whole.content);
  assert.equal(streamed.stop_reason, whole.stop_reason);
});

const RESPONSE_FRAME: ResponseFrame = {
  id: newId("resp_"),
  createdAt: 2,
  alias: "a",
  params: parseResponsesRequest({ model: "a", input: "Weather?" }).params,
};

async function responsesEvents(completion: ChatCompletion) {
  let end = "";
  const body = responsesStreamBody(peeked(completion), {
    frame: RESPONSE_FRAME,
    startedAt: performance.now(),
    countUsage: noCount,
    maxOutput: 32 * 1024 * 1024,
    onEnd: (o) => end = o.end,
  });
  const events = parseSse(await new Response(body).text());
  assert.equal(end, "ok");
  return events;
}

/** Output items without their ids (each rendering makes its own). */
function withoutIds(output: unknown): JsonObject[] {
  return (output as JsonObject[]).map(({ id: _, ...item }) => item);
}

for (
  const [name, completion] of [["reasoning, text and tool calls", TOOLS], ["a refusal", REFUSAL]] as const
) {
  Deno.test(`cache replay: ${name} through the Responses body is a conforming stream of the unstreamed Response`, async () => {
    const events = await responsesEvents(completion);
    const final = checkEvents(schemas, events);
    assert.equal(events.at(-1)!.type, "response.completed");
    const whole = completionToResponse(completion, RESPONSE_FRAME, USAGE);
    assert.deepEqual(withoutIds(final.output), withoutIds(whole.output));
    assert.deepEqual(final.usage, whole.usage);
    assert.equal(final.status, whole.status);
  });
}

Deno.test("cache replay: the Responses items come in OpenAI's order: reasoning, message, function calls", async () => {
  const events = await responsesEvents(TOOLS);
  const added = events.filter((e) => e.type === "response.output_item.added").map((e) =>
    (e.item as JsonObject).type
  );
  assert.deepEqual(added, ["reasoning", "message", "function_call", "function_call"]);
  const argDeltas = events.filter((e) => e.type === "response.function_call_arguments.delta");
  assert.ok(argDeltas.length >= 3, `${argDeltas.length} argument deltas`);
});
