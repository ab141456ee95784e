/**
 * An upstream that reports no usage has its answer counted by the gateway (`tokens_estimated`): a custom
 * (freeform) tool's call input is output the model wrote, counted as a function call's arguments are, in a
 * JSON answer and in a stream, never left out as if the answer had said nothing.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-custom-call-usage-0123456789";
const INPUT = "*** Begin Patch\n*** Update File: src/main.ts\n-const a = 1;\n+const a = 2;\n*** End Patch";

type Kind = "custom" | "function";

/** An upstream answering one tool call of `kind` with {@linkcode INPUT} as its text, without any usage. */
function startUpstream(kind: Kind) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    const base = { id: "chatcmpl-u", created: 1, model: "m" };
    const piece = (text: string) =>
      kind === "custom" ? { custom: { name: "apply_patch", input: text } } : {
        function: { name: "apply_patch", arguments: text },
      };
    if (body.stream !== true) {
      const call = { id: "call_1", type: kind, ...piece(INPUT) };
      const message = { role: "assistant", content: null, tool_calls: [call] };
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: "tool_calls" }],
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
      chunk({
        role: "assistant",
        content: null,
        tool_calls: [{ index: 0, id: "call_1", type: kind, ...piece("") }],
      }),
      chunk({ tool_calls: [{ index: 0, ...piece(INPUT.slice(0, 20)) }] }),
      chunk({ tool_calls: [{ index: 0, ...piece(INPUT.slice(20)) }] }),
      chunk({}, "tool_calls"),
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

/** The usage record of one request of `kind`'s answer, JSON or streamed (its record is written as it ends). */
async function recordOf(kind: Kind, stream: boolean): Promise<UsageRecord> {
  const up = startUpstream(kind);
  try {
    const gw = gateway(up.baseURL);
    const tool = kind === "custom"
      ? { type: "custom", custom: { name: "apply_patch" } }
      : { type: "function", function: { name: "apply_patch", parameters: { type: "object" } } };
    const res = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "chat",
        stream,
        tools: [tool],
        messages: [{ role: "user", content: "patch" }],
      }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert(text.includes("apply_patch"), text);
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
    `custom call usage: without the upstream's usage, a custom call's input is counted as arguments are (${
      stream ? "stream" : "JSON"
    })`,
    async () => {
      const custom = await recordOf("custom", stream);
      const fn = await recordOf("function", stream);
      assert.equal(custom.tokens_estimated, true);
      assert.equal(fn.tokens_estimated, true);
      assert(fn.completion_tokens > 0, JSON.stringify(fn));
      assert.equal(custom.completion_tokens, fn.completion_tokens, JSON.stringify(custom));
    },
  );
}
