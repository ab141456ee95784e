/**
 * A stream whose upstream reports no usage is counted by the gateway after its last chunk went out; the count can
 * take long (the first count of a process waits for the tokenizer to load in its worker: a second or more on a
 * busy machine). The request's latency (access log, usage record) and its spans end with the stream, as its client
 * saw it, not when the count finished: they used to end after the count, a second late on a fresh gateway.
 *
 * Timing-free: in-process, the token-count worker (tests/helpers/faulty_token_worker.ts) holds the count of the
 * answer (it says `hold-the-count`) until the test gives it up, a full second after the client had the whole
 * answer; under `GATEWAY_BIN` (a fresh process) the first count loads the real tokenizer. Either way the server
 * started after the client sent the request and ended its stream before the client read its last byte, so what it
 * reports can be no longer than what the client measured.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { tokenCounter } from "../../lib/usage/token_counter.ts";
import { COUNT_ANNOUNCED } from "../helpers/count_announced.ts";
import { startGateway, TEST_TOKEN } from "../helpers/gateway.ts";
import { startOtlpReceiver } from "../helpers/otlp_receiver.ts";

const WORKER = new URL("../helpers/faulty_token_worker.ts", import.meta.url);
const IN_PROCESS = Deno.env.get("GATEWAY_BIN") === undefined;

function sse(delta: Record<string, unknown>, finish: string | null = null): string {
  const chunk = {
    id: "chatcmpl-count-latency",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

Deno.test("telemetry: a stream the gateway counts itself reports its latency and ends its spans when the stream ended, not after the count", async () => {
  const releaseCounter = IN_PROCESS ? tokenCounter.use({ workerUrl: WORKER }) : () => {};
  const channel = new BroadcastChannel(COUNT_ANNOUNCED);
  const begun = new Promise<void>((resolve) => channel.onmessage = () => resolve());
  // An upstream streaming an answer without usage, so the gateway counts it.
  const upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.text();
    const body = sse({ role: "assistant", content: "hold-the-count: counted by the gateway" }) +
      sse({}, "stop") + "data: [DONE]\n\n";
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  const otlp = startOtlpReceiver();
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
providers:
  up: { type: openai, base_url: "http://127.0.0.1:${upstream.addr.port}/v1", api_key: sk-count-latency-0001 }
models:
  counted: { type: chat, targets: [{ provider: up, model: m, retries: 0 }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    const traceId = crypto.randomUUID().replaceAll("-", "");
    const logged = gw.nextLog((l) => l.msg === "request" && l.alias === "counted");
    const sent = performance.now();
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      },
      body: JSON.stringify({ model: "counted", stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /\[DONE\]/);
    const clientMs = performance.now() - sent;
    if (IN_PROCESS) {
      // The count of the answer has begun and is held: a second past the client's end, it is given up (the
      // rough estimate, as a worker that died gives), and only then can the request be reported.
      await begun;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      tokenCounter.stop();
    }
    const line = await logged;
    assert.equal(line.stream, true);
    assert.ok(Number(line.completion_tokens) > 0, "the gateway counted the answer");
    assert.ok(
      Number(line.latency_ms) <= clientMs,
      `latency_ms ${line.latency_ms} is no longer than the client's ${clientMs.toFixed(1)} ms`,
    );
    const spans = await otlp.waitForSpans((s) =>
      s.some((x) => x.traceId === traceId && x.kind === "SERVER") &&
      s.some((x) => x.traceId === traceId && x.name === "chat counted")
    );
    for (const name of ["POST /v1/chat/completions", "gateway", "chat counted", "POST"]) {
      const span = spans.find((x) => x.traceId === traceId && x.name === name);
      assert.ok(span, name);
      const ms = Number(span.endTimeUnixNano - span.startTimeUnixNano) / 1e6;
      assert.ok(ms <= clientMs, `${name} lasted ${ms.toFixed(1)} ms, the client ${clientMs.toFixed(1)} ms`);
    }
  } finally {
    await gw.stop();
    await otlp.stop();
    await upstream.shutdown();
    channel.close();
    releaseCounter();
  }
});
