/**
 * A native Responses target that reports no usage has its answer counted by the gateway (`tokens_estimated`): a
 * custom (freeform) tool's call (`custom_tool_call` and its `input`; streamed as
 * `response.custom_tool_call_input.delta`) is output the model wrote, counted as a message's text is, in a JSON
 * answer and in a stream, never left out as if the answer had said nothing.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-native-custom-usage-0123456789";
const TEXT = "*** Begin Patch\n*** Update File: src/main.ts\n-const a = 1;\n+const a = 2;\n*** End Patch";

/** Where the upstream says {@linkcode TEXT}: as a message's text, or as a custom tool call's input. */
type Kind = "message" | "custom_tool_call";

/** A Responses upstream answering {@linkcode TEXT} as `kind`, without any usage. */
function startUpstream(kind: Kind) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    const item = (text: string) =>
      kind === "message"
        ? { id: "msg_1", type: "message", role: "assistant", content: [{ type: "output_text", text }] }
        : { id: "ctc_1", type: "custom_tool_call", call_id: "call_1", name: "apply_patch", input: text };
    const response = (output: unknown[], status: string) => ({
      id: "resp_u",
      object: "response",
      created_at: 1,
      model: "m",
      status,
      output,
    });
    if (body.stream !== true) return Response.json(response([item(TEXT)], "completed"));
    const at = { item_id: kind === "message" ? "msg_1" : "ctc_1", output_index: 0 };
    const delta = (text: string) =>
      kind === "message"
        ? { type: "response.output_text.delta", ...at, content_index: 0, delta: text }
        : { type: "response.custom_tool_call_input.delta", ...at, delta: text };
    const events = [
      { type: "response.created", response: response([], "in_progress") },
      { type: "response.output_item.added", output_index: 0, item: item("") },
      delta(TEXT.slice(0, 20)),
      delta(TEXT.slice(20)),
      { type: "response.output_item.done", output_index: 0, item: item(TEXT) },
      { type: "response.completed", response: response([item(TEXT)], "completed") },
    ];
    const sse = events.map((e, i) =>
      `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number: i })}\n\n`
    );
    return new Response(sse.join(""), { headers: { "content-type": "text/event-stream" } });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, stop: () => server.shutdown() };
}

function gateway(baseURL: string): InProcessGateway {
  return inProcessGateway(`
providers:
  up: { type: openai, base_url: "${baseURL}", api_key: sk-scripted-0123456789, native_responses: true }
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
    const res = await gw.fetch("/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "chat",
        stream,
        store: false,
        tools: [{ type: "custom", name: "apply_patch" }],
        input: "patch",
      }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert(text.includes("End Patch"), text);
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
    `native custom call usage: without the upstream's usage, a custom tool call's input is counted as text is (${
      stream ? "stream" : "JSON"
    })`,
    async () => {
      const call = await recordOf("custom_tool_call", stream);
      const message = await recordOf("message", stream);
      assert.equal(call.tokens_estimated, true);
      assert.equal(message.tokens_estimated, true);
      assert(message.completion_tokens > 10, JSON.stringify(message));
      assert.equal(call.completion_tokens, message.completion_tokens, JSON.stringify(call));
    },
  );
}
