/**
 * An answer given before a chunked upload has all arrived (a 413 past `max_body_size`, a 401) reaches a client
 * still sending the rest, however it is framed: on Bun the edge drains the rest, bounded, before it answers and
 * closes (lib/runtime/bun_linger.ts), as Deno's node:http edge does. Before that, on Bun 1.4.5, Deno's fetch lost
 * most such answers to "Broken pipe". Runs in-process on Deno and, with `GATEWAY_BIN`, against the single binary
 * (Bun).
 *
 * @module
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withTestGateway } from "../helpers/with_gateway.ts";
import { connect, send } from "../helpers/raw_http.ts";

const CONFIG = `
server: { max_body_size: 64kb }
models:
  chat-echo: { type: chat, targets: [{ provider: echo, model: echo-1 }] }
providers:
  echo: { type: openai, base_url: "http://127.0.0.1:9/v1", api_key: sk-test-unused }
${TEST_TOKENS_YAML}`;

function withGateway(fn: (gw: TestGateway) => Promise<void>) {
  return withTestGateway(() => ({ fakes: undefined, config: CONFIG }), fn);
}

/** `bytes` as a chunked upload, in 4 KiB reads (fetch frames a stream body with chunked encoding). */
function chunked(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 4096) controller.enqueue(bytes.subarray(i, i + 4096));
      controller.close();
    },
  });
}

/** How each of `times` chunked uploads of `body` ended: its status, or the fetch error. */
async function outcomes(
  url: string,
  headers: Record<string, string>,
  body: Uint8Array,
  times: number,
): Promise<Record<string, number>> {
  const seen: Record<string, number> = {};
  for (let i = 0; i < times; i++) {
    let outcome: string;
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: chunked(body),
        duplex: "half",
      } as RequestInit);
      await res.body?.cancel();
      outcome = String(res.status);
    } catch (err) {
      outcome = `fetch failed: ${(err as Error).cause ?? err}`;
    }
    seen[outcome] = (seen[outcome] ?? 0) + 1;
  }
  return seen;
}

/** A ~1 MB chat request: 16 times `max_body_size`. */
const BIG = new TextEncoder().encode(JSON.stringify({
  model: "chat-echo",
  messages: [{ role: "user", content: "x".repeat(1_000_000) }],
}));

Deno.test("chunked refusal: a chunked body past max_body_size gets its 413, every time", async () => {
  await withGateway(async (gw) => {
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    assert.deepEqual(await outcomes(`${gw.url}/v1/chat/completions`, auth, BIG, 20), { "413": 20 });
    assert.deepEqual(await outcomes(`${gw.url}/v1/messages`, { "x-api-key": TEST_TOKEN }, BIG, 20), {
      "413": 20,
    });
  });
});

Deno.test("chunked refusal: a chunked body refused before it is read (bad token) gets its 401, every time", async () => {
  await withGateway(async (gw) => {
    const auth = { authorization: "Bearer gw-wrong" };
    assert.deepEqual(await outcomes(`${gw.url}/v1/chat/completions`, auth, BIG, 20), { "401": 20 });
  });
});

/**
 * Sends a chunked upload that never ends, a chunk every `pauseMs`, until the gateway ends the connection (a
 * close, or a reset while this side still writes); false if it was still open after 30 s.
 */
async function endsEndlessUpload(gw: TestGateway, pauseMs: number): Promise<boolean> {
  const conn = await connect(gw.url);
  const head = `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
    `authorization: Bearer ${TEST_TOKEN}\r\ntransfer-encoding: chunked\r\n\r\n`;
  const chunk = `1000\r\n${"x".repeat(4096)}\r\n`;
  let ended = false;
  const reading = (async () => {
    const buf = new Uint8Array(65_536);
    try {
      while ((await conn.read(buf)) !== null);
    } catch {
      // A reset: the connection was closed while this side was still sending.
    }
    ended = true;
  })();
  // The test's own bound, far past the gateway's, stops a gateway that would take the upload forever.
  const until = Date.now() + 30_000;
  try {
    await send(conn, head);
    while (!ended && Date.now() < until) {
      if (!await send(conn, chunk)) break;
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    await reading;
    return Date.now() < until;
  } finally {
    try {
      conn.close();
    } catch {
      // Already closed.
    }
  }
}

Deno.test("chunked refusal: a chunked upload that never ends still has its connection closed", async () => {
  // The drain is bounded (on Bun by LINGER_BYTES for a fast sender, LINGER_MS for a slow one): a client sending
  // forever is not read forever.
  await withGateway(async (gw) => {
    assert.ok(await endsEndlessUpload(gw, 0), "a fast sender's connection was closed");
    assert.ok(await endsEndlessUpload(gw, 20), "a slow sender's connection was closed");
    // The gateway still answers.
    const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  });
});
