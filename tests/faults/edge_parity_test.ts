/**
 * What the two runtime edges answer alike where their HTTP servers differ: a `header_timeout` the edge
 * cannot apply (Bun bounds a first head itself) is said at start. Runs in-process on Deno and, with
 * `GATEWAY_BIN`, against the single binary (Bun).
 *
 * @module
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { connect, readUntilClosed } from "../helpers/raw_http.ts";

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

async function withGateway(fn: (gw: TestGateway) => Promise<void>) {
  const gw = await startGateway(CONFIG);
  try {
    await fn(gw);
  } finally {
    await gw.stop();
  }
}

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
