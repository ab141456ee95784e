/**
 * With content capture on, a whole answer's text is captured as its client gets it, after output guardrails:
 * an answer they withheld is not exported at all, and one they masked is exported masked, as a stream's is.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { type DecodedSpan, startOtlpReceiver } from "../helpers/otlp_receiver.ts";

const KEY = "sk-proj-Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG";
const EMAIL = "bob.withheld@example.com";

/** Asks `model` (the echo) to say `content`, under a trace of its own: the status, the text and the trace. */
async function ask(gw: TestGateway, model: string, content: string, stream = false) {
  const traceId = crypto.randomUUID().replaceAll("-", "");
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
    },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content }] }),
  });
  return { status: res.status, text: await res.text(), traceId };
}

function outputOf(spans: DecodedSpan[], traceId: string, alias: string): string | undefined {
  const call = spans.find((s) => s.traceId === traceId && s.name === `chat ${alias}`);
  assert.ok(call, `the GenAI span of ${traceId}`);
  const output = call.attributes["gen_ai.output.messages"];
  return output === undefined ? undefined : JSON.parse(String(output))[0].parts[0].content;
}

Deno.test("telemetry capture: a whole answer is captured after output guardrails: withheld, none; masked, masked", async () => {
  const otlp = startOtlpReceiver();
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
  capture_content: true
guardrails:
  no-keys: { type: pii, entities: [OPENAI_API_KEY], phase: output, action: deny }
  no-emails: { type: pii, entities: [EMAIL], phase: output, action: mask }
providers:
  local: { type: builtin }
models:
  keyless: { type: chat, targets: [{ provider: local, model: echo }], guardrails: [no-keys] }
  mailless: { type: chat, targets: [{ provider: local, model: echo }], guardrails: [no-emails] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    const withheld = await ask(gw, "keyless", `my key is ${KEY}`);
    assert.equal(withheld.status, 400);
    assert.ok(!withheld.text.includes(KEY));
    const allowed = await ask(gw, "keyless", "nothing secret here");
    assert.equal(allowed.status, 200);
    const masked = await ask(gw, "mailless", `write to ${EMAIL}`);
    assert.equal(masked.status, 200);
    const shown = JSON.parse(masked.text).choices[0].message.content;
    assert.ok(!shown.includes(EMAIL), "the client's answer is masked");
    const traces = [withheld, allowed, masked].map((r) => r.traceId);
    const spans = await otlp.waitForSpans(
      (s) => traces.every((id) => s.some((x) => x.traceId === id && x.kind === "SERVER")),
      10_000,
    );
    assert.equal(
      outputOf(spans, withheld.traceId, "keyless"),
      undefined,
      "a withheld answer is not exported",
    );
    assert.equal(
      outputOf(spans, allowed.traceId, "keyless"),
      JSON.parse(allowed.text).choices[0].message.content,
    );
    assert.equal(outputOf(spans, masked.traceId, "mailless"), shown, "captured as the client got it");
  } finally {
    await gw.stop();
    await otlp.stop();
  }
});

Deno.test("telemetry: an answer an output guardrail withheld, JSON (400) or stream (error event after 200), leaves the server, gateway and attempt spans unset", async () => {
  const otlp = startOtlpReceiver();
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
guardrails:
  no-keys: { type: pii, entities: [OPENAI_API_KEY], phase: output, action: deny }
providers:
  local: { type: builtin }
models:
  keyless: { type: chat, targets: [{ provider: local, model: echo }], guardrails: [no-keys] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    const json = await ask(gw, "keyless", `my key is ${KEY}`);
    assert.equal(json.status, 400);
    const stream = await ask(gw, "keyless", `my key is ${KEY}`, true);
    assert.equal(stream.status, 200);
    assert.match(stream.text, /"code":"content_policy_violation"/, "the stream ended in the refusal");
    const spans = await otlp.waitForSpans(
      (s) => [json, stream].every((r) => s.some((x) => x.traceId === r.traceId && x.kind === "SERVER")),
    );
    for (const [label, r] of [["json", json], ["stream", stream]] as const) {
      const of = (name: string) => spans.find((s) => s.traceId === r.traceId && s.name === name);
      const seen = (name: string) => {
        const span = of(name);
        assert.ok(span, `${label}: span ${name}`);
        return { status: span.status.code, errorType: span.attributes["error.type"] };
      };
      const unset = { status: "UNSET", errorType: undefined };
      assert.deepEqual(seen("POST /v1/chat/completions"), unset, `${label}: server span`);
      assert.deepEqual(seen("gateway"), unset, `${label}: gateway span`);
      assert.deepEqual(seen("POST"), unset, `${label}: the attempt answered normally`);
      // The GenAI call's answer was withheld: that span says so, the same for both.
      assert.deepEqual(
        seen("chat keyless"),
        { status: "ERROR", errorType: "content_policy_violation" },
        `${label}: GenAI span`,
      );
    }
  } finally {
    await gw.stop();
    await otlp.stop();
  }
});
