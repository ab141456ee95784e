/**
 * An upstream that reports no usage has its answer counted by the gateway (`tokens_estimated`): a legacy
 * `function_call`'s arguments (OpenAI's answer to a request with `functions`: `message.function_call`, streamed
 * as `delta.function_call`) are output the model wrote, counted as content is, in a JSON answer and in a stream,
 * never left out as if the answer had said nothing.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-function-call-usage-0123456789";
const TEXT = '{"location":"Reykjavik, Iceland","unit":"celsius","days":5,"include":["wind","humidity"]}';

/** Where the upstream says {@linkcode TEXT}: as content, or as a legacy `function_call`'s arguments. */
type Kind = "content" | "function_call";

/** An upstream saying {@linkcode TEXT} as `kind`, without any usage. */
function startUpstream(kind: Kind) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    const base = { id: "chatcmpl-u", created: 1, model: "m" };
    const piece = (text: string) =>
      kind === "content" ? { content: text } : { function_call: { name: "get_weather", arguments: text } };
    const finish = kind === "content" ? "stop" : "function_call";
    if (body.stream !== true) {
      const message = { role: "assistant", content: null, ...piece(TEXT) };
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: finish }],
      });
    }
    const chunk = (delta: unknown, reason: string | null = null) =>
      `data: ${
        JSON.stringify({
          ...base,
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta, finish_reason: reason }],
        })
      }\n\n`;
    const sse = [
      chunk({ role: "assistant", content: kind === "content" ? "" : null }),
      chunk(piece(TEXT.slice(0, 30))),
      chunk(kind === "content" ? piece(TEXT.slice(30)) : { function_call: { arguments: TEXT.slice(30) } }),
      chunk({}, finish),
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

/** The usage record of one request answered as `kind`, JSON or streamed (its record is written as it ends). */
async function recordOf(kind: Kind, stream: boolean): Promise<UsageRecord> {
  const up = startUpstream(kind);
  try {
    const gw = gateway(up.baseURL);
    const res = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "chat",
        stream,
        functions: [{ name: "get_weather", parameters: { type: "object" } }],
        messages: [{ role: "user", content: "weather" }],
      }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert(text.includes("Reykjavik"), text);
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
  Deno.test(
    `function call usage: without the upstream's usage, a legacy function_call's arguments are counted as content is (${
      stream ? "stream" : "JSON"
    })`,
    async () => {
      const call = await recordOf("function_call", stream);
      const content = await recordOf("content", stream);
      assert.equal(call.tokens_estimated, true);
      assert.equal(content.tokens_estimated, true);
      assert(content.completion_tokens > 10, JSON.stringify(content));
      assert.equal(call.completion_tokens, content.completion_tokens, JSON.stringify(call));
    },
  );
}
