/**
 * A client that gives up before the first byte of the answer (a non-stream call with a slow upstream, an SDK
 * timeout, a stream whose first chunk is late) must stop the upstream call and leave exactly one usage record
 * and one access-log line saying `client_closed_request` (499), not a 200 charged for an answer nobody read.
 * The upstream would answer ten minutes on, and the gateway's own timeouts are longer: only the client leaving
 * can end its call within the backstop (tests/helpers/backstop.ts). Request bodies of 1 KB and more: `Deno.serve` missed exactly these. Runs in-process on
 * Deno and, with `GATEWAY_BIN`, against the single binary.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, waitForLog } from "../helpers/gateway.ts";
import { connect, postJson, send } from "../helpers/raw_http.ts";
import { startSlowUpstream } from "../helpers/slow_upstream.ts";
import { BACKSTOP_MS, eventually } from "../helpers/backstop.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}

for (const stream of [false, true]) {
  const kind = stream ? "a stream whose first chunk is late" : "a non-stream call with a slow upstream";
  Deno.test(`client disconnect before the first byte: ${kind} aborts the upstream and is recorded once as 499`, async () => {
    const upstream = await startSlowUpstream();
    const dir = await Deno.makeTempDir();
    const usageFile = `${dir}/usage.jsonl`;
    const gw = await startGateway(`
server: { timeouts: { first_byte: 20m, idle: 20m } }
providers:
  slow: { type: openai, base_url: "${upstream.baseURL}", api_key: sk-test-slow-upstream }
models:
  chat-slow: { type: chat, targets: [{ provider: slow, model: slow-600000 }] }
usage: { sqlite: none, jsonl: "${usageFile}", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
${TEST_TOKENS_YAML}`);
    try {
      const requestId = `disconnect-${stream ? "stream" : "plain"}-${crypto.randomUUID()}`;
      const conn = await connect(gw.url);
      const request = postJson("/v1/chat/completions", {
        model: "chat-slow",
        stream,
        messages: [{ role: "user", content: "x".repeat(1_500) }],
      }, { authorization: `Bearer ${TEST_TOKEN}`, "x-request-id": requestId });
      assert.ok(request.length > 1_024);
      assert.ok(await send(conn, request));
      await eventually("the call reaches the upstream", () => upstream.received() === 1);
      await sleep(200);
      conn.close();

      await eventually(
        "the upstream request aborted once the client left",
        () => upstream.aborts.length === 1,
      );

      const line = await waitForLog(
        gw,
        (l) => l.msg === "request" && l.request_id === requestId,
        BACKSTOP_MS,
      );
      assert.equal(line.error_code, "client_closed_request");
      assert.equal(line.status, 499);
      await sleep(200);
      assert.equal(gw.logs.filter((l) => l.msg === "request" && l.request_id === requestId).length, 1);

      let records: Record<string, unknown>[] = [];
      await waitFor(() => {
        try {
          records = Deno.readTextFileSync(usageFile).trim().split("\n").filter(Boolean).map((l) =>
            JSON.parse(l)
          )
            .filter((r) => r.request_id === requestId);
        } catch {
          records = [];
        }
        return records.length > 0;
      }, BACKSTOP_MS);
      assert.equal(records.length, 1, "exactly one usage record");
      assert.equal(records[0].error_code, "client_closed_request");
      assert.equal(records[0].status, 499);
      assert.equal(records[0].stream, stream);
    } finally {
      await gw.stop();
      await upstream.stop();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("client disconnect mid-upload: recorded once as 499 client_closed_request, not as the client's 400", async () => {
  const gw = await startGateway(`
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [{ provider: local, model: echo }] }
${TEST_TOKENS_YAML}`);
  try {
    for (const framing of ["content-length", "chunked"]) {
      const requestId = `upload-${framing}-${crypto.randomUUID()}`;
      const conn = await connect(gw.url);
      const length = framing === "content-length" ? "content-length: 5000" : "transfer-encoding: chunked";
      const head =
        `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${TEST_TOKEN}\r\n` +
        `content-type: application/json\r\nx-request-id: ${requestId}\r\n${length}\r\n\r\n`;
      const part = '{"model":"chat-echo","messages":[{"role":"user","content":"';
      assert.ok(
        await send(
          conn,
          head + (framing === "chunked" ? `${part.length.toString(16)}\r\n${part}\r\n` : part),
        ),
      );
      await sleep(200);
      conn.close();
      const line = await waitForLog(gw, (l) => l.msg === "request" && l.request_id === requestId);
      assert.equal(line.status, 499, `${framing}: ${JSON.stringify(line)}`);
      assert.equal(line.error_code, "client_closed_request");
    }
  } finally {
    await gw.stop();
  }
});
