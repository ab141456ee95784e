/**
 * A native Messages target that reports no usage has its answer counted by the gateway (`tokens_estimated`): a
 * `tool_use` block's input, and a `server_tool_use` block's (a web search's query: the model wrote it, the vendor
 * bills it as output), are counted as the same text in a `text` block is, in a JSON answer and in a stream
 * (`input_json_delta`).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-messages-tool-usage-0123456789";
const INPUT = { query: "latest stable release of the Deno runtime and its notable changes", max_results: 5 };
const TEXT = JSON.stringify(INPUT);

/** The block the upstream says {@linkcode TEXT} in. */
type Kind = "text" | "tool_use" | "server_tool_use";

/** An Anthropic upstream answering one block of `kind` holding {@linkcode TEXT}, without any usage. */
function startUpstream(kind: Kind) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    const name = kind === "server_tool_use" ? "web_search" : "search";
    const block = (whole: boolean) =>
      kind === "text"
        ? { type: "text", text: whole ? TEXT : "" }
        : { type: kind, id: "toolu_1", name, input: whole ? INPUT : {} };
    const message = (content: unknown[]) => ({
      id: "msg_u",
      type: "message",
      role: "assistant",
      model: "m",
      content,
      stop_reason: null,
      stop_sequence: null,
    });
    const stop = kind === "tool_use" ? "tool_use" : "end_turn";
    if (body.stream !== true) return Response.json({ ...message([block(true)]), stop_reason: stop });
    const delta = (piece: string) =>
      kind === "text"
        ? { type: "text_delta", text: piece }
        : { type: "input_json_delta", partial_json: piece };
    const events = [
      { type: "message_start", message: message([]) },
      { type: "content_block_start", index: 0, content_block: block(false) },
      { type: "content_block_delta", index: 0, delta: delta(TEXT.slice(0, 25)) },
      { type: "content_block_delta", index: 0, delta: delta(TEXT.slice(25)) },
      { type: "content_block_stop", index: 0 },
      { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null } },
      { type: "message_stop" },
    ];
    const sse = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
    return new Response(sse.join(""), { headers: { "content-type": "text/event-stream" } });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}`, stop: () => server.shutdown() };
}

function gateway(baseURL: string): InProcessGateway {
  return inProcessGateway(`
providers:
  up: { type: anthropic, base_url: "${baseURL}", api_key: sk-ant-scripted-0123456789 }
models:
  claude: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
}

/** The usage record of one request answered as `kind`, JSON or streamed (its record is written as it ends). */
async function recordOf(kind: Kind, stream: boolean): Promise<UsageRecord> {
  const up = startUpstream(kind);
  try {
    const gw = gateway(up.baseURL);
    const res = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: {
        "x-api-key": TOKEN,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({
        model: "claude",
        max_tokens: 100,
        stream,
        tools: [
          { name: "search", input_schema: { type: "object" } },
          { type: "web_search_20250305", name: "web_search" },
        ],
        messages: [{ role: "user", content: "search" }],
      }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert(text.includes("Deno runtime"), text);
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
  for (const kind of ["tool_use", "server_tool_use"] as const) {
    Deno.test(
      `messages native usage: without the upstream's usage, a ${kind} block's input is counted as text is (${
        stream ? "stream" : "JSON"
      })`,
      async () => {
        const call = await recordOf(kind, stream);
        const text = await recordOf("text", stream);
        assert.equal(call.tokens_estimated, true);
        assert.equal(text.tokens_estimated, true);
        assert(text.completion_tokens > 10, JSON.stringify(text));
        assert.equal(call.completion_tokens, text.completion_tokens, JSON.stringify(call));
      },
    );
  }
}
