/**
 * An upstream that echoes the key it was sent in the settings an answer repeats of its request: a Response's
 * `instructions` (a string or input items), `metadata` (its keys as well as its values), `tools` (descriptions,
 * parameter schemas nested deeper than any answer field, property names), `tool_choice`, `text` (its format and
 * schema), `reasoning`, `prompt`, `user`, `prompt_cache_key`, `safety_identifier`, `truncation`, `billing`;
 * a Messages answer's `context_management`. No client hands the key on: a Response whole, in every event that
 * carries one (`response.created`, `.queued`, `.in_progress`, and each final event: `.completed`, `.incomplete`,
 * `.failed`), over SSE or the Responses WebSocket, stored and read back, passed through natively or translated;
 * a Messages answer whole or streamed. The answers' content is plain ("hi"), so any run of the key the client
 * gets came from one of those fields. One raw upstream plays every vendor, answering by path with the key of
 * the header it got.
 */
import assert from "node:assert/strict";
import { startEchoGateway } from "./echo_gateway.ts";
import {
  dataEvents,
  jsonStep,
  type RawRequest,
  type RawStep,
  sseStep,
  startRawUpstream,
  typedEvents,
} from "../helpers/raw_upstream.ts";

const TOKEN = "gw-answer-settings-0123456789abcdef";
const KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";
/** Any 8-character run of the key is a leak: upstreams quote keys in part. */
const PIECE = KEY.slice(8, 20);

/** A JSON schema holding `key` in a description and a property name, `depth` objects down. */
function schema(key: string, depth: number): Record<string, unknown> {
  let inner: Record<string, unknown> = {
    type: "object",
    properties: { [key]: { type: "string", description: `the ${key}` } },
  };
  for (let i = 0; i < depth; i++) {
    inner = { type: "object", properties: { a: { type: "array", items: inner } } };
  }
  return inner;
}

/** The settings a Response repeats of its request, each holding `key`. */
function settings(key: string, itemized: boolean) {
  return {
    instructions: itemized
      ? [{ type: "message", role: "developer", content: [{ type: "input_text", text: `be brief ${key}` }] }]
      : `Be brief. ${key}`,
    metadata: { [key]: "v", note: key },
    tools: [
      { type: "function", name: "f", description: `calls ${key}`, parameters: schema(key, 6), strict: true },
      { type: "web_search", filters: { allowed_domains: [`${key}.example`] } },
    ],
    tool_choice: { type: "function", name: key },
    text: {
      format: { type: "json_schema", name: key, schema: schema(key, 1), strict: true },
      verbosity: key,
    },
    reasoning: { effort: key, summary: key },
    prompt: { id: `pmpt_${key}`, version: "1", variables: { who: key } },
    user: key,
    prompt_cache_key: key,
    safety_identifier: key,
    truncation: key,
    prompt_cache_retention: key,
    billing: { payer: key },
    temperature: 1,
    parallel_tool_calls: true,
    store: true,
  };
}

function responses(key: string, body: Record<string, unknown>): RawStep {
  const stream = body.stream === true;
  const ending = typeof body.input === "string" ? body.input : "completed";
  const item = {
    id: "msg_1",
    type: "message",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: "hi", annotations: [] }],
  };
  const usage = { input_tokens: 1, output_tokens: 1, total_tokens: 2 };
  const response = (status: string, output: unknown[]) => ({
    id: "resp_1",
    object: "response",
    created_at: 1,
    status,
    model: "m",
    output,
    ...settings(key, stream),
    ...(status === "incomplete" ? { incomplete_details: { reason: "max_output_tokens" } } : {}),
    ...(status === "failed" ? { error: { code: "server_error", message: "failed" } } : {}),
    usage,
  });
  if (!stream) return jsonStep(response("completed", [item]));
  const at = { item_id: item.id, output_index: 0, content_index: 0 };
  return sseStep(typedEvents([
    { type: "response.created", sequence_number: 0, response: response("queued", []) },
    { type: "response.queued", sequence_number: 1, response: response("queued", []) },
    { type: "response.in_progress", sequence_number: 2, response: response("in_progress", []) },
    {
      type: "response.output_item.added",
      sequence_number: 3,
      output_index: 0,
      item: { ...item, content: [] },
    },
    { type: "response.output_text.delta", sequence_number: 4, ...at, delta: "hi" },
    { type: "response.output_text.done", sequence_number: 5, ...at, text: "hi" },
    { type: "response.output_item.done", sequence_number: 6, output_index: 0, item },
    { type: `response.${ending}`, sequence_number: 7, response: response(ending, [item]) },
  ]));
}

function messages(key: string, stream: boolean): RawStep {
  const applied = {
    applied_edits: [{ type: key, cleared_tool_uses: 1, cleared_input_tokens: 1, note: key }],
  };
  const message = {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-x",
    content: [{ type: "text", text: "hi" }],
    stop_reason: "end_turn",
    stop_sequence: null,
    context_management: applied,
    usage: { input_tokens: 1, output_tokens: 1 },
  };
  if (!stream) return jsonStep(message);
  return sseStep(typedEvents([
    { type: "message_start", message: { ...message, content: [], stop_reason: null } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } },
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 1 },
      context_management: applied,
    },
    { type: "message_stop" },
  ]));
}

/** A translated target's chat answer: it has no settings to echo, so the client's come back as the client sent them. */
function chat(stream: boolean): RawStep {
  const base = { id: "chatcmpl-1", created: 1, model: "m" };
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  if (!stream) {
    return jsonStep({
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
  return sseStep(dataEvents([
    chunk({ role: "assistant", content: "hi" }, null),
    chunk({}, "stop"),
    { ...chunk({}, null), choices: [], usage },
  ], true));
}

function answer(req: RawRequest): RawStep {
  const key = (req.headers.get("authorization") ?? "").replace("Bearer ", "") ||
    req.headers.get("x-api-key") ||
    "";
  const body = req.body === "" ? {} : JSON.parse(req.body);
  if (req.path.endsWith("/messages")) return messages(key, body.stream === true);
  if (req.path.endsWith("/responses")) return responses(key, body);
  return chat(body.stream === true);
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
      if (["response.completed", "response.incomplete", "response.failed", "error"].includes(type)) resolve();
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

Deno.test("answer settings echo: an upstream quoting its key in a Response's instructions, metadata, tools, text, reasoning or prompt, or a Messages answer's context management, never hands it to a client", async () => {
  const up = startRawUpstream();
  up.stepFor = answer;
  const gw = await startEchoGateway(up.url, KEY, TOKEN);
  const headers = {
    authorization: `Bearer ${TOKEN}`,
    "x-api-key": TOKEN,
    "content-type": "application/json",
  };
  // What the client itself asked for: a translated answer repeats these, and they hold no key.
  const asked = {
    instructions: "Be brief.",
    metadata: { app: "test" },
    tools: [{ type: "function", name: "f", parameters: { type: "object", properties: {} } }],
  };
  const responsesBody = (model: string, stream: boolean, input: string) => ({
    model,
    stream,
    input,
    ...asked,
  });
  const messagesBody = (model: string, stream: boolean) => ({
    model,
    stream,
    max_tokens: 16,
    messages: [{ role: "user", content: "hi" }],
  });
  const calls: [string, string, (stream: boolean) => unknown][] = [
    ["responses native", "/v1/responses", (s) => responsesBody("native", s, "completed")],
    ["responses native incomplete", "/v1/responses", (s) => responsesBody("native", s, "incomplete")],
    ["responses native failed", "/v1/responses", (s) => responsesBody("native", s, "failed")],
    ["responses <- openai", "/v1/responses", (s) => responsesBody("oa", s, "completed")],
    ["messages native", "/v1/messages", (s) => messagesBody("claude", s)],
    ["messages <- openai", "/v1/messages", (s) => messagesBody("oa", s)],
  ];
  const leaks: string[] = [];
  const stored: string[] = [];
  let streamed = "";
  try {
    for (const [name, path, body] of calls) {
      for (const stream of [false, true]) {
        const res = await fetch(`${gw.url}${path}`, {
          method: "POST",
          headers,
          body: JSON.stringify(body(stream)),
        });
        const text = await res.text();
        assert.equal(res.status, 200, `${name} stream=${stream}: ${text}`);
        if (text.includes(PIECE)) leaks.push(`${name}${stream ? " stream" : ""}`);
        if (path === "/v1/responses" && !stream) stored.push(JSON.parse(text).id);
        if (name === "responses native" && stream) streamed = text;
      }
    }
    // The native stream went through as the upstream sent it, every event carrying a Response included.
    for (const type of ["created", "queued", "in_progress", "completed"]) {
      assert.ok(streamed.includes(`event: response.${type}\n`), `response.${type} reached the client`);
    }
    for (const id of stored) {
      const res = await fetch(`${gw.url}/v1/responses/${id}`, { headers });
      const text = await res.text();
      assert.equal(res.status, 200, text);
      if (text.includes(PIECE)) leaks.push(`stored ${id}`);
    }
    for (const model of ["native", "oa"]) {
      if ((await overWebSocket(gw.url, { model, input: "completed", ...asked })).includes(PIECE)) {
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
