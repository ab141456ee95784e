/**
 * A token count (Messages `count_tokens`, Responses `input_tokens`, Gemini `:countTokens`) asks no model to
 * answer: it is no GenAI operation, so no `gen_ai.client.operation.duration` point counts it and its trace has
 * no GenAI span, whether the gateway counted or an upstream that counts did (then its attempt is traced); a
 * target that counts only another API's requests (a native Responses upstream asked for a Messages or Gemini
 * count) is asked nothing, and no attempt span says otherwise. A
 * moderation asks a model, and is its own operation (`moderations`, its route's), never a chat: its span, its
 * OTLP metrics and the Prometheus histograms say so alike.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_MODERATION_KEY, startFakeModeration } from "../helpers/fake_guardrails.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { startOtlpReceiver } from "../helpers/otlp_receiver.ts";

const HEADERS = {
  authorization: `Bearer ${TEST_TOKEN}`,
  "x-api-key": TEST_TOKEN,
  "x-goog-api-key": TEST_TOKEN,
  "anthropic-version": "2023-06-01",
  "content-type": "application/json",
};

/** POSTs `body` to `path` under a trace of its own; the trace id. */
async function post(gw: TestGateway, path: string, body: unknown): Promise<string> {
  const traceId = crypto.randomUUID().replaceAll("-", "");
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { ...HEADERS, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, `${path}: ${await res.clone().text()}`);
  await res.text();
  return traceId;
}

Deno.test("telemetry metrics: a token count is no GenAI operation, counted or asked of an upstream", async () => {
  const anthropic = startFakeAnthropic();
  const otlp = startOtlpReceiver();
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
providers:
  local: { type: builtin }
  claude: { type: anthropic, base_url: "${anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
models:
  echo: { type: chat, targets: [{ provider: local, model: echo }] }
  sonnet: { type: chat, targets: [{ provider: claude, model: claude-sonnet-4-5 }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    const messages = [{ role: "user", content: "Hi" }];
    const counts = [
      await post(gw, "/v1/messages/count_tokens", { model: "echo", messages }),
      await post(gw, "/v1/responses/input_tokens", { model: "echo", input: "Hi" }),
      await post(gw, "/v1beta/models/echo:countTokens", {
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      }),
      await post(gw, "/v1/messages/count_tokens", { model: "sonnet", messages }),
    ];
    assert.ok(anthropic.requests.some((r) => r.path === "/v1/messages/count_tokens"), "the upstream counted");
    const chat = await post(gw, "/v1/chat/completions", { model: "echo", messages });
    // Metrics are recorded as each request ends: the export that carries the chat carries the counts too.
    const isChat = (attributes: Record<string, unknown>) =>
      attributes["gen_ai.provider.name"] === "gateway.builtin";
    const metrics = await otlp.waitForMetrics(
      (m) =>
        m.some((x) =>
          x.name === "gen_ai.client.operation.duration" && x.points.some((p) => isChat(p.attributes))
        ),
      15_000,
    );
    const duration = metrics.filter((m) => m.name === "gen_ai.client.operation.duration").at(-1)!;
    assert.deepEqual(
      duration.points.map((
        p,
      ) => [p.attributes["gen_ai.operation.name"], p.attributes["gen_ai.request.model"], p.count]),
      [["chat", "echo", 1]],
      "the chat completion, and only it",
    );
    assert.ok(isChat(duration.points[0].attributes));
    const spans = await otlp.waitForSpans(
      (s) => [...counts, chat].every((id) => s.some((x) => x.traceId === id && x.kind === "SERVER")),
      10_000,
    );
    for (const traceId of counts) {
      const mine = spans.filter((s) => s.traceId === traceId);
      const calls = mine.filter((s) => s.attributes["gen_ai.operation.name"] !== undefined);
      assert.deepEqual(calls.map((s) => s.name), [], `no GenAI span in ${mine.map((s) => s.name)}`);
    }
    const asked = spans.filter((s) => s.traceId === counts[3]);
    const attempt = asked.find((s) => s.name === "POST" && s.kind === "CLIENT");
    assert.ok(attempt, "the upstream's count is traced as an attempt");
    assert.equal(attempt.parentSpanId, asked.find((s) => s.name === "gateway")?.spanId);
  } finally {
    await gw.stop();
    await otlp.stop();
    await anthropic.stop();
  }
});

Deno.test("telemetry: a moderation is traced and measured as a `moderations` operation, not as chat", async () => {
  const moderation = startFakeModeration();
  const otlp = startOtlpReceiver();
  const gw = await startGateway(`
server: { public_metrics: true }
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
providers:
  moderator: { type: openai, base_url: "${moderation.url}/v1", api_key: "${FAKE_MODERATION_KEY}" }
models:
  mod: { type: moderation, targets: [{ provider: moderator, model: omni-moderation-latest }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    const traceId = await post(gw, "/v1/moderations", { model: "mod", input: ["one text", "another"] });
    const spans = await otlp.waitForSpans(
      (s) => s.some((x) => x.traceId === traceId && x.kind === "SERVER"),
    );
    const calls = spans.filter((s) =>
      s.traceId === traceId && s.attributes["gen_ai.operation.name"] !== undefined
    );
    assert.deepEqual(
      calls.map((
        s,
      ) => [s.name, s.kind, s.attributes["gen_ai.operation.name"], s.attributes["gen_ai.request.model"]]),
      [["moderations mod", "CLIENT", "moderations", "mod"]],
    );
    const metrics = await otlp.waitForMetrics(
      (m) => m.some((x) => x.name === "gen_ai.client.operation.duration" && x.points.length > 0),
    );
    const duration = metrics.filter((m) => m.name === "gen_ai.client.operation.duration").at(-1)!;
    assert.deepEqual(
      duration.points.map((
        p,
      ) => [p.attributes["gen_ai.operation.name"], p.attributes["gen_ai.request.model"]]),
      [["moderations", "mod"]],
    );
    const prometheus = await (await fetch(`${gw.url}/metrics`)).text();
    const histogram = prometheus.split("\n").filter((l) =>
      l.startsWith("gen_ai_client_operation_duration_seconds_count{")
    );
    assert.equal(histogram.length, 1, histogram.join("\n"));
    assert.match(histogram[0], /gen_ai_operation_name="moderations"/);
    assert.match(histogram[0], / 1$/);
  } finally {
    await gw.stop();
    await otlp.stop();
    await moderation.stop();
  }
});

Deno.test("telemetry: a Messages or Gemini count on a native Responses target leaves no attempt span", async () => {
  const otlp = startOtlpReceiver();
  // Never called: a native Responses upstream counts only a Responses request, so the gateway counts these.
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
providers:
  native: { type: openai, base_url: "http://127.0.0.1:1/v1", api_key: sk-native-never-called-0001, native_responses: true }
models:
  gpt: { type: chat, targets: [{ provider: native, model: gpt-5 }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    const counts = [
      await post(gw, "/v1/messages/count_tokens", {
        model: "gpt",
        messages: [{ role: "user", content: "Hi" }],
      }),
      await post(gw, "/v1beta/models/gpt:countTokens", {
        contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      }),
    ];
    const spans = await otlp.waitForSpans(
      (s) => counts.every((id) => s.some((x) => x.traceId === id && x.kind === "SERVER")),
      10_000,
    );
    for (const traceId of counts) {
      const mine = spans.filter((s) => s.traceId === traceId);
      // The server's span and the gateway's, neither failed: no attempt, no GenAI span.
      const shown = mine.map((x) => [x.kind, x.status.code]).sort();
      assert.deepEqual(
        shown,
        [["INTERNAL", "UNSET"], ["SERVER", "UNSET"]],
        mine.map((x) => x.name).join(", "),
      );
    }
  } finally {
    await gw.stop();
    await otlp.stop();
  }
});
