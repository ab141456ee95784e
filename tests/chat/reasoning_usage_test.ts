/**
 * An upstream that reports no usage has its answer counted by the gateway (`tokens_estimated`): what the model
 * said as reasoning (`reasoning_content`, DeepSeek's and vLLM's) or as a refusal (`refusal`) is output it
 * wrote, counted as its content is, in a JSON answer and in a stream. Left out, a reasoning model's answer
 * would be recorded (and settled against token limits and budgets) as a few tokens.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-reasoning-usage-0123456789";
const TEXT =
  "The user wants a haiku about autumn. Five syllables, then seven, then five: leaves, wind, a cold moon.";

/** The message field the upstream says {@linkcode TEXT} in. */
type Field = "content" | "reasoning_content" | "refusal";

/** An upstream saying {@linkcode TEXT} in `field` (the rest of its message empty), without any usage. */
function startUpstream(field: Field) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    const base = { id: "chatcmpl-u", created: 1, model: "m" };
    if (body.stream !== true) {
      const message = { role: "assistant", content: null, [field]: TEXT };
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: "stop" }],
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
      chunk({ role: "assistant", content: "" }),
      chunk({ [field]: TEXT.slice(0, 30) }),
      chunk({ [field]: TEXT.slice(30) }),
      chunk({}, "stop"),
      "data: [DONE]\n\n",
    ];
    return new Response(sse.join(""), { headers: { "content-type": "text/event-stream" } });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, stop: () => server.shutdown() };
}

function gateway(baseURL: string): InProcessGateway {
  return inProcessGateway(`
providers:
  up: { type: openai, base_url: "${baseURL}", api_key: sk-scripted-0123456789 }
models:
  chat: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
}

/** The usage record of one chat completion whose answer says {@linkcode TEXT} in `field`, JSON or streamed. */
async function recordOf(field: Field, stream: boolean): Promise<UsageRecord> {
  const up = startUpstream(field);
  try {
    const gw = gateway(up.baseURL);
    const res = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat", stream, messages: [{ role: "user", content: "a haiku" }] }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert(text.includes("cold moon"), text);
    for (let waited = 0; gw.records.length === 0 && waited < 5000; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(gw.records.length, 1);
    return gw.records[0];
  } finally {
    await up.stop();
  }
}

for (const stream of [false, true]) {
  for (const field of ["reasoning_content", "refusal"] as const) {
    Deno.test(
      `reasoning usage: without the upstream's usage, ${field} is counted as content is (${
        stream ? "stream" : "JSON"
      })`,
      async () => {
        const said = await recordOf(field, stream);
        const content = await recordOf("content", stream);
        assert.equal(said.tokens_estimated, true);
        assert.equal(content.tokens_estimated, true);
        assert(content.completion_tokens > 10, JSON.stringify(content));
        assert.equal(said.completion_tokens, content.completion_tokens, JSON.stringify(said));
      },
    );
  }
}
