/**
 * How an answer on the Responses WebSocket ends when it does not end cleanly, over raw sockets
 * (tests/helpers/raw_websocket.ts) against a gateway in process, or the binary with GATEWAY_BIN: a client that
 * leaves after the answer's final events were queued but before they were sent has a record that says so
 * (`client_closed_request`), not a clean answer; an upstream that fails mid-stream, translated or native, gives
 * the client the WebSocket mode's error event (OpenAI's `ResponseWsError`: its `error` object nested, with the
 * stream's `sequence_number`) and `response.failed`, never a bare close, and the socket answers the next
 * `response.create`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { NATIVE_KEY, startFakeNativeResponses } from "../helpers/fake_openai_responses.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { type Frame, RawWebSocket, TEXT } from "../helpers/raw_websocket.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

const TOKEN = "gw-ws-relay-token-0123456789abcdef";
const schemas = await loadOpenApiSchemas();

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

/** The events of one answer, up to its terminal event; fails on a close frame or the connection's end. */
async function answer(ws: RawWebSocket): Promise<Json[]> {
  const events: Json[] = [];
  while (true) {
    const event = eventOf(await ws.next());
    events.push(event);
    if (["response.completed", "response.failed", "response.incomplete"].includes(String(event.type))) {
      return events;
    }
    if (event.type === "error" && events.length === 1) return events;
  }
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

Deno.test("websocket relay: an upstream failing mid-stream gets the WebSocket mode's error event and response.failed; the socket answers the next message", async () => {
  const raw = startRawUpstream();
  // One chunk of text, then the upstream's connection dies.
  raw.next = {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [chatFrame("Hello"), chatFrame(" world")],
    reset: "after-first-chunk",
  };
  const native = startFakeNativeResponses();
  const gw = await startGateway(`
providers:
  chat: { type: openai, base_url: "${raw.url}/v1", api_key: sk-raw }
  native: { type: openai, base_url: "${native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  local: { type: builtin }
models:
  chat-cut: { type: chat, targets: [{ provider: chat, model: m, retries: 0 }] }
  native-cut: { type: chat, targets: [{ provider: native, model: resp-cut }] }
  chat-echo: { type: chat, targets: [{ provider: local, model: echo }] }
tokens:
  - { name: ws, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  const ws = await RawWebSocket.open(gw.url, "/v1/responses", {
    authorization: `Bearer ${TOKEN}`,
    "x-request-id": "ws-failed",
  });
  try {
    for (const model of ["chat-cut", "native-cut"]) {
      await ws.sendText(JSON.stringify({ type: "response.create", model, input: "hi", stream_id: "lane-1" }));
      const events = await answer(ws);
      const types = events.map((e) => e.type);
      assert.ok(types.includes("response.output_text.delta"), `${model}: failed mid-stream: ${types}`);
      assert.deepEqual(types.slice(-2), ["error", "response.failed"], model);
      // Every event is one the WebSocket mode sends (OpenAI's `ResponsesServerEvent`), its error event included.
      for (const event of events) schemas?.assert("ResponsesServerEvent", event, `${model}: ${event.type}`);
      const error = events.at(-2)!;
      const nested = error.error as Json;
      assert.equal(nested?.type, "server_error", `${model}: ${JSON.stringify(error)}`);
      assert.equal(nested.code, "upstream_error");
      assert.match(String(nested.message), /closed the connection mid-response/);
      assert.equal(nested.param, null);
      assert.equal(error.sequence_number, events.length - 2, "numbered on from the events before it");
      assert.equal(error.stream_id, "lane-1");
      assert.equal(error.status, undefined, "a response's failure, not the connection's or a request's");
      // The socket stays open: the next message is answered whole.
      await ws.sendText(JSON.stringify({ type: "response.create", model: "chat-echo", input: "again" }));
      assert.equal((await answer(ws)).at(-1)!.type, "response.completed", `${model}: the next message`);
    }
  } finally {
    ws.close();
    await gw.stop();
    await raw.stop();
    await native.stop();
  }
});
