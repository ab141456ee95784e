/**
 * An upstream's gzip bomb (a few KB on the wire per GiB of answer) costs the gateway what
 * `server.upstream_limits` allows and no more: the client gets the 502 `upstream_response_too_large` in its
 * API's shape, the upstream's connection is closed once the limit is passed (long before the bomb is sent), one
 * usage record says why, and while the gateway reads a compressed answer it holds about the bytes it read
 * (measured in a child process with V8's `gc` exposed, gzip_memory_probe.ts). Before, it kept each 4 KiB chunk
 * Deno's `fetch` decompresses inside the 64 KiB buffer it was read into: 16 times the answer.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { gzipBomb } from "../helpers/gzip_bomb.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

Deno.test("gzip bomb: while the gateway reads a compressed answer it holds about what it read, not 16 times that", async () => {
  const probe = new URL("./gzip_memory_probe.ts", import.meta.url);
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--v8-flags=--expose-gc", "-A", probe.pathname],
    // The probe measures its own in-process gateway, never a binary's.
    env: { GATEWAY_BIN: "" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const run: { heldMiB: number; mostMiB: number; status: number; code: string } = JSON.parse(
    new TextDecoder().decode(stdout),
  );
  console.log(`${run.mostMiB.toFixed(1)} MiB held for ${run.heldMiB} MiB read`);
  assert.ok(run.mostMiB >= 0.9 * run.heldMiB, "the gateway read what the upstream sent before it held");
  assert.ok(run.mostMiB < 2 * run.heldMiB, `${run.mostMiB.toFixed(1)} MiB held for ${run.heldMiB} MiB read`);
  assert.equal(run.status, 502);
  assert.equal(run.code, "upstream_response_too_large");
});

Deno.test("gzip bomb: the client gets the 502, the upstream is cut off long before the bomb is sent, one usage record", async (t) => {
  const raw = startRawUpstream();
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(`
server:
  timeouts: { first_byte: 10s, idle: 5m, total: 5m }
  upstream_limits: { max_body_size: 1MiB, max_event_size: 1MiB }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  oai: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-up" }
models:
  chat-oai: { type: chat, targets: [{ provider: oai, model: g, retries: 0 }] }
${TEST_TOKENS_YAML}`);
  let stopped = false;
  try {
    const cases = [
      // A JSON document that never ends (spaces), and one SSE event that never ends.
      { name: "whole answer", stream: false, type: "application/json", bomb: await gzipBomb("", " ") },
      { name: "stream", stream: true, type: "text/event-stream", bomb: await gzipBomb("data: ", "a") },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        // 64 GiB decompressed, about 66 MB on the wire: far more than the sockets between them can buffer.
        raw.next = {
          headers: { "content-type": c.type, "content-encoding": "gzip" },
          chunks: [c.bomb.head, ...Array.from({ length: 64 * 1024 }, () => c.bomb.unit)],
        };
        const answers = raw.answers.length;
        const res = await fetch(`${gw.baseURL}/chat/completions`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${TEST_TOKEN}`,
            "content-type": "application/json",
            "x-request-id": `gzip-bomb-${c.stream ? "stream" : "json"}`,
          },
          body: JSON.stringify({
            model: "chat-oai",
            stream: c.stream,
            messages: [{ role: "user", content: "hi" }],
          }),
        });
        assert.equal(res.status, 502);
        const body = await res.json();
        assert.equal(body.error.code, "upstream_response_too_large");
        assert.equal(body.error.type, "server_error");
        const answer = raw.answers[answers];
        // The gateway's timeouts are minutes away: only its own hang-up ends the answer this early.
        let timer: ReturnType<typeof setTimeout> | undefined;
        const ended = await Promise.race([
          answer.ended,
          new Promise<"still sending">((r) => timer = setTimeout(() => r("still sending"), 20_000)),
        ]);
        clearTimeout(timer);
        assert.equal(ended, false, "the gateway hung up on the upstream");
        console.log(`${c.name}: the upstream sent ${answer.sent} of ${answer.total} bytes`);
        assert.ok(answer.sent < answer.total / 4, `sent ${answer.sent} of ${answer.total} bytes`);
      });
    }
    await gw.stop();
    stopped = true;
    const records = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    for (const c of cases) {
      const mine = records.filter((r) => r.request_id === `gzip-bomb-${c.stream ? "stream" : "json"}`);
      assert.equal(mine.length, 1, `one usage record for the ${c.name}`);
      assert.equal(mine[0].status, 502);
      assert.equal(mine[0].error_code, "upstream_response_too_large");
    }
  } finally {
    if (!stopped) await gw.stop();
    await raw.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
