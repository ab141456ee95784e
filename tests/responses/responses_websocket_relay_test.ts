/**
 * How an answer on the Responses WebSocket ends when it does not end cleanly, over raw sockets
 * (tests/helpers/raw_websocket.ts) against a gateway in process, or the binary with GATEWAY_BIN: a client that
 * leaves after the answer's final events were queued but before they were sent has a record that says so
 * (`client_closed_request`), not a clean answer.
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { type Frame, RawWebSocket, TEXT } from "../helpers/raw_websocket.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

const TOKEN = "gw-ws-relay-token-0123456789abcdef";

type Json = Record<string, unknown>;

interface UsageRow {
  request_id: string;
  status: number;
  error_code: string | null;
}

/** A chat chunk of `content` as an SSE frame; the last one (`finish`) carries the usage. */
function chatFrame(content: string | null, finish: string | null = null): string {
  const chunk: Json = {
    id: "c1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }],
  };
  if (finish !== null) chunk.usage = { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

function eventOf(frame: Frame | null): Json {
  assert.ok(frame !== null, "the connection ended");
  assert.equal(frame.opcode, TEXT, `a text frame, not opcode ${frame.opcode}`);
  return JSON.parse(new TextDecoder().decode(frame.payload));
}

/** The streams the gateway has open now (`gateway_streams_in_flight`): 0 once a stream's body has ended. */
async function streamsInFlight(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("gateway_streams_in_flight"));
  return Number(line?.split(" ").at(-1) ?? NaN);
}

Deno.test("websocket relay: a client that leaves before the queued final events were sent is recorded as gone, once", async () => {
  // 4 MiB of text: its final events carry it four times (16 MiB), more than the socket's buffers take from a
  // client that reads none of them, so they are still unsent when it leaves.
  const piece = "x".repeat(64 * 1024);
  const pieces = 64;
  const raw = startRawUpstream();
  raw.next = {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [
      ...Array.from({ length: pieces }, () => chatFrame(piece)),
      chatFrame(null, "stop"),
      "data: [DONE]\n\n",
    ],
  };
  const gw = await startGateway(`
server: { public_metrics: true }
providers:
  chat: { type: openai, base_url: "${raw.url}/v1", api_key: sk-raw }
models:
  chat-big: { type: chat, targets: [{ provider: chat, model: m }] }
tokens:
  - { name: ws, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  const ws = await RawWebSocket.open(gw.url, "/v1/responses", {
    authorization: `Bearer ${TOKEN}`,
    "x-request-id": "ws-unsent",
  });
  try {
    await ws.sendText(JSON.stringify({ type: "response.create", model: "chat-big", input: "hi" }));
    // The client reads every delta, then nothing more.
    let text = 0;
    while (text < piece.length * pieces) {
      const event = eventOf(await ws.next());
      if (event.type === "response.output_text.delta") text += String(event.delta).length;
    }
    // The answer's body has ended: its final events are queued for the client, not sent.
    for (let i = 0; await streamsInFlight(gw) !== 0; i++) {
      assert.ok(i < 500, "the answer's body never ended");
      await new Promise((r) => setTimeout(r, 20));
    }
    ws.close();
    const rows = await pollUsageRows<UsageRow>(gw, (r) => r.length >= 1, {
      sql: "SELECT request_id, status, error_code FROM usage WHERE request_id LIKE 'ws-unsent.%'",
      settleMs: 200,
    });
    // As a stream over HTTP whose client left: the 200 had been sent, the record says why the answer stopped.
    assert.deepEqual(rows.map((r) => ({ ...r })), [{
      request_id: "ws-unsent.1",
      status: 200,
      error_code: "client_closed_request",
    }]);
  } finally {
    ws.close();
    await gw.stop();
    await raw.stop();
  }
});
