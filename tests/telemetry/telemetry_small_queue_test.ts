/**
 * A small `telemetry.otlp.max_queue` with a healthy collector loses no span: batches go out before the queue
 * fills, not only on the export timer. (A queue of 400 below the exporter's batch size of 512 used to drop ~88%
 * of a busy gateway's spans, counted in `gateway_telemetry_dropped_total`, with a collector answering at once.)
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN } from "../helpers/gateway.ts";
import { startOtlpReceiver } from "../helpers/otlp_receiver.ts";

Deno.test("telemetry: a max_queue below the batch size drops nothing while the collector keeps up", async () => {
  const otlp = startOtlpReceiver();
  // The timer is an hour away: only early (size-triggered) exports can keep the queue from overflowing.
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 1h, max_queue: 40 }
providers:
  local: { type: builtin }
models:
  echo: { type: chat, targets: [{ provider: local, model: echo }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
server: { public_metrics: true }
`);
  let stopped = false;
  const requests = 60;
  try {
    for (let i = 0; i < requests; i++) {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: `hi ${i}` }] }),
      });
      assert.equal(res.status, 200);
      await res.text();
    }
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    const dropped = Number(
      /^gateway_telemetry_dropped_total\{signal="traces"\} (\d+)/m.exec(metrics)?.[1] ?? 0,
    );
    assert.equal(dropped, 0, "spans dropped with a healthy collector");
    // Shutdown sends what still waits (less than a batch); every request's server span arrived.
    await gw.stop(5_000);
    stopped = true;
    const servers = otlp.spans().filter((s) => s.kind === "SERVER" && s.name === "POST /v1/chat/completions");
    assert.equal(servers.length, requests);
  } finally {
    if (!stopped) await gw.stop(500);
    await otlp.stop();
  }
});
