/**
 * Web searches an upstream ran are priced per search, apart from tokens: Anthropic's
 * `usage.server_tool_use.web_search_requests` on the native Messages path (a whole answer, and a stream whose
 * `message_delta` carries the final count) and the Responses API's `web_search_call` items on its native path,
 * at the target's `web_search_per_1k` or, without a price of its own, the catalog's (Claude: $10 per 1,000).
 * Before, every search was free in the usage record and in budgets: a Claude Code session searching the web
 * spent a cent a search that no report showed.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

interface UsageRow {
  request_id: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  cost_input: number;
  cost_output: number;
  cost_web_search: number;
}

const micro = (dollars: number) => Math.round(dollars * 1_000_000);

function gateway(up: RawUpstream): Promise<TestGateway> {
  return startGateway(`
providers:
  claude: { type: anthropic, base_url: "${up.url}", api_key: "sk-ant-key-abcdef0123456789" }
  oa: { type: openai, base_url: "${up.url}/v1", api_key: "sk-openai-key-abcdef0123456789", native_responses: true }
models:
  sonnet:
    type: chat
    targets:
      - { provider: claude, model: claude-x, retries: 0, price: { input: 3, output: 15, web_search_per_1k: 10 } }
  opus-catalog:
    type: chat
    targets: [{ provider: claude, model: claude-opus-4-5-20251101, retries: 0 }]
  gpt:
    type: chat
    targets:
      - { provider: oa, model: gpt-x, retries: 0, price: { input: 2, output: 8, web_search_per_1k: 25 } }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
}

const json = (body: unknown): RawStep => ({
  status: 200,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify(body)],
});

const sse = (events: readonly ({ type: string } & Record<string, unknown>)[]): RawStep => ({
  status: 200,
  headers: { "content-type": "text/event-stream" },
  chunks: events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`),
});

function message(usage: Record<string, unknown>) {
  return {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-x",
    content: [{ type: "text", text: "It rained." }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage,
  };
}

async function ask(gw: TestGateway, path: string, body: unknown, id: string): Promise<void> {
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
      "x-request-id": id,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, `${id}: ${text}`);
}

async function rowOf(gw: TestGateway, id: string): Promise<UsageRow> {
  const [row] = await pollUsageRows<UsageRow>(gw, (rows) => rows.length === 1, {
    sql: "SELECT * FROM usage WHERE request_id = ?",
    params: [id],
  });
  assert.ok(row, `a record for ${id}`);
  return row;
}

const MESSAGES_BODY = (model: string, stream = false) => ({
  model,
  max_tokens: 500,
  stream,
  tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 5 }],
  messages: [{ role: "user", content: "Did it rain in Paris yesterday?" }],
});

Deno.test("web search cost: Anthropic's searches on the native Messages path, whole and streamed, at the target's or the catalog's price", async () => {
  const up = startRawUpstream();
  const gw = await gateway(up);
  try {
    up.next = json(
      message({ input_tokens: 1_000, output_tokens: 200, server_tool_use: { web_search_requests: 2 } }),
    );
    await ask(gw, "/v1/messages", MESSAGES_BODY("sonnet"), "ws-json");
    const whole = await rowOf(gw, "ws-json");
    assert.equal(micro(whole.cost_web_search), micro(2 * 10 / 1_000));
    assert.equal(micro(whole.cost), micro(1_000 * 3 / 1e6 + 200 * 15 / 1e6 + 0.02), "in the request's cost");

    // The stream's message_delta carries the final (cumulative) count; message_start's said none yet.
    up.next = sse([
      {
        type: "message_start",
        message: { ...message({ input_tokens: 1_000, output_tokens: 1 }), content: [] },
      },
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "It rained." } },
      { type: "content_block_stop", index: 0 },
      {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { output_tokens: 200, server_tool_use: { web_search_requests: 3 } },
      },
      { type: "message_stop" },
    ]);
    await ask(gw, "/v1/messages", MESSAGES_BODY("sonnet", true), "ws-stream");
    const streamed = await rowOf(gw, "ws-stream");
    assert.equal(micro(streamed.cost_web_search), micro(0.03));
    assert.equal(micro(streamed.cost), micro(0.003 + 0.003 + 0.03));

    // No price of its own: the catalog's, $10 per 1,000 searches for every Claude model.
    up.next = json(
      message({ input_tokens: 10, output_tokens: 10, server_tool_use: { web_search_requests: 1 } }),
    );
    await ask(gw, "/v1/messages", MESSAGES_BODY("opus-catalog"), "ws-catalog");
    assert.equal(micro((await rowOf(gw, "ws-catalog")).cost_web_search), micro(0.01));

    // A request that searched nothing costs nothing for it.
    up.next = json(message({ input_tokens: 10, output_tokens: 10 }));
    await ask(gw, "/v1/messages", MESSAGES_BODY("sonnet"), "ws-none");
    assert.equal((await rowOf(gw, "ws-none")).cost_web_search, 0);
  } finally {
    await gw.stop();
    await up.stop();
  }
});

function response(status: string) {
  return {
    id: "resp_up_1",
    object: "response",
    created_at: 1,
    status,
    model: "gpt-x",
    output: [
      {
        id: "ws_1",
        type: "web_search_call",
        status: "completed",
        action: { type: "search", query: "rain paris" },
      },
      {
        id: "ws_2",
        type: "web_search_call",
        status: "completed",
        action: { type: "search", query: "météo" },
      },
      { id: "ws_3", type: "web_search_call", status: "failed", action: { type: "search", query: "x" } },
      {
        id: "msg_1",
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "It rained.", annotations: [] }],
      },
    ],
    usage: {
      input_tokens: 8_000,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 100,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 8_100,
    },
  };
}

Deno.test("web search cost: the Responses API's web_search_call items on its native path, whole and streamed, failed calls left out", async () => {
  const up = startRawUpstream();
  const gw = await gateway(up);
  const body = (stream: boolean) => ({
    model: "gpt",
    stream,
    input: "Did it rain?",
    tools: [{ type: "web_search" }],
  });
  try {
    up.next = json(response("completed"));
    await ask(gw, "/v1/responses", body(false), "rs-json");
    const whole = await rowOf(gw, "rs-json");
    assert.equal(micro(whole.cost_web_search), micro(2 * 25 / 1_000));
    assert.equal(micro(whole.cost), micro(8_000 * 2 / 1e6 + 100 * 8 / 1e6 + 0.05));

    const done = response("completed");
    up.next = sse([
      {
        type: "response.created",
        sequence_number: 0,
        response: { ...done, status: "in_progress", output: [] },
      },
      { type: "response.completed", sequence_number: 1, response: done },
    ]);
    await ask(gw, "/v1/responses", body(true), "rs-stream");
    assert.equal(micro((await rowOf(gw, "rs-stream")).cost_web_search), micro(0.05));
  } finally {
    await gw.stop();
    await up.stop();
  }
});
