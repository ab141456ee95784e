/**
 * An upstream attempt's HTTP client span carries what the HTTP client conventions ask of it: the status the
 * upstream answered (`http.response.status_code`, the first thing an operator looks for in a failed attempt),
 * the URL called (`url.full`) and its host and port (`server.address`, `server.port`). Over real sockets: a
 * first target answering 503 and a second answering 200, exported to an OTLP receiver.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN } from "../helpers/gateway.ts";
import { startOtlpReceiver } from "../helpers/otlp_receiver.ts";

Deno.test("telemetry: each attempt's span has the status answered, the URL called, its host and port", async () => {
  const otlp = startOtlpReceiver();
  const up = startFakeOpenAI();
  // Busy: every call answered 503 in OpenAI's error shape.
  const busy = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.body?.cancel();
    return Response.json({ error: { message: "overloaded", type: "server_error" } }, { status: 503 });
  });
  const busyBase = `http://127.0.0.1:${busy.addr.port}/v1`;
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
providers:
  busy: { type: openai, base_url: "${busyBase}", api_key: sk-telemetry-busy-key-0001 }
  up: { type: openai, base_url: "${up.baseURL}", api_key: "${FAKE_KEY}" }
models:
  gpt: { type: chat, targets: [{ provider: busy, model: m, retries: 0 }, { provider: up, model: gpt-4o-mini }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: TEST_TOKEN, maxRetries: 0 });
    const answer = await client.chat.completions.create({
      model: "gpt",
      messages: [{ role: "user", content: "Hi" }],
    });
    assert.ok(answer.choices[0].message.content);
    const isServer = (s: { name: string }) => s.name === "POST /v1/chat/completions";
    const server = (await otlp.waitForSpans((s) => s.some(isServer))).find(isServer)!;
    const attemptsOf = (spans: ReturnType<typeof otlp.spans>) =>
      spans.filter((s) => s.traceId === server.traceId && s.name === "POST" && s.kind === "CLIENT");
    const attempts = attemptsOf(await otlp.waitForSpans((s) => attemptsOf(s).length >= 2))
      .sort((a, b) => Number(a.startTimeUnixNano - b.startTimeUnixNano));
    assert.equal(attempts.length, 2);

    const [failed, answered] = attempts;
    assert.equal(failed.attributes["http.response.status_code"], 503);
    assert.equal(failed.attributes["url.full"], `${busyBase}/chat/completions`);
    assert.equal(failed.attributes["server.address"], "127.0.0.1");
    assert.equal(failed.attributes["server.port"], busy.addr.port);
    assert.equal(failed.status.code, "ERROR");

    const upPort = Number(new URL(up.baseURL).port);
    assert.equal(answered.attributes["http.response.status_code"], 200);
    assert.equal(answered.attributes["url.full"], `${up.baseURL}/chat/completions`);
    assert.equal(answered.attributes["server.port"], upPort);
    assert.notEqual(answered.status.code, "ERROR");
    for (const span of attempts) {
      const text = JSON.stringify(span.attributes);
      assert.ok(
        !text.includes(FAKE_KEY) && !text.includes("sk-telemetry-busy-key"),
        "no key in an attempt span",
      );
    }
  } finally {
    await gw.stop();
    await busy.shutdown();
    await up.stop();
    await otlp.stop();
  }
});
