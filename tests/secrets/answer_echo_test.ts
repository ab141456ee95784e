/**
 * An upstream that echoes the key it was sent in the identifiers of a success answer (`id`, `system_fingerprint`,
 * `model`, a Responses item's id, Anthropic's message id, Gemini's `responseId` / `modelVersion`): no client API
 * hands the key on, whole or streamed, translated (a chat completion as chat, Messages or Responses) or passed
 * through natively (Messages to Anthropic, Responses to a `native_responses` target, Gemini). One raw upstream
 * plays every vendor, answering by path with the key of the header it got.
 */
import assert from "node:assert/strict";
import { startEchoGateway } from "./echo_gateway.ts";
import { type RawRequest, type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";

const TOKEN = "gw-answer-echo-0123456789abcdef";
const KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";
/** Any 8-character run of the key is a leak: upstreams quote keys in part. */
const PIECE = KEY.slice(8, 20);

const json = (value: unknown): RawStep => ({
  status: 200,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify(value)],
});
const sse = (events: unknown[], named = false): RawStep => ({
  status: 200,
  headers: { "content-type": "text/event-stream" },
  chunks: [
    events.map((e) =>
      `${named ? `event: ${(e as { type: string }).type}\n` : ""}data: ${JSON.stringify(e)}\n\n`
    )
      .join("") + (named ? "" : "data: [DONE]\n\n"),
  ],
});

function chat(key: string, stream: boolean): RawStep {
  const base = { id: `chatcmpl-${key}`, created: 1, model: `m-${key}`, system_fingerprint: `fp_${key}` };
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  if (!stream) {
    return json({
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
      usage,
    });
  }
  const chunk = (delta: unknown, finish: string | null) => ({
    ...base,
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return sse([chunk({ role: "assistant", content: "hi" }, null), chunk({}, "stop"), {
    ...chunk({}, null),
    choices: [],
    usage,
  }]);
}

function responses(key: string, stream: boolean): RawStep {
  const item = {
    id: `msg_${key}`,
    type: "message",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: "hi", annotations: [] }],
  };
  const usage = { input_tokens: 1, output_tokens: 1, total_tokens: 2 };
  const response = (status: string, output: unknown[]) => ({
    id: `resp_${key}`,
    object: "response",
    created_at: 1,
    status,
    model: `m-${key}`,
    output,
    usage,
  });
  if (!stream) return json(response("completed", [item]));
  const at = { item_id: item.id, output_index: 0, content_index: 0 };
  return sse([
    { type: "response.created", sequence_number: 0, response: response("in_progress", []) },
    {
      type: "response.output_item.added",
      sequence_number: 1,
      output_index: 0,
      item: { ...item, status: "in_progress", content: [] },
    },
    { type: "response.output_text.delta", sequence_number: 2, ...at, delta: "hi" },
    { type: "response.output_item.done", sequence_number: 3, output_index: 0, item },
    { type: "response.completed", sequence_number: 4, response: response("completed", [item]) },
  ], true);
}

function messages(key: string, stream: boolean): RawStep {
  const message = {
    id: `msg_${key}`,
    type: "message",
    role: "assistant",
    model: `claude-${key}`,
    content: [{ type: "text", text: "hi" }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  };
  if (!stream) return json(message);
  return sse([
    { type: "message_start", message: { ...message, content: [], stop_reason: null } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } },
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 1 },
    },
    { type: "message_stop" },
  ], true);
}

function gemini(key: string, stream: boolean): RawStep {
  const answer = {
    candidates: [{ content: { role: "model", parts: [{ text: "hi" }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 },
    modelVersion: `gem-${key}`,
    responseId: `r-${key}`,
  };
  if (!stream) return json(answer);
  return { ...sse([answer]), chunks: [`data: ${JSON.stringify(answer)}\n\n`] };
}

function answer(req: RawRequest): RawStep {
  const key = (req.headers.get("authorization") ?? "").replace("Bearer ", "") ||
    req.headers.get("x-api-key") || req.headers.get("x-goog-api-key") || "";
  const body = req.body === "" ? {} : JSON.parse(req.body);
  if (req.path.includes(":streamGenerateContent")) return gemini(key, true);
  if (req.path.includes(":generateContent")) return gemini(key, false);
  if (req.path.endsWith("/messages")) return messages(key, body.stream === true);
  if (req.path.endsWith("/responses")) return responses(key, body.stream === true);
  return chat(key, body.stream === true);
}

Deno.test("answer echo: an upstream's ids quoting its key never reach a client, JSON or stream, translated or native", async () => {
  const up = startRawUpstream();
  up.stepFor = answer;
  const gw = await startEchoGateway(up.url, KEY, TOKEN);
  const auth = { authorization: `Bearer ${TOKEN}`, "x-api-key": TOKEN, "x-goog-api-key": TOKEN };
  const calls: [string, string, (stream: boolean) => unknown][] = [];
  const chatBody = (model: string) => (stream: boolean) => ({
    model,
    stream,
    messages: [{ role: "user", content: "hi" }],
  });
  const messagesBody = (model: string) => (stream: boolean) => ({
    model,
    stream,
    max_tokens: 16,
    messages: [{ role: "user", content: "hi" }],
  });
  const responsesBody = (model: string) => (stream: boolean) => ({ model, stream, input: "hi" });
  for (const model of ["oa", "claude", "gem"]) {
    calls.push([`chat ${model}`, "/v1/chat/completions", chatBody(model)]);
  }
  for (const model of ["oa", "claude"]) {
    calls.push([`messages ${model}`, "/v1/messages", messagesBody(model)]);
  }
  for (const model of ["oa", "native"]) {
    calls.push([`responses ${model}`, "/v1/responses", responsesBody(model)]);
  }
  const leaks: string[] = [];
  try {
    for (const [name, path, body] of calls) {
      for (const stream of [false, true]) {
        const res = await fetch(`${gw.url}${path}`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify(body(stream)),
        });
        const text = await res.text();
        assert.equal(res.status, 200, `${name} stream=${stream}: ${text}`);
        if (text.includes(PIECE)) leaks.push(`${name}${stream ? " stream" : ""}`);
      }
    }
    for (const stream of [false, true]) {
      const method = stream ? "streamGenerateContent?alt=sse" : "generateContent";
      const res = await fetch(`${gw.url}/v1beta/models/gem:${method}`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
      });
      const text = await res.text();
      assert.equal(res.status, 200, `gemini stream=${stream}: ${text}`);
      if (text.includes(PIECE)) leaks.push(`gemini native${stream ? " stream" : ""}`);
    }
    assert.deepEqual(leaks, [], "answers that handed the key to the client");
    assert.ok(!JSON.stringify(gw.logs).includes(PIECE), "a log line holds the key");
    assert.ok(up.requests.length >= 16, "every call reached the upstream");
  } finally {
    await gw.stop();
    await up.stop();
  }
});
