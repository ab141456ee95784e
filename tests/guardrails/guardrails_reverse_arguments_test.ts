/**
 * `reverse: true` gives a masked value back inside a tool call's arguments, which are JSON: the value must go
 * back escaped as inside a JSON string, or a value with a newline or a quote (a PEM key) breaks the JSON the
 * client parses. Checked in chat's JSON answer and stream, and in the Responses and Messages answers rendered
 * from them; the answer's plain text keeps the raw value.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { type ScriptedChat, startScriptedChat } from "../helpers/scripted_chat.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

const TOKEN = "gw-guardrails-reverse-args-0123456789";
const LINES = Array.from({ length: 4 }, (_, i) => {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  return Array.from({ length: 64 }, (_, j) => alphabet[(i * 7 + j * 13) % 64]).join("");
});
const KEY = `-----BEGIN PRIVATE KEY-----\n${LINES.join("\n")}\n-----END PRIVATE KEY-----`;

/** The placeholder the upstream saw for the key, in the last message it was sent. */
function placeholder(body: JsonObject): string {
  const messages = body.messages as { content: string }[];
  return /<PRIVATE_KEY_\d+>/.exec(messages.at(-1)!.content)?.[0] ?? "<none>";
}

function withGateway(fn: (gw: TestGateway, up: ScriptedChat) => Promise<void>) {
  return withFakeGateway(startScriptedChat, (up) => `
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  hide-keys: { type: pii, entities: [PRIVATE_KEY], phase: input, action: mask, reverse: true }
models:
  chat: { type: chat, targets: [ { provider: up, model: scripted, retries: 0 } ], guardrails: [hide-keys] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`, fn);
}

function post(gw: TestGateway, path: string, body: JsonObject): Promise<Response> {
  return fetch(`${gw.baseURL}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify(body),
  });
}

const TOOL = { type: "function", function: { name: "lookup", parameters: { type: "object" } } };
const ASK = {
  model: "chat",
  tools: [TOOL],
  messages: [{ role: "user", content: `Store this key:\n${KEY}` }],
};

Deno.test("reverse into tool-call arguments: the value goes back JSON-escaped, JSON answer and stream", async () => {
  await withGateway(async (gw, up) => {
    // Split inside the placeholder, so the stream's unmasking holds part of it across chunks.
    up.answer = (body) => {
      const args = `{"key":"${placeholder(body)}"}`;
      return { toolArguments: [args.slice(0, 12), args.slice(12)] };
    };
    const whole = await post(gw, "/chat/completions", ASK);
    assert.equal(whole.status, 200);
    const args = (await whole.json()).choices[0].message.tool_calls[0].function.arguments as string;
    assert.deepEqual(JSON.parse(args), { key: KEY }, args);

    const streamed = await post(gw, "/chat/completions", { ...ASK, stream: true });
    let joined = "";
    for (const line of (await streamed.text()).split("\n")) {
      if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
      for (const c of JSON.parse(line.slice(6)).choices ?? []) {
        for (const call of c.delta?.tool_calls ?? []) joined += call.function?.arguments ?? "";
      }
    }
    assert.deepEqual(JSON.parse(joined), { key: KEY }, joined);
    for (const seen of up.seen) assert(!JSON.stringify(seen).includes(LINES[0]), "the upstream got the key");
  });
});

Deno.test("reverse into tool-call arguments: Responses' arguments and Messages' tool_use input are the value", async () => {
  await withGateway(async (gw, up) => {
    up.answer = (body) => ({ toolArguments: [`{"key":"${placeholder(body)}"}`] });
    const responses = await post(gw, "/responses", {
      model: "chat",
      tools: [{ type: "function", name: "lookup", parameters: { type: "object" } }],
      input: `Store this key:\n${KEY}`,
    });
    const body = await responses.json();
    assert.equal(responses.status, 200, JSON.stringify(body));
    const call = body.output.find((item: JsonObject) => item.type === "function_call");
    assert.deepEqual(JSON.parse(call.arguments), { key: KEY }, call.arguments);

    const messages = await post(gw, "/messages", {
      model: "chat",
      max_tokens: 64,
      tools: [{ name: "lookup", input_schema: { type: "object" } }],
      messages: [{ role: "user", content: `Store this key:\n${KEY}` }],
    });
    const message = await messages.json();
    assert.equal(messages.status, 200, JSON.stringify(message));
    const use = message.content.find((block: JsonObject) => block.type === "tool_use");
    assert.deepEqual(use.input, { key: KEY }, JSON.stringify(use));
  });
});

Deno.test("reverse into plain text: the answer's content gets the raw value back", async () => {
  await withGateway(async (gw, up) => {
    up.answer = (body) => ({ content: [`Stored:\n${placeholder(body)}`] });
    const res = await post(gw, "/chat/completions", ASK);
    assert.equal((await res.json()).choices[0].message.content, `Stored:\n${KEY}`);
  });
});
