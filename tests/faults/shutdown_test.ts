/**
 * Shutdown loses nothing: streams still open when `server.shutdown_timeout` runs out are ended by the gateway
 * itself, each with an error event its client can see, and each leaves exactly one usage record (with the tokens
 * counted so far) and one access-log line, flushed before the process exits. Runs in-process on Deno and, with
 * `GATEWAY_BIN`, against the single binary stopped by SIGTERM.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { connect, readUntilClosed, send } from "../helpers/raw_http.ts";
import { backstop, eventually } from "../helpers/backstop.ts";

const STREAMS = 20;
const GRACE_MS = 300;
const encoder = new TextEncoder();

/**
 * An OpenAI-compatible upstream whose streams send a role chunk and some text, then only SSE comments until the
 * gateway goes away. (The comments make the fake notice that: `Deno.serve` often misses a peer that closes
 * while nothing is being written.)
 */
function startHangingUpstream() {
  let aborted = 0;
  const chunk = (delta: Record<string, unknown>) =>
    encoder.encode(`data: ${
      JSON.stringify({
        id: "chatcmpl-hang",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model: "hang",
        choices: [{ index: 0, delta, finish_reason: null }],
      })
    }\n\n`);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    await request.text();
    let timer: ReturnType<typeof setInterval> | undefined;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk({ role: "assistant", content: "" }));
        controller.enqueue(chunk({ content: "a partial answer that never ends" }));
        timer = setInterval(() => controller.enqueue(encoder.encode(": thinking\n\n")), 50);
      },
      cancel() {
        clearInterval(timer);
        aborted++;
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1`,
    /** Streams whose reader (the gateway) went away. */
    aborted: () => aborted,
    stop: () => server.shutdown(),
  };
}

/** Reads a stream until its first content chunk; `rest` is everything it received by the time it ended. */
async function openStream(url: string): Promise<{ rest: Promise<string> }> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "chat-hang",
      stream: true,
      messages: [{ role: "user", content: "tell me everything" }],
    }),
  });
  assert.equal(response.status, 200);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("partial answer")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`stream ended early: ${text}`);
    text += value;
  }
  const rest = (async () => {
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) return text;
        text += value;
      }
    } catch {
      return text; // a connection cut without an ending: the assertions below report it
    }
  })();
  return { rest };
}

Deno.test("shutdown: streams open past the grace period end with an error event and are each recorded once", async () => {
  const upstream = startHangingUpstream();
  const dir = await Deno.makeTempDir();
  const usageFile = `${dir}/usage.jsonl`;
  const gw = await startGateway(`
server: { shutdown_timeout: ${GRACE_MS}ms, timeouts: { idle: 10m } }
providers:
  hang: { type: openai, base_url: "${upstream.url}", api_key: sk-test-hanging-upstream }
models:
  chat-hang: { type: chat, targets: [{ provider: hang, model: hang }] }
usage: { sqlite: none, jsonl: "${usageFile}", spill: "${dir}/spill.jsonl", flush_interval: 50ms }
${TEST_TOKENS_YAML}`);
  try {
    const rests = await Promise.all(Array.from({ length: STREAMS }, () => openStream(gw.url)));
    // The upstream is silent and the idle timeout ten minutes: only the grace period's end can end the streams
    // within the backstop, and each one's server_shutdown says it was that.
    await backstop(gw.stop(GRACE_MS), "the stop at the end of the grace period");
    const endings = await Promise.all(rests.map((r) => r.rest));

    for (const ending of endings) {
      assert(!ending.includes("[DONE]"), "a cut stream must not end cleanly");
      const last = ending.trim().split("\n\n").at(-1)!;
      const event = JSON.parse(last.replace(/^data: /, ""));
      assert.equal(event.error.code, "server_shutdown", last);
    }
    const records = (await Deno.readTextFile(usageFile)).trim().split("\n").map((l) => JSON.parse(l));
    const chats = records.filter((r) => r.endpoint === "chat");
    assert.equal(chats.length, STREAMS, "one usage record per stream");
    assert.equal(new Set(chats.map((r) => r.request_id)).size, STREAMS);
    for (const record of chats) {
      assert.equal(record.error_code, "server_shutdown");
      assert.equal(record.stream, true);
      assert(record.completion_tokens > 0, "the tokens streamed so far are counted");
      assert(record.prompt_tokens > 0);
    }
    const logged = gw.logs.filter((l) => l.msg === "request" && l.path === "/v1/chat/completions");
    assert.equal(logged.length, STREAMS, "one access-log line per stream");
    assert(logged.every((l) => l.error_code === "server_shutdown"));
    await eventually("every upstream request aborted", () => upstream.aborted() >= STREAMS);
    assert.equal(upstream.aborted(), STREAMS, "every upstream request was aborted, once");
  } finally {
    await upstream.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("shutdown: a request still uploading its body when the grace period ends gets the 503 server_shutdown, recorded once", async () => {
  const dir = await Deno.makeTempDir();
  const usageFile = `${dir}/usage.jsonl`;
  const gw = await startGateway(`
server: { shutdown_timeout: ${GRACE_MS}ms, connections: { body_timeout: 30s } }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [{ provider: local, model: echo }] }
usage: { sqlite: none, jsonl: "${usageFile}", spill: "${dir}/spill.jsonl", flush_interval: 50ms }
${TEST_TOKENS_YAML}`);
  const { hostname, port } = new URL(gw.url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  try {
    await conn.write(encoder.encode(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${TEST_TOKEN}\r\n` +
        `content-type: application/json\r\nx-request-id: uploading\r\ncontent-length: 5000\r\n\r\n{"model":`,
    ));
    await new Promise((r) => setTimeout(r, 100));
    await gw.stop(GRACE_MS);
    let text = "";
    const buf = new Uint8Array(4096);
    while (true) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    assert.match(text, /^HTTP\/1\.1 503 /, text);
    assert.equal(JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)).error.code, "server_shutdown");
    const records = (await Deno.readTextFile(usageFile)).trim().split("\n").map((l) => JSON.parse(l))
      .filter((r) => r.request_id === "uploading");
    assert.equal(records.length, 1);
    assert.equal(records[0].status, 503);
    assert.equal(records[0].error_code, "server_shutdown");
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the gateway
    }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("shutdown: a request whose head is still arriving when shutdown begins is served, and its connection closed", async () => {
  const dir = await Deno.makeTempDir();
  const usageFile = `${dir}/usage.jsonl`;
  const gw = await startGateway(`
server: { shutdown_timeout: 3s }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [{ provider: local, model: echo }] }
usage: { sqlite: none, jsonl: "${usageFile}", spill: "${dir}/spill.jsonl", flush_interval: 50ms }
${TEST_TOKENS_YAML}`);
  const body = JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hello" }] });
  const request =
    `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${TEST_TOKEN}\r\n` +
    `content-type: application/json\r\nx-request-id: arriving\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  const conn = await connect(gw.url);
  try {
    // Half the head, then shutdown, then the rest: the request was on its way before the gateway stopped.
    await send(conn, request.slice(0, 40));
    await new Promise((r) => setTimeout(r, 100));
    const stopped = gw.stop(3_000);
    await new Promise((r) => setTimeout(r, 100));
    await send(conn, request.slice(40));
    const received = await readUntilClosed(conn, 5_000);
    await stopped;
    const head = received.text.slice(0, received.text.indexOf("\r\n\r\n"));
    assert.match(head, /^HTTP\/1\.1 200 /, received.text);
    assert.match(head, /\r\nconnection: close\r?$/im, head);
    assert.equal(JSON.parse(received.text.slice(head.length + 4)).object, "chat.completion");
    assert(received.closed, "the gateway closes the connection after the answer");
    const records = (await Deno.readTextFile(usageFile)).trim().split("\n").map((l) => JSON.parse(l))
      .filter((r) => r.request_id === "arriving");
    assert.equal(records.length, 1);
    assert.equal(records[0].status, 200);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
