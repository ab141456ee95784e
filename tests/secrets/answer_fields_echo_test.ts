/**
 * An upstream that echoes the key it was sent in what a success answer says of itself beyond its ids (why it
 * ended, its service tier, a string in its usage, a tool call's id, its container, an event's type, Gemini's
 * finish message, safety ratings and prompt feedback): no client API hands the key on, whole or streamed,
 * translated or passed through natively, over SSE or a WebSocket, nor a stored Response read back later. The
 * answers' content is plain ("hi"), so any run of the key the client gets came from one of those fields. One raw
 * upstream plays every vendor, answering by path with the key of the header it got.
 */
import assert from "node:assert/strict";
import { startEchoGateway } from "./echo_gateway.ts";
import {
  dataEvents,
  jsonStep,
  type RawRequest,
  type RawStep,
  sseStep,
  typedEvents,
} from "../helpers/raw_upstream.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

const TOKEN = "gw-answer-fields-0123456789abcdef";
const KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";
/** Any 8-character run of the key is a leak: upstreams quote keys in part. */
const PIECE = KEY.slice(8, 20);

function chat(key: string, stream: boolean): RawStep {
  const base = { id: "chatcmpl-1", created: 1, model: "m", service_tier: key };
  const call = { id: `call_${key}`, type: "function", function: { name: "f", arguments: "{}" } };
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, note: key };
  if (!stream) {
    return jsonStep({
      ...base,
      object: "chat.completion",
      choices: [{
        index: 0,
        message: { role: "assistant", content: "hi", tool_calls: [call] },
        finish_reason: key,
      }],
      usage,
    });
  }
  const chunk = (delta: unknown, finish: string | null) => ({
    ...base,
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return sseStep(dataEvents([
    chunk({ role: "assistant", content: "hi" }, null),
    chunk({ tool_calls: [{ index: 0, ...call }] }, null),
    chunk({}, key),
    { ...chunk({}, null), choices: [], usage },
  ], true));
}

function messages(key: string, stream: boolean): RawStep {
  const message = {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-x",
    content: [{ type: "text", text: "hi" }, { type: "tool_use", id: `toolu_${key}`, name: "f", input: {} }],
    stop_reason: key,
    stop_sequence: null,
    container: { id: key, expires_at: "2030-01-01T00:00:00Z" },
    usage: { input_tokens: 1, output_tokens: 1, service_tier: key },
  };
  if (!stream) return jsonStep(message);
  return sseStep(typedEvents([
    { type: "message_start", message: { ...message, content: [], stop_reason: null } },
    { type: `ping_${key}` },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } },
    { type: "content_block_stop", index: 0 },
    {
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: `toolu_${key}`, input: {} },
    },
    { type: "content_block_stop", index: 1 },
    { type: "message_delta", delta: { stop_reason: key, stop_sequence: null }, usage: { output_tokens: 1 } },
    { type: "message_stop" },
  ]));
}

function responses(key: string, stream: boolean): RawStep {
  const call = { id: "fc_1", type: "function_call", status: "completed", call_id: `call_${key}`, name: "f" };
  const response = {
    id: "resp_1",
    object: "response",
    created_at: 1,
    status: "incomplete",
    model: "m",
    output: [{ ...call, arguments: "{}" }],
    incomplete_details: { reason: key },
    service_tier: key,
    user: key,
    usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2, note: key },
  };
  if (!stream) return jsonStep(response);
  return sseStep(typedEvents([
    {
      type: "response.created",
      sequence_number: 0,
      response: { ...response, status: "in_progress", output: [] },
    },
    { type: `response.${key}`, sequence_number: 1 },
    {
      type: "response.output_item.added",
      sequence_number: 2,
      output_index: 0,
      item: { ...call, arguments: "" },
    },
    { type: "response.output_item.done", sequence_number: 3, output_index: 0, item: response.output[0] },
    { type: "response.incomplete", sequence_number: 4, response },
  ]));
}

function gemini(key: string, stream: boolean): RawStep {
  const answer = {
    candidates: [{
      content: { role: "model", parts: [{ text: "hi" }, { functionCall: { id: key, name: "f", args: {} } }] },
      finishReason: key,
      finishMessage: `finished: ${key}`,
      safetyRatings: [{ category: key, probability: "NEGLIGIBLE" }],
      index: 0,
    }],
    promptFeedback: { blockReasonMessage: key, safetyRatings: [{ category: key, probability: "LOW" }] },
    usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 },
    modelVersion: "gem-x",
    responseId: "r1",
  };
  return stream ? sseStep(dataEvents([answer])) : jsonStep(answer);
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

/** The events of one answer over the gateway's Responses WebSocket, as text. */
async function overWebSocket(url: string, body: unknown): Promise<string> {
  // Deno's WebSocket takes handshake headers as an extension of the standard constructor.
  const ws = new WebSocket(url.replace(/^http/, "ws") + "/v1/responses", {
    headers: { authorization: `Bearer ${TOKEN}` },
  } as unknown as string[]);
  const received: string[] = [];
  const done = new Promise<void>((resolve, reject) => {
    ws.onmessage = (e) => {
      received.push(String(e.data));
      const type = JSON.parse(String(e.data)).type;
      if (type === "response.incomplete" || type === "response.completed" || type === "error") resolve();
    };
    ws.onerror = () => reject(new Error("websocket failed"));
  });
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("handshake failed"));
  });
  ws.send(JSON.stringify({ type: "response.create", ...body as object }));
  await done;
  const closed = new Promise((resolve) => ws.addEventListener("close", resolve, { once: true }));
  ws.close();
  await closed;
  return received.join("\n");
}

Deno.test("answer fields echo: an upstream quoting its key in finish reasons, tiers, usage, tool call ids or event types never hands it to a client", async () => {
  const up = startRawUpstream();
  up.stepFor = answer;
  const gw = await startEchoGateway(up.url, KEY, TOKEN);
  const headers = {
    authorization: `Bearer ${TOKEN}`,
    "x-api-key": TOKEN,
    "x-goog-api-key": TOKEN,
    "content-type": "application/json",
  };
  const chatBody = (model: string, stream: boolean) => ({
    model,
    stream,
    messages: [{ role: "user", content: "hi" }],
  });
  const messagesBody = (model: string, stream: boolean) => ({ ...chatBody(model, stream), max_tokens: 16 });
  const responsesBody = (model: string, stream: boolean) => ({ model, stream, input: "hi" });
  const geminiBody = { contents: [{ role: "user", parts: [{ text: "hi" }] }] };
  const calls: [string, string, (stream: boolean) => unknown][] = [
    // Translated from an OpenAI chat completion into every client API.
    ["chat <- openai", "/v1/chat/completions", (s) => chatBody("oa", s)],
    ["messages <- openai", "/v1/messages", (s) => messagesBody("oa", s)],
    ["responses <- openai", "/v1/responses", (s) => responsesBody("oa", s)],
    ["gemini <- openai", "/v1beta/models/oa:generateContent", () => geminiBody],
    // Passed through natively.
    ["messages native", "/v1/messages", (s) => messagesBody("claude", s)],
    ["responses native", "/v1/responses", (s) => responsesBody("native", s)],
    ["gemini native", "/v1beta/models/gem:generateContent", () => geminiBody],
    // Translated from Anthropic and Gemini answers into chat.
    ["chat <- anthropic", "/v1/chat/completions", (s) => chatBody("claude", s)],
    ["chat <- gemini", "/v1/chat/completions", (s) => chatBody("gem", s)],
  ];
  const leaks: string[] = [];
  const stored: string[] = [];
  try {
    for (const [name, path, body] of calls) {
      for (const stream of [false, true]) {
        const url = stream && path.includes(":generateContent")
          ? path.replace(":generateContent", ":streamGenerateContent?alt=sse")
          : path;
        const res = await fetch(`${gw.url}${url}`, {
          method: "POST",
          headers,
          body: JSON.stringify(body(stream)),
        });
        const text = await res.text();
        assert.equal(res.status, 200, `${name} stream=${stream}: ${text}`);
        if (text.includes(PIECE)) leaks.push(`${name}${stream ? " stream" : ""}`);
        if (path === "/v1/responses" && !stream) stored.push(JSON.parse(text).id);
      }
    }
    for (const id of stored) {
      const res = await fetch(`${gw.url}/v1/responses/${id}`, { headers });
      const text = await res.text();
      assert.equal(res.status, 200, text);
      if (text.includes(PIECE)) leaks.push(`stored ${id}`);
    }
    for (const model of ["native", "oa"]) {
      if ((await overWebSocket(gw.url, { model, input: "hi" })).includes(PIECE)) {
        leaks.push(`websocket ${model}`);
      }
    }
    assert.deepEqual(leaks, [], "answers that handed the key to the client");
    assert.ok(!JSON.stringify(gw.logs).includes(PIECE), "a log line holds the key");
  } finally {
    await gw.stop();
    await up.stop();
  }
});
