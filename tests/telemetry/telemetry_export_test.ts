/**
 * What OpenTelemetry export may and may not carry, and what it may never cost (issue 25, acceptances 3–5):
 *
 * - content capture on: prompts and answers are in the GenAI span as parts, after the alias's content rules
 *   redacted them, and no configured secret appears in any exported byte (the scrubber runs on span
 *   attributes); capture off: no message text is exported at all;
 * - a collector that refuses or hangs: every request is answered while an export is stuck (its deadline ten
 *   minutes away), shutdown ends such an export at its grace rather than waiting for it, and the spans of
 *   exports that fail or time out are dropped and counted (`gateway_telemetry_dropped_total`);
 * - sampling: a ratio keeps about that share of new traces (bounds at five standard deviations), and an
 *   incoming `traceparent`'s sampled flag decides for its own trace either way;
 * - the GenAI metrics reach the collector over OTLP.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { startOtlpReceiver } from "../helpers/otlp_receiver.ts";
import { backstop, eventually } from "../helpers/backstop.ts";

const UPSTREAM_SECRET = "sk-telemetry-upstream-secret-9f8e7d6c";
const OTLP_SECRET = "otlp-backend-secret-5a4b3c2d1e";

/** A gateway config exporting to `otlpUrl`; `otlp` and `telemetry` add keys to those blocks. */
function config(otlpUrl: string, options: { otlp?: string; telemetry?: string } = {}): string {
  return `
telemetry:
  otlp:
    endpoint: "${otlpUrl}"
    interval: 50ms
    headers: { authorization: "Bearer ${OTLP_SECRET}" }
${options.otlp ?? ""}
${options.telemetry ?? ""}
providers:
  local: { type: builtin }
  keyed: { type: openai, base_url: "http://127.0.0.1:1/v1", api_key: "${UPSTREAM_SECRET}" }
models:
  echo:
    type: chat
    targets: [{ provider: local, model: echo }]
    content_rules: [{ name: ssn, pattern: "SSN-\\\\d{4}", action: redact }]
  unused: { type: chat, targets: [{ provider: keyed, model: gpt }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
server: { public_metrics: true }
`;
}

async function ask(gw: TestGateway, content: string, headers: Record<string, string> = {}, stream = false) {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "echo", messages: [{ role: "user", content }], stream }),
  });
  assert.equal(res.status, 200);
  return await res.text();
}

const decoder = new TextDecoder();
const exported = (requests: { bytes: Uint8Array }[]) =>
  requests.map((r) => decoder.decode(r.bytes)).join("\n");

Deno.test("telemetry content: captured after redaction, secrets never exported; off: no message text", async () => {
  for (const capture of [true, false]) {
    const otlp = startOtlpReceiver();
    const gw = await startGateway(config(otlp.url, { telemetry: capture ? "  capture_content: true" : "" }));
    try {
      const text = `marker-hello SSN-1234 ${UPSTREAM_SECRET} ${OTLP_SECRET}`;
      await ask(gw, text);
      await ask(gw, text, {}, true);
      const spans = await otlp.waitForSpans(
        (s) => s.filter((x) => x.name === "chat echo").length >= 2,
      );
      const bytes = exported(otlp.requests);
      for (const secret of ["SSN-1234", UPSTREAM_SECRET, OTLP_SECRET]) {
        assert.ok(!bytes.includes(secret), `${secret} exported (capture ${capture})`);
      }
      for (const call of spans.filter((s) => s.name === "chat echo")) {
        if (capture) {
          const input = JSON.parse(String(call.attributes["gen_ai.input.messages"]));
          assert.equal(input[0].role, "user");
          assert.match(input[0].parts[0].content, /^marker-hello \[REDACTED\]/);
          const output = JSON.parse(String(call.attributes["gen_ai.output.messages"]));
          assert.match(output[0].parts[0].content, /marker-hello/);
        } else {
          assert.equal(call.attributes["gen_ai.input.messages"], undefined);
          assert.equal(call.attributes["gen_ai.output.messages"], undefined);
        }
      }
      if (!capture) assert.ok(!bytes.includes("marker-hello"), "no message text without capture");
    } finally {
      await gw.stop();
      await otlp.stop();
    }
  }
});

Deno.test("telemetry content: past max_content_size the captured messages are still JSON, within that many UTF-8 bytes", async () => {
  const otlp = startOtlpReceiver();
  const gw = await startGateway(
    config(otlp.url, { telemetry: "  capture_content: true\n  max_content_size: 1KiB" }),
  );
  try {
    const text = "漢字😀".repeat(1000); // 4000 characters, 10000 bytes of UTF-8
    await ask(gw, text);
    const spans = await otlp.waitForSpans((s) => s.some((x) => x.name === "chat echo"));
    const call = spans.find((s) => s.name === "chat echo")!;
    for (const name of ["gen_ai.input.messages", "gen_ai.output.messages"]) {
      const value = String(call.attributes[name]);
      assert.ok(new TextEncoder().encode(value).length <= 1024, `${name}: at most 1 KiB of UTF-8`);
      const messages = JSON.parse(value);
      const part = messages[0].parts[0];
      assert.ok(part.content.length > 200 && text.startsWith(part.content), `${name}: the text's beginning`);
      assert.equal(part.truncated, true, `${name}: says it was cut`);
    }
  } finally {
    await gw.stop();
    await otlp.stop();
  }
});

async function droppedSpans(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return Number(/^gateway_telemetry_dropped_total\{signal="traces"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

Deno.test("telemetry faults: a collector that never answers holds no request, and shutdown ends its stuck export at the grace", async () => {
  // The export's own deadline is ten minutes, so the export is stuck for the whole test: requests are answered
  // while it is, and only shutdown's grace can end it (a shutdown that waited for it would hang to the backstop).
  const otlp = startOtlpReceiver({ hang: true });
  const gw = await startGateway(config(otlp.url, { otlp: "    timeout: 10m" }));
  /** The shutdown under test; once begun it is not begun again (a second one would wait for the first). */
  let stopping: Promise<void> | undefined;
  try {
    await eventually("an export reaches the hanging collector", async () => {
      await ask(gw, "waiting for an export");
      return otlp.requests.some((r) => r.path === "/v1/traces");
    });
    for (let i = 0; i < 20; i++) assert.match(await ask(gw, `while stuck ${i}`), /while stuck/);
    await ask(gw, "one more, queued at shutdown");
    stopping = gw.stop(500);
    await backstop(stopping, "shutdown with an export stuck at the collector");
  } finally {
    if (stopping === undefined) await gw.stop();
    // Answers the held export: a shutdown that waited for it (and failed at the backstop) then ends too.
    await otlp.stop();
  }
});

Deno.test("telemetry faults: exports a collector never answers end at otlp.timeout; their spans are dropped and counted", async () => {
  const otlp = startOtlpReceiver({ hang: true });
  const gw = await startGateway(config(otlp.url, { otlp: "    timeout: 200ms" }));
  try {
    await ask(gw, "first");
    await eventually(
      "timed-out exports are counted as dropped spans",
      async () => await droppedSpans(gw) > 0,
    );
    assert.match(await ask(gw, "after a timed-out export"), /after a timed-out export/);
  } finally {
    await gw.stop();
    await otlp.stop();
  }
});

Deno.test("telemetry faults: a collector that refuses connections costs requests nothing and is counted", async () => {
  const gw = await startGateway(config("http://127.0.0.1:1", { otlp: "    timeout: 200ms" }));
  try {
    for (let i = 0; i < 10; i++) assert.match(await ask(gw, `refused ${i}`), /refused/);
    await eventually("refused exports are counted as dropped spans", async () => await droppedSpans(gw) > 0);
  } finally {
    await gw.stop();
  }
});

Deno.test("telemetry sampling: a ratio keeps its share of new traces; an incoming traceparent decides for its own", async () => {
  const otlp = startOtlpReceiver();
  const gw = await startGateway(config(otlp.url, { otlp: "    sample_ratio: 0.5" }));
  try {
    const total = 200;
    for (let i = 0; i < total; i++) await ask(gw, `sampled? ${i}`);
    // Parent-based: a sampled parent is kept and an unsampled one is not, whatever the ratio.
    const kept = "0af7651916cd43dd8448eb211c80319c";
    const dropped = "1bf7651916cd43dd8448eb211c80319d";
    for (let i = 0; i < 5; i++) {
      await ask(gw, "parent sampled", { traceparent: `00-${kept}-b7ad6b716920333${i}-01` });
      await ask(gw, "parent not sampled", { traceparent: `00-${dropped}-b7ad6b716920333${i}-00` });
    }
    await otlp.waitForSpans(
      (s) => s.filter((x) => x.traceId === kept && x.kind === "SERVER").length === 5,
    );
    await new Promise((r) => setTimeout(r, 300));
    const servers = otlp.spans().filter((s) => s.kind === "SERVER");
    const fresh = servers.filter((s) => s.traceId !== kept && s.traceId !== dropped).length;
    // Binomial(200, 0.5): mean 100, standard deviation √50 ≈ 7.1; five of them either way.
    assert.ok(fresh >= 65 && fresh <= 135, `about half of ${total} new traces kept: ${fresh}`);
    assert.equal(servers.filter((s) => s.traceId === dropped).length, 0, "an unsampled parent is honoured");
  } finally {
    await gw.stop();
    await otlp.stop();
  }
});

/**
 * The GenAI metric conventions' ExplicitBucketBoundaries for the client metrics (docs/gen-ai/gen-ai-metrics.md of
 * open-telemetry/semantic-conventions-genai): the two chunk metrics take the duration's list, not the server
 * time-to-first-token / time-per-output-token lists.
 */
// deno-fmt-ignore
const CONVENTION_BUCKETS: Record<string, number[]> = {
  "gen_ai.client.operation.duration":
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  "gen_ai.client.token.usage":
    [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
  "gen_ai.client.operation.time_to_first_chunk":
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  "gen_ai.client.operation.time_per_output_chunk":
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
};

for (const protocol of ["http/protobuf", "http/json"] as const) {
  Deno.test(`telemetry metrics (${protocol}): the GenAI client metrics reach the collector over OTLP, in the conventions' buckets`, async () => {
    const otlp = startOtlpReceiver();
    const gw = await startGateway(config(otlp.url, { otlp: `    protocol: ${protocol}` }));
    try {
      await ask(gw, "one");
      await ask(gw, "a streamed answer of several words", {}, true);
      const want = [
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
        "gen_ai.client.operation.time_per_output_chunk",
      ];
      const metrics = await otlp.waitForMetrics(
        (m) => want.every((name) => m.some((x) => x.name === name)),
        15_000,
      );
      const duration = metrics.find((m) => m.name === "gen_ai.client.operation.duration")!;
      assert.equal(duration.kind, "histogram");
      assert.equal(duration.unit, "s");
      const echo = duration.points.find((p) => p.attributes["gen_ai.request.model"] === "echo");
      assert.equal(
        echo?.attributes["gen_ai.provider.name"],
        "gateway.builtin",
        "the conventions' kind of name",
      );
      assert.equal(echo?.attributes["gateway.provider"], "local", "the config's name of the entry");
      // The boundaries the GenAI metric conventions advise, in seconds and tokens (the SDK's default, made for
      // milliseconds, put every call of under 5 s into one bucket).
      for (const [name, bounds] of Object.entries(CONVENTION_BUCKETS)) {
        const points = metrics.find((m) => m.name === name)!.points;
        for (const point of points) assert.deepEqual(point.explicitBounds, bounds, name);
      }
      // Both signals speak the protocol the operator chose.
      await otlp.waitForSpans((spans) => spans.length > 0);
      const wanted = protocol === "http/json" ? "application/json" : "application/x-protobuf";
      for (const path of ["/v1/traces", "/v1/metrics"]) {
        const types = new Set(otlp.requests.filter((r) => r.path === path).map((r) => r.contentType));
        assert.deepEqual([...types], [wanted], `${path} in ${protocol}`);
      }
    } finally {
      await gw.stop();
      await otlp.stop();
    }
  });
}

Deno.test("telemetry secrets: an upstream that writes the key into its answer's model leaks it into no span or metric", async () => {
  // A careless upstream names the model after the credential it was sent, in a whole answer and in a stream.
  const upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.json();
    const model = `echo:${request.headers.get("authorization")?.replace("Bearer ", "")}`;
    if (!body.stream) {
      return Response.json({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model,
        choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
    }
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${
        JSON.stringify({
          id: "chatcmpl-2",
          object: "chat.completion.chunk",
          created: 1,
          model,
          choices: [{ index: 0, delta, finish_reason: finish }],
        })
      }\n\n`;
    return new Response(
      `${chunk({ role: "assistant", content: "hi" }, null)}${chunk({}, "stop")}data: [DONE]\n\n`,
      {
        headers: { "content-type": "text/event-stream" },
      },
    );
  });
  const otlp = startOtlpReceiver();
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
providers:
  careless: { type: openai, base_url: "http://127.0.0.1:${upstream.addr.port}/v1", api_key: "${UPSTREAM_SECRET}" }
models:
  echo: { type: chat, targets: [{ provider: careless, model: m }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    const answer = await ask(gw, "one");
    await ask(gw, "two", {}, true);
    assert.ok(!answer.includes(UPSTREAM_SECRET), "the client's answer names the alias");
    const spans = await otlp.waitForSpans((s) => s.filter((x) => x.name === "chat echo").length >= 2);
    await otlp.waitForMetrics((m) => m.some((x) => x.name === "gen_ai.client.operation.duration"));
    for (const call of spans.filter((s) => s.name === "chat echo")) {
      assert.match(
        String(call.attributes["gen_ai.response.model"]),
        /^echo:/,
        "the upstream's model, masked",
      );
    }
    assert.ok(!exported(otlp.requests).includes(UPSTREAM_SECRET), "the key in an exported span or metric");
  } finally {
    await gw.stop();
    await otlp.stop();
    await upstream.shutdown();
  }
});

Deno.test("telemetry metrics: an upstream naming a new model in every answer grows no metric past its bound", async () => {
  let n = 0;
  const upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.text();
    return Response.json({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: `model-${n++}`,
      choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    });
  });
  const otlp = startOtlpReceiver();
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
providers:
  shifting: { type: openai, base_url: "http://127.0.0.1:${upstream.addr.port}/v1", api_key: sk-shifting-0123456789 }
models:
  echo: { type: chat, targets: [{ provider: shifting, model: m }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    for (let i = 0; i < 80; i++) await ask(gw, `question ${i}`);
    const models = (metrics: { name: string; points: { attributes: Record<string, unknown> }[] }[]) =>
      new Set(
        metrics.filter((m) => m.name === "gen_ai.client.operation.duration")
          .flatMap((m) => m.points.map((p) => String(p.attributes["gen_ai.response.model"]))),
      );
    const metrics = await otlp.waitForMetrics((m) => models(m).has("_OTHER"));
    const seen = models(metrics);
    assert.ok(seen.size <= 51, `${seen.size} response models`);
    assert.ok(seen.has("model-0"), "the first ones are kept by name");
  } finally {
    await gw.stop();
    await otlp.stop();
    await upstream.shutdown();
  }
});
