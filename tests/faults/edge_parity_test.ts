/**
 * What the two runtime edges answer alike where their HTTP servers differ: an answer given before the body was
 * read ends its connection and says so, a repeated `Content-Length` is refused, and a `header_timeout` the edge
 * cannot apply (Bun bounds a first head itself) is said at start. Runs in-process on Deno and, with
 * `GATEWAY_BIN`, against the single binary (Bun).
 *
 * @module
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { connect, readUntilClosed, send } from "../helpers/raw_http.ts";
import { withTestGateway } from "../helpers/with_gateway.ts";

/** The suite runs against the single binary (Bun) when GATEWAY_BIN is set. */
const ON_BUN = Boolean(Deno.env.get("GATEWAY_BIN"));

/**
 * A keep-alive timeout far past how long each case waits for the close: a connection still open when the
 * wait ends was kept for the next request, not closed after the answer.
 */
const CONFIG = `
server:
  max_body_size: 1KiB
  connections: { header_timeout: 2s, keep_alive_timeout: 60s }
models:
  chat-echo: { type: chat, targets: [{ provider: echo, model: echo-1 }] }
providers:
  echo: { type: openai, base_url: "http://127.0.0.1:9/v1", api_key: sk-test-unused }
${TEST_TOKENS_YAML}`;

function withGateway(fn: (gw: TestGateway) => Promise<void>) {
  return withTestGateway(() => ({ fakes: undefined, config: CONFIG }), fn);
}

/** The status line and the header lines of an answer. */
function headOf(text: string): string[] {
  return text.slice(0, text.indexOf("\r\n\r\n")).split("\r\n");
}

function post(headers: string): string {
  return `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n${headers}\r\n`;
}

Deno.test("edge parity: an answer given before the body is read says Connection: close and closes the connection", async () => {
  // RFC 9112 §9.6; the unread rest of an upload (a 413 on a declared 100 GB) is not taken until the keep-alive
  // timer, nor read as the next request.
  await withGateway(async (gw) => {
    const cases: [string, string, number][] = [
      [
        "declared 100 GB, over max_body_size",
        post(`authorization: Bearer ${TEST_TOKEN}\r\ncontent-length: 100000000000\r\n`),
        413,
      ],
      [
        "declared 10 MB, bad token",
        post(`authorization: Bearer gw-wrong\r\ncontent-length: 10000000\r\n`),
        401,
      ],
      ["chunked, bad token", post(`authorization: Bearer gw-wrong\r\ntransfer-encoding: chunked\r\n`), 401],
      [
        "declared 10 MB, expects 100-continue, bad token",
        post(`authorization: Bearer gw-wrong\r\nexpect: 100-continue\r\ncontent-length: 10000000\r\n`),
        401,
      ],
    ];
    for (const [label, head, status] of cases) {
      const conn = await connect(gw.url);
      await send(conn, head);
      // Part of the body, as a client streaming an upload has sent by the time the answer comes.
      await send(conn, head.includes("chunked") ? `1000\r\n${"x".repeat(4096)}\r\n` : "x".repeat(4096));
      const received = await readUntilClosed(conn, 15_000);
      assert.ok(received.closed, `${label}: the connection is closed after the answer`);
      const answer = received.text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, "");
      const lines = headOf(answer);
      assert.equal(lines[0].slice(9, 12), String(status), `${label}: ${lines[0]}`);
      assert.ok(lines.some((line) => /^connection: *close$/i.test(line)), `${label}: ${lines.join(" | ")}`);
    }
  });
});

Deno.test("edge parity: repeated Content-Length headers, even equal, are refused with a 400 in OpenAI's shape", async () => {
  await withGateway(async (gw) => {
    const body = JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] });
    const conn = await connect(gw.url);
    await send(
      conn,
      post(
        `authorization: Bearer ${TEST_TOKEN}\r\ncontent-length: ${body.length}\r\ncontent-length: ${body.length}\r\n`,
      ) +
        body,
    );
    const received = await readUntilClosed(conn, 15_000);
    assert.match(received.text, /^HTTP\/1\.1 400 /);
    assert.ok(received.closed, "the connection is closed after the answer");
    const error = JSON.parse(received.text.slice(received.text.indexOf("\r\n\r\n") + 4)).error;
    assert.equal(error.code, "malformed_request");
    assert.equal(error.type, "invalid_request_error");
  });
});

Deno.test("edge parity: a header_timeout the runtime cannot apply is warned about at start (Bun), applied otherwise", async () => {
  await withGateway(async (gw) => {
    await waitForLog(gw, (line) => line.msg === "listening");
    if (ON_BUN) {
      const warning = await waitForLog(gw, (line) => line.msg === "header_timeout_not_applied");
      assert.equal(warning.level, "warn");
      assert.equal(warning.header_timeout_ms, 2_000);
      assert.equal(warning.runtime_head_deadline_ms, 10_000);
      return;
    }
    assert.equal(gw.logs.find((line) => line.msg === "header_timeout_not_applied"), undefined);
    // Deno's edge applies it: a silent connection gets the 408.
    const conn = await connect(gw.url);
    const received = await readUntilClosed(conn, 15_000);
    assert.ok(received.closed);
    assert.match(received.text, /^HTTP\/1\.1 408 /);
  });
});
