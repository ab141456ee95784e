/**
 * Output guardrails on a custom (freeform) tool's call in the answer (`{type: "custom", custom: {name, input}}`),
 * which reaches the client as a function call's arguments do: its input is checked like arguments in a JSON
 * answer and in a stream (deny, mask), and under `reverse` a masked request value goes back into it raw, not
 * JSON-escaped as into arguments, since the input is free text.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-guardrails-custom-call-0123456789";
const CARD = "4111 1111 1111 1111";
const LINES = Array.from({ length: 4 }, (_, i) => {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  return Array.from({ length: 64 }, (_, j) => alphabet[(i * 7 + j * 13) % 64]).join("");
});
const KEY = `-----BEGIN PRIVATE KEY-----\n${LINES.join("\n")}\n-----END PRIVATE KEY-----`;

/** An upstream answering every request with one custom tool call whose input is `input(body)`'s pieces. */
function startCustomCallUpstream(input: (body: JsonObject) => string[]) {
  const seen: JsonObject[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    seen.push(body);
    const pieces = input(body);
    const base = { id: "chatcmpl-cc", created: 1, model: "m" };
    if (body.stream !== true) {
      const call = { id: "call_1", type: "custom", custom: { name: "apply_patch", input: pieces.join("") } };
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{
          index: 0,
          message: { role: "assistant", content: null, tool_calls: [call] },
          finish_reason: "tool_calls",
        }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
    }
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${
        JSON.stringify({
          ...base,
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta, finish_reason: finish }],
        })
      }\n\n`;
    const sse = [
      chunk({ role: "assistant", content: null }),
      chunk({
        tool_calls: [{ index: 0, id: "call_1", type: "custom", custom: { name: "apply_patch", input: "" } }],
      }),
      ...pieces.map((piece) => chunk({ tool_calls: [{ index: 0, custom: { input: piece } }] })),
      chunk({}, "tool_calls"),
      "data: [DONE]\n\n",
    ];
    return new Response(sse.join(""), { headers: { "content-type": "text/event-stream" } });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, seen, stop: () => server.shutdown() };
}

function gateway(baseURL: string): InProcessGateway {
  return inProcessGateway(`
providers:
  up: { type: openai, base_url: "${baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  no-cards-out: { type: pii, entities: [CREDIT_CARD], phase: output, action: deny }
  mask-cards-out: { type: pii, entities: [CREDIT_CARD], phase: output, action: mask }
  hide-keys: { type: pii, entities: [PRIVATE_KEY], phase: input, action: mask, reverse: true }
models:
  deny: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [no-cards-out] }
  mask: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [mask-cards-out] }
  keys: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ], guardrails: [hide-keys] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
}

function post(gw: InProcessGateway, body: JsonObject): Promise<Response> {
  return gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ tools: [{ type: "custom", custom: { name: "apply_patch" } }], ...body }),
  });
}

/** A stream's custom call input joined, whether it ended with [DONE], and whether it had an error. */
function streamedInput(sse: string): { input: string; done: boolean; error: boolean } {
  let input = "";
  let error = false;
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const event = JSON.parse(line.slice(6));
    if (event.error) error = true;
    for (const choice of event.choices ?? []) {
      for (const call of choice.delta?.tool_calls ?? []) {
        assert.equal(call.function, undefined, `a custom call's piece came back as a function's: ${line}`);
        input += call.custom?.input ?? "";
      }
    }
  }
  return { input, done: sse.includes("data: [DONE]"), error };
}

const ASK = [{ role: "user", content: "patch it" }];

Deno.test("custom call guardrails: an answer's custom call input with a card is withheld, JSON and streamed", async () => {
  const up = startCustomCallUpstream(() => ["*** Begin Patch\n+card 4111 1111", " 1111 1111\n*** End Patch"]);
  const gw = gateway(up.baseURL);
  try {
    const whole = await post(gw, { model: "deny", messages: ASK });
    const text = await whole.text();
    assert.equal(whole.status, 400, text);
    assert(!text.includes("4111"), text);

    const streamed = await post(gw, { model: "deny", stream: true, messages: ASK });
    const sse = await streamed.text();
    assert(!sse.includes("4111"), sse);
    const { done, error } = streamedInput(sse);
    assert(error && !done, `the stream ends with an error event, not [DONE]: ${sse}`);
  } finally {
    await up.stop();
  }
});

Deno.test("custom call guardrails: a card in an answer's custom call input is masked in custom.input, JSON and streamed", async () => {
  const up = startCustomCallUpstream(() => ["+card 4111 1111", ` 1111 1111\n`]);
  const gw = gateway(up.baseURL);
  try {
    const whole = await post(gw, { model: "mask", messages: ASK });
    assert.equal(whole.status, 200);
    const call = (await whole.json()).choices[0].message.tool_calls[0];
    assert.equal(call.type, "custom");
    assert.equal(call.custom.input, "+card <CREDIT_CARD_1>\n");

    const streamed = await post(gw, { model: "mask", stream: true, messages: ASK });
    const sse = await streamed.text();
    assert(!sse.includes(CARD), sse);
    const { input, done } = streamedInput(sse);
    assert(done, sse);
    assert.equal(input, "+card <CREDIT_CARD_1>\n");
  } finally {
    await up.stop();
  }
});

Deno.test("custom call guardrails: a masked request value goes back into a custom call's input raw, not JSON-escaped", async () => {
  // The upstream writes the placeholder it read into the input, split inside it so the stream holds part of it.
  const up = startCustomCallUpstream((body) => {
    const messages = body.messages as { content: string }[];
    const placeholder = /<PRIVATE_KEY_\d+>/.exec(messages.at(-1)!.content)?.[0] ?? "<none>";
    const input = `+key ${placeholder}\n`;
    return [input.slice(0, 10), input.slice(10)];
  });
  const gw = gateway(up.baseURL);
  const messages = [{ role: "user", content: `Store this key:\n${KEY}` }];
  try {
    const whole = await post(gw, { model: "keys", messages });
    assert.equal(whole.status, 200);
    assert.equal((await whole.json()).choices[0].message.tool_calls[0].custom.input, `+key ${KEY}\n`);

    const streamed = await post(gw, { model: "keys", stream: true, messages });
    const { input, done } = streamedInput(await streamed.text());
    assert(done);
    assert.equal(input, `+key ${KEY}\n`);

    for (const seen of up.seen) assert(!JSON.stringify(seen).includes(LINES[0]), "the upstream got the key");
  } finally {
    await up.stop();
  }
});
