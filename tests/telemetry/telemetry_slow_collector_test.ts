/**
 * A collector that answers 200 and then trickles its body a byte at a time: each export is ended at its
 * deadline (`otlp.timeout`) by the gateway, traces and metrics alike, so a slow collector holds one
 * connection at a time and never turns export off; once it recovers, spans reach it again; and stopping the
 * gateway leaves no export open.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { startOtlpReceiver } from "../helpers/otlp_receiver.ts";
import { BACKSTOP_MS, eventually } from "../helpers/backstop.ts";

async function ask(gw: TestGateway, headers: Record<string, string> = {}): Promise<void> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 200);
  await res.text();
}

/** Waits (driving requests, so there are spans to export) until `done` holds, for at most `ms`. */
async function driveUntil(gw: TestGateway, done: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) {
    await ask(gw);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return done();
}

Deno.test("telemetry faults: a collector that trickles its answers has each export ended at its deadline; export resumes when it recovers", async () => {
  const otlp = startOtlpReceiver({ trickle: true });
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms, timeout: 200ms }
providers:
  local: { type: builtin }
models:
  echo: { type: chat, targets: [{ provider: local, model: echo }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  let stopped = false;
  try {
    const closed = (path: string) => otlp.trickled.filter((a) => a.path === path && a.closed).length;
    // The exporter's idle-socket timeout never fired while bytes trickled: no export was ever ended.
    const ended = await driveUntil(
      gw,
      () => closed("/v1/traces") >= 3 && closed("/v1/metrics") >= 1,
      BACKSTOP_MS,
    );
    assert.ok(
      ended,
      `the gateway ended trickled exports: ${closed("/v1/traces")} of traces, ${
        closed("/v1/metrics")
      } of metrics, of ${otlp.trickled.length}`,
    );
    otlp.heal();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    await ask(gw, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    const spans = await otlp.waitForSpans((s) => s.some((x) => x.traceId === traceId));
    assert.ok(spans.some((x) => x.traceId === traceId && x.kind === "SERVER"), "spans exported again");
    await gw.stop(2_000);
    stopped = true;
    // A trickle the gateway left open goes on for ever: awaited, so a loaded machine's slow close is no failure.
    await eventually("every export closed once stopped", () => otlp.trickled.every((a) => a.closed)).catch(
      () => {},
    );
    assert.deepEqual(otlp.trickled.filter((a) => !a.closed), [], "no export left open once stopped");
  } finally {
    if (!stopped) await gw.stop(500);
    await otlp.stop();
  }
});
