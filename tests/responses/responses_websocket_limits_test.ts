/**
 * The Responses WebSocket's connection limits and its ends, over raw sockets (tests/helpers/raw_websocket.ts)
 * against a gateway in process, or the binary with GATEWAY_BIN: a client that stops reading has its answer
 * ended after `server.connections.send_timeout`, as over HTTP, so its upstream call, concurrency slot and usage
 * record do not wait for it to close the socket; a connection the gateway closes itself (too many waiting
 * messages, a message too big) ends its answer in progress at once, not once the client has answered the close
 * frame; a handshake with no valid key or another version than 13 is refused in the gateway's JSON (400, 426),
 * and the access log says what the client got (the refusal, or 101); a connection lasts at most
 * `server.connections.websocket_max_duration`, however often its client sends, and is then ended as OpenAI ends
 * one (its `websocket_connection_limit_reached` error event, then the close frame) after the answer in progress
 * (which is let finish, for at most `websocket_max_duration_grace`).
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { armGates, FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startFloodUpstream } from "../helpers/flood_upstream.ts";
import { startGateway, untilAdmitted, waitForLog, waitForLogCount } from "../helpers/gateway.ts";
import { BACKSTOP_MS, BackstopError } from "../helpers/backstop.ts";
import { rawExchange } from "../helpers/raw_http.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { CLOSE, closeCode, type Frame, HANDSHAKE_KEY, RawWebSocket, TEXT } from "../helpers/raw_websocket.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

/** A token allowed one request at a time: a request held open shows as the next one's 429. */
const ONE_AT_A_TIME = "gw-ws-one-at-a-time-0123456789abcdef";
const TOKEN = "gw-ws-limits-token-0123456789abcdef";

interface UsageRow {
  request_id: string;
  status: number;
  error_code: string | null;
}

Deno.test("websocket limits: a client that stops reading has its answer ended after send_timeout, at once recorded, its slot free, the socket closed with 1008", async () => {
  const upstream = startFloodUpstream();
  const gw = await startGateway(`
server: { connections: { send_timeout: 500ms } }
providers:
  flood: { type: openai, base_url: "${upstream.url}/v1", api_key: sk-test-flood }
  local: { type: builtin }
models:
  chat-flood: { type: chat, targets: [{ provider: flood, model: flood }] }
  chat-echo: { type: chat, targets: [{ provider: local, model: echo }] }
tokens:
  - { name: one-at-a-time, sha256: ${hashToken(ONE_AT_A_TIME)}, models: ["*"], limits: { concurrent: 1 } }
`);
  const auth = { authorization: `Bearer ${ONE_AT_A_TIME}` };
  const ws = await RawWebSocket.open(gw.url, "/v1/responses", { ...auth, "x-request-id": "ws-stalled" });
  try {
    await ws.sendText(JSON.stringify({ type: "response.create", model: "chat-flood", input: "flood" }));
    // The client reads nothing. Its answer holds the token's one concurrent slot until the gateway gives it up.
    const status = await untilAdmitted(gw, ONE_AT_A_TIME);
    assert.equal(status, 200, "the stalled answer's slot was given back");
    await upstream.cancelled.promise;
    // Recorded while the client still reads nothing, as a stream whose client took none of it over HTTP.
    const rows = await pollUsageRows<UsageRow>(gw, (r) => r.length >= 1, {
      sql: "SELECT request_id, status, error_code FROM usage WHERE request_id LIKE 'ws-stalled%'",
    });
    assert.deepEqual(rows.map((r) => ({ ...r })), [{
      request_id: "ws-stalled.1",
      status: 200,
      error_code: "client_closed_request",
    }]);
    // What the client finds once it reads: what was buffered, then the close frame.
    const close = await ws.closeFrame(10_000);
    assert.ok(close !== null, "the gateway closed the connection with a close frame");
    assert.equal(closeCode(close), 1008);
  } finally {
    ws.close();
    await gw.stop();
    await upstream.stop();
  }
});

/** A chat chunk of `content` as an SSE frame; the last one (`finish`) carries the usage. */
function chatFrame(content: string | null, finish: string | null = null): string {
  const chunk: Record<string, unknown> = {
    id: "c1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }],
  };
  if (finish !== null) chunk.usage = { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

Deno.test("websocket limits: an answer whose final events are larger in bytes than the request and output limits is relayed whole, as over SSE", async () => {
  // 50,000 characters, under upstream_limits.max_body_size (64 KiB of output), but its `response.completed`
  // carries them as 150 KB of JSON (CJK is 3 bytes a character in UTF-8, a quote 2 and a control character 6):
  // more than the 80 KiB the relay allowed an event, so the WebSocket was closed 1011 after the deltas.
  const piece = '中文回答，"引用"\u0001'.repeat(125);
  const raw = startRawUpstream();
  raw.next = {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [
      ...Array.from({ length: 50 }, () => chatFrame(piece)),
      chatFrame(null, "stop"),
      "data: [DONE]\n\n",
    ],
  };
  const gw = await startGateway(`
server: { max_body_size: 16KiB, upstream_limits: { max_body_size: 64KiB } }
providers:
  chat: { type: openai, base_url: "${raw.url}/v1", api_key: sk-raw }
models:
  chat-big: { type: chat, targets: [{ provider: chat, model: m }] }
tokens:
  - { name: ws, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  const ws = await RawWebSocket.open(gw.url, "/v1/responses", {
    authorization: `Bearer ${TOKEN}`,
    "x-request-id": "ws-big",
  });
  try {
    const sse = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-big", input: "hi", stream: true }),
    });
    const overSse = (await sse.text()).split("\n").filter((l) => l.startsWith("data: ")).map((l) =>
      JSON.parse(l.slice(6))
    );
    assert.equal(overSse.at(-1).type, "response.completed", "answered whole over SSE");
    const text = overSse.at(-1).response.output[0].content[0].text;
    assert.equal(text, piece.repeat(50));
    assert.ok(new TextEncoder().encode(JSON.stringify(text)).byteLength > 80 * 1024);

    await ws.sendText(JSON.stringify({ type: "response.create", model: "chat-big", input: "hi" }));
    const events: Record<string, unknown>[] = [];
    while (events.at(-1)?.type !== "response.completed") {
      const frame = await ws.next();
      assert.ok(frame !== null && frame.opcode === TEXT, `the answer was cut after ${events.at(-1)?.type}`);
      events.push(JSON.parse(new TextDecoder().decode(frame.payload)));
    }
    assert.deepEqual(events.map((e) => e.type), overSse.map((e) => e.type));
    const completed = events.at(-1)!.response as { output: { content: { text: string }[] }[] };
    assert.equal(completed.output[0].content[0].text, text);
    const rows = await pollUsageRows<UsageRow>(gw, (r) => r.length >= 1, {
      sql: "SELECT request_id, status, error_code FROM usage WHERE request_id LIKE 'ws-big.%'",
      settleMs: 200,
    });
    assert.deepEqual(rows.map((r) => ({ ...r })), [{
      request_id: "ws-big.1",
      status: 200,
      error_code: null,
    }]);
  } finally {
    ws.close();
    await gw.stop();
    await raw.stop();
  }
});

/**
 * Starts an answer that waits on its upstream (`gpt-hang`), has `closeIt` make the gateway close the connection
 * while it runs, and reads up to the gateway's close frame without answering it: the answer must be aborted
 * (its upstream call with it) while the closing handshake is unfinished. Returns the close code, and the usage
 * records of the connection's messages once there are `records` of them.
 */
async function gatewayCloses(
  closeIt: (ws: RawWebSocket) => Promise<void>,
  records: number,
  maxBodySize = "2KiB",
): Promise<{ code: number; rows: UsageRow[] }> {
  const chat = startFakeOpenAI();
  const gw = await startGateway(`
server: { max_body_size: ${maxBodySize} }
providers:
  chat: { type: openai, base_url: "${chat.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-hang: { type: chat, targets: [{ provider: chat, model: gpt-hang }] }
tokens:
  - { name: ws, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  const ws = await RawWebSocket.open(gw.url, "/v1/responses", {
    authorization: `Bearer ${TOKEN}`,
    "x-request-id": "ws-closed",
  });
  try {
    await ws.sendText(JSON.stringify({ type: "response.create", model: "chat-hang", input: "hi" }));
    // The upstream's first chunk has reached the client: the answer is in progress.
    while (true) {
      const frame = await ws.next();
      assert.ok(frame !== null, "closed before the first delta");
      if (new TextDecoder().decode(frame.payload).includes(".delta")) break;
    }
    await closeIt(ws);
    const close = await ws.closeFrame(10_000, false);
    assert.ok(close !== null, "the gateway sent a close frame");
    // The client holds the connection and never answers the close frame; `ws` (Deno) would wait 30 s for it.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise((_, reject) =>
      timer = setTimeout(() => reject(new Error("the answer went on after the gateway closed")), 10_000)
    );
    await Promise.race([chat.aborted.promise, late]).finally(() => clearTimeout(timer));
    const rows = await pollUsageRows<UsageRow>(gw, (r) => r.length >= records, {
      sql:
        "SELECT request_id, status, error_code FROM usage WHERE request_id LIKE 'ws-closed.%' ORDER BY request_id",
      settleMs: 200,
    });
    return { code: closeCode(close), rows: rows.map((r) => ({ ...r })) };
  } finally {
    ws.close();
    await gw.stop();
    await chat.stop();
  }
}

Deno.test("websocket limits: too many waiting messages close with 1008 and end the answer in progress at once; every message is recorded with why", async () => {
  const { code, rows } = await gatewayCloses(async (ws) => {
    // One answered, four waiting: the fifth waiting one is one too many.
    for (let i = 0; i < 5; i++) {
      await ws.sendText(JSON.stringify({ type: "response.create", model: "chat-hang", input: `more ${i}` }));
    }
  }, 6);
  assert.equal(code, 1008);
  // The answer in progress (its stream had begun), then the four waiting and the one too many, never answered.
  assert.deepEqual(rows, [
    { request_id: "ws-closed.1", status: 200, error_code: "websocket_queue_full" },
    ...[2, 3, 4, 5, 6].map((n) => ({
      request_id: `ws-closed.${n}`,
      status: 429,
      error_code: "websocket_queue_full",
    })),
  ]);
});

Deno.test("websocket limits: a message over max_body_size closes with 1009 and ends the answer in progress at once", async () => {
  const { code, rows } = await gatewayCloses(async (ws) => {
    await ws.sendText(
      JSON.stringify({ type: "response.create", model: "chat-hang", input: "x".repeat(4_000) }),
    );
  }, 1);
  assert.equal(code, 1009);
  assert.deepEqual(rows, [{
    request_id: "ws-closed.1",
    status: 200,
    error_code: "websocket_message_too_large",
  }]);
});

Deno.test("websocket limits: past 64 MiB a message closes with 1009 on either edge, whatever max_body_size allows", async () => {
  // Both edges buffer a message whole; Bun's cap is server-wide (64 MiB), and the Deno edge now holds the same.
  const { code, rows } = await gatewayCloses(
    async (ws) => {
      const big = JSON.stringify({
        type: "response.create",
        model: "chat-hang",
        input: "x".repeat(65 * 1024 * 1024),
      });
      await ws.sendText(big);
    },
    1,
    "100MiB",
  );
  assert.equal(code, 1009);
  assert.deepEqual(rows.map((r) => r.error_code), ["websocket_message_too_large"]);
});

Deno.test("websocket limits: a handshake without a valid key, or of another version than 13, gets the gateway's JSON; the log says what was sent", async () => {
  const chat = startFakeOpenAI();
  const gw = await startGateway(`
providers:
  chat: { type: openai, base_url: "${chat.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-ok: { type: chat, targets: [{ provider: chat, model: gpt-ok }] }
tokens:
  - { name: ws, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  try {
    const port = Number(new URL(gw.url).port);
    const cases: [string, string, number, string][] = [
      ["hs-no-key", "sec-websocket-version: 13\r\n", 400, "invalid_websocket_handshake"],
      [
        "hs-bad-key",
        "sec-websocket-key: abc\r\nsec-websocket-version: 13\r\n",
        400,
        "invalid_websocket_handshake",
      ],
      [
        "hs-version-8",
        `sec-websocket-key: ${HANDSHAKE_KEY}\r\nsec-websocket-version: 8\r\n`,
        426,
        "unsupported_websocket_version",
      ],
      ["hs-no-version", `sec-websocket-key: ${HANDSHAKE_KEY}\r\n`, 426, "unsupported_websocket_version"],
    ];
    for (const [id, headers, status, code] of cases) {
      const head =
        `GET /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\nupgrade: websocket\r\nconnection: Upgrade\r\n` +
        `authorization: Bearer ${TOKEN}\r\nx-request-id: ${id}\r\n${headers}\r\n`;
      const text = await rawExchange(port, head, new Uint8Array(0), 5_000);
      const [top, body] = [text.slice(0, text.indexOf("\r\n\r\n")), text.slice(text.indexOf("\r\n\r\n") + 4)];
      assert.match(top, new RegExp(`^HTTP/1.1 ${status} `), id);
      assert.match(top, /\r\ncontent-type: application\/json/i, id);
      if (status === 426) assert.match(top, /\r\nsec-websocket-version: 13\r\n/i, id);
      assert.equal(JSON.parse(body).error.code, code, id);
      const line = await waitForLog(gw, (l) => l.msg === "request" && l.request_id === id);
      assert.equal(line.status, status, id);
    }
    const ws = await RawWebSocket.open(gw.url, "/v1/responses", {
      authorization: `Bearer ${TOKEN}`,
      "x-request-id": "hs-accepted",
    });
    ws.close();
    const accepted = await waitForLog(gw, (l) => l.msg === "request" && l.request_id === "hs-accepted");
    assert.equal(accepted.status, 101);
  } finally {
    await gw.stop();
    await chat.stop();
  }
});

/** OpenAI's error event for a connection that lasted its time (its WebSocket mode guide), for a limit of `spoken`. */
function limitEvent(spoken: string) {
  return {
    type: "error",
    status: 400,
    error: {
      type: "invalid_request_error",
      code: "websocket_connection_limit_reached",
      message:
        `Responses websocket connection limit reached (${spoken}). Create a new websocket connection to continue.`,
      param: null,
    },
  };
}

/** A text frame's event. */
function eventOf(frame: Frame): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(frame.payload));
}

/**
 * Reads frames up to the server's close frame (answered); the events before it, and its code. Waits as long as
 * that takes; past the backstop it closes the socket, so a connection the gateway never closes fails here.
 */
async function untilClosed(ws: RawWebSocket): Promise<{ events: Record<string, unknown>[]; code: number }> {
  const timer = setTimeout(() => ws.close(), BACKSTOP_MS);
  try {
    const events: Record<string, unknown>[] = [];
    while (true) {
      const frame = await ws.next();
      assert.ok(
        frame !== null,
        `no close frame from the gateway (or not within the ${BACKSTOP_MS} ms backstop)`,
      );
      if (frame.opcode === CLOSE) {
        await ws.sendClose(closeCode(frame));
        return { events, code: closeCode(frame) };
      }
      if (frame.opcode === TEXT) events.push(eventOf(frame));
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Reads events until one whose `type` is `type`; the events read. */
async function untilEvent(ws: RawWebSocket, type: string): Promise<Record<string, unknown>[]> {
  const events: Record<string, unknown>[] = [];
  while (true) {
    const frame = await ws.next();
    assert.ok(frame !== null && frame.opcode === TEXT, `the connection ended before ${type}`);
    events.push(eventOf(frame));
    if (events.at(-1)!.type === type) return events;
  }
}

Deno.test("websocket limits: a client that keeps its connection busy is still closed at websocket_max_duration, with OpenAI's error event; one record per response", async () => {
  // keep_alive_timeout is ten minutes: nothing but websocket_max_duration can end this connection before the
  // backstop, so a duration limit that each message put off (an idle timeout) fails there instead of passing.
  const gw = await startGateway(`
server: { connections: { keep_alive_timeout: 10m, websocket_max_duration: 1s } }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [{ provider: local, model: echo }] }
tokens:
  - { name: ws, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  const ws = await RawWebSocket.open(gw.url, "/v1/responses", {
    authorization: `Bearer ${TOKEN}`,
    "x-request-id": "ws-lasting",
  });
  const opened = performance.now();
  try {
    // A turn, then a short pause (pacing, not a bound), for as long as the connection is open.
    let sent = 0;
    let completed = 0;
    let last: { events: Record<string, unknown>[]; code: number } | undefined;
    while (last === undefined) {
      if (performance.now() - opened > BACKSTOP_MS) {
        throw new BackstopError("the connection closed at websocket_max_duration", BACKSTOP_MS);
      }
      await ws.sendText(
        JSON.stringify({ type: "response.create", model: "chat-echo", input: `turn ${sent}` }),
      );
      sent++;
      while (true) {
        const frame = await ws.next();
        assert.ok(frame !== null, "the connection ended without a close frame");
        if (frame.opcode === CLOSE) {
          await ws.sendClose(closeCode(frame));
          last = { events: [], code: closeCode(frame) };
          break;
        }
        const event = eventOf(frame);
        if (event.type === "error") {
          // The connection's end: the close frame follows at once.
          const rest = await untilClosed(ws);
          last = { events: [event, ...rest.events], code: rest.code };
          break;
        }
        if (event.type === "response.completed") {
          completed++;
          break;
        }
      }
      if (last === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    const lived = performance.now() - opened;
    assert.equal(last.code, 1000);
    assert.deepEqual(last.events, [limitEvent("1 second")]);
    assert.ok(lived >= 1_000, `closed after ${lived} ms, before the limit`);
    assert.ok(completed >= 1, "the client was answered while the connection lasted");
    const line = await waitForLog(
      gw,
      (l) => l.msg === "websocket_max_duration" && l.request_id === "ws-lasting",
    );
    assert.equal(line.max_duration_ms, 1_000);
    // Every answered turn has its one record, awaited as its access-log line, then read from the store.
    await waitForLogCount(
      gw,
      (l) => l.msg === "request" && l.status === 200 && /^ws-lasting\.\d+$/.test(String(l.request_id)),
      completed,
    );
    const rows = await pollUsageRows<UsageRow>(
      gw,
      (r) => r.filter((x) => x.status === 200).length >= completed,
      {
        sql:
          "SELECT request_id, status, error_code FROM usage WHERE request_id LIKE 'ws-lasting.%' ORDER BY request_id",
        settleMs: 300,
      },
    );
    const answered = Array.from({ length: completed }, (_, i) => `ws-lasting.${i + 1}`);
    assert.deepEqual(
      rows.filter((r) => r.status === 200).map((r) => `${r.request_id} ${r.error_code}`).sort(),
      answered.map((id) => `${id} null`).sort(),
    );
    // No other message left a record but the last one, if the limit came while it waited behind an answer in
    // progress (let finish): it is refused with the limit's error, as the next test shows.
    for (const row of rows.filter((r) => r.status !== 200)) {
      assert.deepEqual({ ...row }, {
        request_id: `ws-lasting.${sent}`,
        status: 400,
        error_code: "websocket_connection_limit_reached",
      });
    }
  } finally {
    ws.close();
    await gw.stop();
  }
});

Deno.test("websocket limits: an answer in progress at websocket_max_duration is let finish, then the error event and the close; a message sent meanwhile is refused with a record", async () => {
  const chat = startFakeOpenAI();
  armGates(chat, 2);
  const gw = await startGateway(`
server: { connections: { websocket_max_duration: 500ms } }
providers:
  chat: { type: openai, base_url: "${chat.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-gated: { type: chat, targets: [{ provider: chat, model: gpt-gated }] }
tokens:
  - { name: ws, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  const ws = await RawWebSocket.open(gw.url, "/v1/responses", {
    authorization: `Bearer ${TOKEN}`,
    "x-request-id": "ws-finishing",
  });
  try {
    await ws.sendText(JSON.stringify({ type: "response.create", model: "chat-gated", input: "first" }));
    chat.gates[0].resolve();
    await untilEvent(ws, "response.output_text.delta");
    // The limit passes while the upstream holds the rest of the answer.
    const line = await waitForLog(
      gw,
      (l) => l.msg === "websocket_max_duration" && l.request_id === "ws-finishing",
      10_000,
    );
    assert.equal(line.answering, true);
    await ws.sendText(JSON.stringify({ type: "response.create", model: "chat-gated", input: "too late" }));
    chat.gates[1].resolve();
    const { events, code } = await untilClosed(ws);
    assert.equal(code, 1000);
    // The answer whole, then the connection's end; the late message never answered.
    const completed = events.findIndex((e) => e.type === "response.completed");
    assert.ok(completed >= 0, "the answer in progress was cut");
    assert.deepEqual(events.slice(completed + 1), [limitEvent("500 milliseconds")]);
    const response = events[completed].response as {
      status: string;
      output: { content: { text: string }[] }[];
    };
    assert.equal(response.status, "completed");
    assert.equal(response.output[0].content[0].text, "c0 c1 ");
    assert.equal(events.filter((e) => e.type === "response.created").length, 0, "no second answer began");
    // The refused message's record is written as its refusal settles, which a loaded machine (the Bun binary's
    // run in CI) can put seconds after the close: awaited as its access-log line, then read from the store.
    await waitForLog(gw, (l) => l.msg === "request" && l.request_id === "ws-finishing.2");
    const rows = await pollUsageRows<UsageRow>(gw, (r) => r.length >= 2, {
      sql:
        "SELECT request_id, status, error_code FROM usage WHERE request_id LIKE 'ws-finishing.%' ORDER BY request_id",
      settleMs: 200,
    });
    assert.deepEqual(rows.map((r) => ({ ...r })), [
      { request_id: "ws-finishing.1", status: 200, error_code: null },
      { request_id: "ws-finishing.2", status: 400, error_code: "websocket_connection_limit_reached" },
    ]);
  } finally {
    ws.close();
    await gw.stop();
    await chat.stop();
  }
});

Deno.test("websocket limits: an answer still going after websocket_max_duration_grace is ended, never cleanly: the error event follows it, its upstream call is aborted, its record says why", async () => {
  const chat = startFakeOpenAI();
  const gw = await startGateway(`
server: { connections: { websocket_max_duration: 300ms, websocket_max_duration_grace: 300ms } }
providers:
  chat: { type: openai, base_url: "${chat.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-hang: { type: chat, targets: [{ provider: chat, model: gpt-hang }] }
tokens:
  - { name: ws, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
  const ws = await RawWebSocket.open(gw.url, "/v1/responses", {
    authorization: `Bearer ${TOKEN}`,
    "x-request-id": "ws-overdue",
  });
  const opened = performance.now();
  try {
    await ws.sendText(JSON.stringify({ type: "response.create", model: "chat-hang", input: "hi" }));
    await untilEvent(ws, "response.output_text.delta");
    const { events, code } = await untilClosed(ws);
    const lived = performance.now() - opened;
    assert.equal(code, 1000);
    assert.ok(lived >= 600, `closed after ${lived} ms, before the limit and its grace`);
    assert.deepEqual(events.at(-1), limitEvent("300 milliseconds"));
    assert.ok(!events.some((e) => e.type === "response.completed"), "the cut answer ended as if complete");
    await chat.aborted.promise;
    const line = await waitForLog(
      gw,
      (l) => l.msg === "websocket_max_duration" && l.request_id === "ws-overdue",
    );
    assert.equal(line.answering, true);
    const rows = await pollUsageRows<UsageRow>(gw, (r) => r.length >= 1, {
      sql: "SELECT request_id, status, error_code FROM usage WHERE request_id LIKE 'ws-overdue.%'",
      settleMs: 200,
    });
    assert.deepEqual(rows.map((r) => ({ ...r })), [{
      request_id: "ws-overdue.1",
      status: 200,
      error_code: "websocket_connection_limit_reached",
    }]);
  } finally {
    ws.close();
    await gw.stop();
    await chat.stop();
  }
});
