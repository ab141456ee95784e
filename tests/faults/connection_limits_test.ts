/**
 * Stalled and idle connections are closed (`server.connections`), so they cannot exhaust file descriptors on
 * an exposed port: a head trickled line by line, a body that stops half-way, an idle keep-alive connection;
 * connections past `max_connections` get a clear 503 while those inside keep working. A stream or a call that
 * is silent while its upstream thinks is NOT cut by any of these. Runs in-process on Deno and, with
 * `GATEWAY_BIN`, against the single binary (Bun counts requests in progress rather than connections, and its
 * idle timer has a granularity of one second: the deadlines below allow for it).
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import {
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  untilAdmitted,
  waitForLog,
} from "../helpers/gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import { connect, postJson, readResponse, readUntilClosed, send } from "../helpers/raw_http.ts";
import { type SlowUpstream, startSlowUpstream } from "../helpers/slow_upstream.ts";
import { startFloodUpstream } from "../helpers/flood_upstream.ts";
import { BACKSTOP_MS, eventually } from "../helpers/backstop.ts";
import { withTestGateway } from "../helpers/with_gateway.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every limit well under a second, so each case takes about one. */
const LIMITS =
  "{ header_timeout: 300ms, body_timeout: 300ms, keep_alive_timeout: 300ms, max_connections: 3 }";
/** The suite runs against the single binary (Bun) when GATEWAY_BIN is set. */
const ON_BUN = Boolean(Deno.env.get("GATEWAY_BIN"));
/**
 * How long a limit of 300 ms may take to act: Node checks deadlines on a timer; Bun's idle timer counts whole
 * seconds and fires on a 4-second tick; a loaded CI machine adds seconds more. Still under the smallest
 * default of the limits checked against it (header_timeout 10 s; body 60 s, keep-alive 65 s), so a configured
 * limit not applied, the default acting instead, still fails.
 */
const ACTS_WITHIN = 8_000;

function withGateway(fn: (gw: TestGateway, upstream: SlowUpstream) => Promise<void>) {
  return withTestGateway(async () => {
    const upstream = await startSlowUpstream();
    return {
      fakes: upstream,
      config: `
server: { connections: ${LIMITS}, timeouts: { first_byte: 20s, idle: 20s } }
providers:
  slow: { type: openai, base_url: "${upstream.baseURL}", api_key: sk-test-slow-upstream }
models:
  chat-think: { type: chat, targets: [{ provider: slow, model: slow-1500 }] }
  chat-pause: { type: chat, targets: [{ provider: slow, model: pause-1500 }] }
  chat-hold: { type: chat, targets: [{ provider: slow, model: hold-0 }] }
${TEST_TOKENS_YAML}`,
    };
  }, fn);
}

const AUTH = { authorization: `Bearer ${TEST_TOKEN}` };

/** A closed connection's bytes are nothing, or one whole 408 answer in OpenAI's error shape. */
function assertNothingOr408(text: string) {
  if (text === "") return;
  assert.match(text, /^HTTP\/1\.1 408 /);
  const body = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4));
  assert.equal(typeof body.error.message, "string");
}

Deno.test({
  name: "connection limits: a head trickled one line at a time is closed after header_timeout",
  // Bun applies its own fixed deadline to a first head (about 10 s, no answer), not header_timeout
  // (docs/operations.md, Runtime notes; tests/faults/head_deadline_test.ts).
  ignore: ON_BUN,
}, async () => {
  await withGateway(async (gw) => {
    const conn = await connect(gw.url);
    await send(conn, "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    const trickle = (async () => {
      for (let i = 0; i < 60; i++) {
        await sleep(100);
        if (!await send(conn, `x-trickle-${i}: y\r\n`)) return;
      }
    })();
    const received = await readUntilClosed(conn, ACTS_WITHIN + 1_000);
    await trickle;
    assert.ok(received.closed, "the connection is closed");
    assert.ok(received.after < ACTS_WITHIN, `closed after ${received.after} ms`);
    assertNothingOr408(received.text);
  });
});

Deno.test("connection limits: a body that stops half-way is closed (or answered 408) after body_timeout", async () => {
  await withGateway(async (gw) => {
    const conn = await connect(gw.url);
    const body = JSON.stringify({
      model: "chat-think",
      messages: [{ role: "user", content: "x".repeat(2_000) }],
    });
    await send(
      conn,
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TEST_TOKEN}\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 1_000)}`,
    );
    const received = await readUntilClosed(conn, ACTS_WITHIN + 1_000);
    assert.ok(received.closed, "the connection is closed");
    assert.ok(received.after < ACTS_WITHIN, `closed after ${received.after} ms`);
    assertNothingOr408(received.text);
  });
});

Deno.test("connection limits: a body cut short by the edge's own deadline is recorded as what the client got", async () => {
  const gw = await startGateway(`
server: { connections: { header_timeout: 300ms, body_timeout: 300ms } }
providers:
  local: { type: builtin }
models:
  chat: { type: chat, targets: [{ provider: local, model: echo }] }
  chat-a: { type: chat, targets: [{ provider: local, model: echo }] }
${TEST_TOKENS_YAML}`);
  try {
    // Deno: a longer body_timeout by reload: a request then reads its body to that, while node:http's own deadline
    // stays header_timeout + body_timeout as started (docs/configuration.md) and cuts the body first. Bun's edge
    // has no deadline of its own for a body (the handler's body_timeout is the one), so there the handler's 408
    // is what the client gets, and what the record must say.
    if (!ON_BUN) {
      const yaml = await Deno.readTextFile(gw.configFile);
      await Deno.writeTextFile(gw.configFile, yaml.replace("body_timeout: 300ms", "body_timeout: 30s"));
      await waitForLog(gw, (line) => line.msg === "config_reloaded");
    }
    const conn = await connect(gw.url);
    const body = JSON.stringify({ model: "chat", messages: [{ role: "user", content: "x".repeat(2_000) }] });
    await send(
      conn,
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TEST_TOKEN}\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 1_000)}`,
    );
    const received = await readUntilClosed(conn, 10_000);
    assert.ok(received.closed, "the connection is closed");
    assertNothingOr408(received.text);
    // A closed connection without an answer is a client gone as far as the record can tell (499).
    const got = received.text === "" ? 499 : 408;
    assert.equal(
      got,
      408,
      ON_BUN ? "the handler's body deadline is answered 408" : "node:http's deadline too",
    );
    const rows = await pollUsageRows<{ status: number; error_code: string | null }>(gw, (r) => r.length >= 1);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].status, got, "the record says what the client got");
    if (got === 408) assert.equal(rows[0].error_code, "request_timeout");
    const line = await waitForLog(gw, (l) => l.msg === "request");
    assert.equal(line.status, got);
  } finally {
    await gw.stop();
  }
});

Deno.test("connection limits: an idle keep-alive connection is closed after keep_alive_timeout", async () => {
  await withGateway(async (gw) => {
    const conn = await connect(gw.url);
    await send(conn, "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
    assert.equal((await readResponse(conn)).status, 200);
    const received = await readUntilClosed(conn, ACTS_WITHIN + 1_000);
    assert.ok(received.closed, "the idle connection is closed");
    assert.ok(received.after < ACTS_WITHIN, `closed after ${received.after} ms`);
    assert.equal(received.text, "");
  });
});

Deno.test("connection limits: a request that asks to close its connection is answered with Connection: close, then closed", async () => {
  // RFC 9112 §9.6: the server closes after that answer and says so. A pooling client (hyper, so Deno's fetch and
  // Rust's reqwest) that is not told may pool the connection and send its next request on it as it closes.
  await withGateway(async (gw) => {
    const asks = [
      "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
      postJson("/v1/chat/completions", { model: "chat-think", messages: [] }, { connection: "Close" }),
      postJson("/v1/chat/completions", { model: "chat-think", messages: [] }, {
        authorization: `Bearer ${TEST_TOKEN}`,
        connection: "keep-alive, close",
      }),
    ];
    for (const ask of asks) {
      const conn = await connect(gw.url);
      await send(conn, ask);
      const received = await readUntilClosed(conn, 5_000);
      assert.ok(received.closed, "the connection is closed after the answer");
      const head = received.text.slice(0, received.text.indexOf("\r\n\r\n")).split("\r\n");
      assert.match(head[0], /^HTTP\/1\.1 [24]\d\d /);
      assert.ok(head.some((line) => /^connection: *close$/i.test(line)), head.join("\n"));
    }
  });
});

Deno.test("connection limits: past max_connections a new one gets a clear 503; those inside keep working", async () => {
  await withGateway(async (gw, upstream) => {
    // Three connections, each with a call in progress (held by the upstream until the fourth is refused, so a
    // loaded machine cannot end them first): the cap is reached whether the runtime counts connections (Deno)
    // or requests in progress (Bun).
    const inside = await Promise.all([0, 1, 2].map(() => connect(gw.url)));
    const call = postJson("/v1/chat/completions", {
      model: "chat-hold",
      messages: [{ role: "user", content: "think" }],
    }, AUTH);
    for (const conn of inside) await send(conn, call);
    const answers = inside.map((conn) => readResponse(conn, BACKSTOP_MS));
    await eventually("the three calls reach the upstream", () => upstream.received() === 3);

    const outside = await connect(gw.url);
    await send(outside, call);
    const refused = await readResponse(outside);
    upstream.release();
    assert.equal(refused.status, 503);
    const error = JSON.parse(refused.body).error;
    assert.equal(error.type, "server_error");
    assert.equal(error.code, "too_many_connections");
    assert.equal(typeof error.message, "string");
    outside.close();

    for (const answer of await Promise.all(answers)) {
      assert.equal(answer.status, 200);
      assert.equal(JSON.parse(answer.body).choices[0].message.content, "thought about it");
    }
    for (const conn of inside) conn.close();
    assert.equal(upstream.received(), 3, "the refused call never reached the upstream");
  });
});

Deno.test("connection limits: calls and streams silent for longer than every limit are not cut", async () => {
  await withGateway(async (gw) => {
    // A non-stream call whose upstream thinks for 1.5 s.
    const plain = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { ...AUTH, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-think", messages: [{ role: "user", content: "think" }] }),
    });
    assert.equal(plain.status, 200);
    assert.equal((await plain.json()).choices[0].message.content, "thought about it");

    // A stream whose first chunk is 1.5 s late, and one silent for 1.5 s after its first chunk.
    for (const model of ["chat-think", "chat-pause"]) {
      const response = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { ...AUTH, "content-type": "application/json" },
        body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "think" }] }),
      });
      assert.equal(response.status, 200);
      const text = await response.text();
      assert.ok(text.includes("thinking") && text.includes(" and done"), text);
      assert.ok(text.trimEnd().endsWith("data: [DONE]"), `${model}: the stream ends cleanly: ${text}`);
    }
  });
});

Deno.test("connection limits: once a stream has ended, its idle keep-alive connection is closed after keep_alive_timeout", async () => {
  await withGateway(async (gw) => {
    const conn = await connect(gw.url);
    // A stream silent for 1.5 s after its first chunk: the idle timer is off while it runs, and back after it.
    const call = postJson("/v1/chat/completions", {
      model: "chat-pause",
      stream: true,
      messages: [{ role: "user", content: "think" }],
    }, AUTH);
    await send(conn, call);
    let text = "";
    const buf = new Uint8Array(16_384);
    const deadline = setTimeout(() => conn.close(), 10_000);
    try {
      // The chunked body's last chunk ends the answer; the connection stays open for the next request.
      while (!text.endsWith("\r\n0\r\n\r\n")) {
        const n = await conn.read(buf);
        if (n === null) throw new Error(`connection closed mid-stream: ${JSON.stringify(text)}`);
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
    } finally {
      clearTimeout(deadline);
    }
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.ok(text.includes(" and done") && text.includes("data: [DONE]"), text);
    const received = await readUntilClosed(conn, ACTS_WITHIN + 1_000);
    assert.ok(received.closed, "the idle connection is closed once the stream is over");
    assert.ok(received.after < ACTS_WITHIN, `closed after ${received.after} ms`);
    assert.equal(received.text, "");
  });
});

Deno.test("connection limits: a client that stops reading a stream is disconnected after send_timeout; its slot is free again", async () => {
  const upstream = startFloodUpstream();
  const limited = "gw-one-at-a-time-0123456789abcdef";
  const gw = await startGateway(`
server: { connections: { send_timeout: 500ms } }
providers:
  flood: { type: openai, base_url: "${upstream.url}/v1", api_key: sk-test-flood }
  local: { type: builtin }
models:
  chat-flood: { type: chat, targets: [{ provider: flood, model: flood }] }
  chat-echo: { type: chat, targets: [{ provider: local, model: echo }] }
tokens:
  - { name: one-at-a-time, sha256: ${hashToken(limited)}, models: ["*"], limits: { concurrent: 1 } }
`);
  const conn = await connect(gw.url);
  try {
    const call = postJson("/v1/chat/completions", {
      model: "chat-flood",
      stream: true,
      messages: [{ role: "user", content: "flood" }],
    }, { authorization: `Bearer ${limited}` });
    await send(conn, call);
    // The client reads nothing. Its stream holds the token's one concurrent slot until the gateway gives it up.
    const status = await untilAdmitted(gw, limited);
    assert.equal(status, 200, "the stalled stream's slot was given back");
    // And its connection was closed: what is left in our buffers, then the end.
    const buf = new Uint8Array(1 << 16);
    let closed = false;
    const timer = setTimeout(() => conn.close(), 10_000);
    try {
      while (await conn.read(buf) !== null);
      closed = true;
    } catch (err) {
      closed = !(err instanceof Deno.errors.BadResource || err instanceof Deno.errors.Interrupted);
    } finally {
      clearTimeout(timer);
    }
    assert.ok(closed, "the gateway closed the stalled connection");
  } finally {
    try {
      conn.close();
    } catch {
      // closed above
    }
    await gw.stop();
    await upstream.stop();
  }
});
