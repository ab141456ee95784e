/**
 * What an upstream writes into its answers reaches the spans bounded: an id or a model of any length is cut to
 * its first 256 characters, finish reasons to 16 of 64 characters each, and no exported attribute value is
 * longer than `max_content_size` and a margin, whatever the upstream wrote (an error code included).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { type AttributeValue, startOtlpReceiver } from "../helpers/otlp_receiver.ts";

const BIG = 100_000;

/** An upstream whose ids, models, finish reasons (of 40 choices) and error codes are BIG characters long. */
function hugeWords() {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.json();
    if (body.model === "failing") {
      const error = { message: "no", type: "invalid_request_error", code: "E".repeat(BIG) };
      return Response.json({ error }, { status: 400 });
    }
    const id = `chatcmpl-${"i".repeat(BIG)}`;
    const model = `model-${"m".repeat(BIG)}`;
    const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
    if (!body.stream) {
      const choices = Array.from({ length: 40 }, (_, index) => ({
        index,
        message: { role: "assistant", content: "hi" },
        finish_reason: `reason-${"r".repeat(BIG / 40)}`,
      }));
      return Response.json({ id, object: "chat.completion", created: 1, model, choices, usage });
    }
    const chunk = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;
    const text = chunk({
      id,
      object: "chat.completion.chunk",
      created: 1,
      model,
      choices: [{ index: 0, delta: { role: "assistant", content: "hi" }, finish_reason: null }],
    }) + chunk({
      id: "x",
      object: "chat.completion.chunk",
      created: 1,
      model,
      choices: [{ index: 0, delta: {}, finish_reason: `reason-${"r".repeat(BIG)}` }],
      usage,
    }) + "data: [DONE]\n\n";
    return new Response(text, { headers: { "content-type": "text/event-stream" } });
  });
}

async function ask(gw: TestGateway, model: string, stream: boolean): Promise<number> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.text();
  return res.status;
}

function longest(value: AttributeValue): number {
  if (typeof value === "string") return value.length;
  if (Array.isArray(value)) return Math.max(0, ...value.map(longest));
  return 0;
}

Deno.test("telemetry bounds: an upstream's huge id, model, finish reasons and error code reach the spans cut short", async () => {
  const upstream = hugeWords();
  const otlp = startOtlpReceiver();
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
  max_content_size: 512
providers:
  up: { type: openai, base_url: "http://127.0.0.1:${upstream.addr.port}/v1", api_key: sk-bounds-key-0123456789abcdef }
models:
  huge: { type: chat, targets: [{ provider: up, model: huge }] }
  failing: { type: chat, targets: [{ provider: up, model: failing }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    assert.equal(await ask(gw, "huge", false), 200);
    assert.equal(await ask(gw, "huge", true), 200);
    assert.equal(await ask(gw, "failing", false), 400);
    const spans = await otlp.waitForSpans(
      (s) => s.filter((x) => x.name === "chat huge").length === 2 && s.some((x) => x.name === "chat failing"),
    );
    for (const call of spans.filter((s) => s.name === "chat huge")) {
      const id = String(call.attributes["gen_ai.response.id"]);
      assert.equal(id, `chatcmpl-${"i".repeat(256 - 9)}`, "the id's first 256 characters");
      assert.equal(String(call.attributes["gen_ai.response.model"]), `model-${"m".repeat(256 - 6)}`);
      const reasons = call.attributes["gen_ai.response.finish_reasons"] as string[];
      assert.ok(reasons.length >= 1 && reasons.length <= 16, `${reasons.length} finish reasons`);
      for (const reason of reasons) assert.equal(reason, `reason-${"r".repeat(64 - 7)}`);
    }
    for (const span of spans) {
      for (const [name, value] of Object.entries(span.attributes)) {
        assert.ok(longest(value) <= 512 + 1024, `${span.name} ${name}: ${longest(value)} characters`);
      }
    }
  } finally {
    await gw.stop();
    await otlp.stop();
    await upstream.shutdown();
  }
});
