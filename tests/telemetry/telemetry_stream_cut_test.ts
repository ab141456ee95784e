/**
 * A stream that ends badly ends its GenAI span with status ERROR and an `error.type` that says who ended it
 * (issue 25): the upstream tearing its stream down mid-way (the server span too), or the client going away
 * before the answer ended (the server span stays unset: the caller cancelled, the server did not fail).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { type DecodedSpan, startOtlpReceiver } from "../helpers/otlp_receiver.ts";

function stream(gw: TestGateway, model: string): Promise<Response> {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "Hi" }], stream: true }),
  });
}

Deno.test("telemetry: a stream cut by the upstream or left by the client ends its GenAI span in ERROR, saying which", async () => {
  const otlp = startOtlpReceiver();
  const upstream = startFakeOpenAI();
  const gw = await startGateway(`
telemetry: { otlp: { endpoint: "${otlp.url}", interval: 50ms } }
providers:
  up: { type: openai, base_url: "${upstream.baseURL}", api_key: "${FAKE_KEY}" }
models:
  cut: { type: chat, targets: [{ provider: up, model: gpt-cut, retries: 0 }] }
  hang: { type: chat, targets: [{ provider: up, model: gpt-hang }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    // The cut may reach the gateway before or after the first chunk (it depends on how the runtime's fetch
    // delivers the bytes): a 502, or an error event in a 200 stream. Either way the spans must say ERROR.
    const cut = await stream(gw, "cut");
    const cutText = await cut.text();
    assert.ok(cut.status >= 500 || !cutText.includes("[DONE]"));

    const hang = await stream(gw, "hang");
    const reader = hang.body!.getReader();
    await reader.read();
    await reader.cancel();
    await upstream.aborted.promise;

    const done = (s: DecodedSpan[], alias: string) => s.some((x) => x.name === `chat ${alias}`);
    const spans = await otlp.waitForSpans((s) => done(s, "cut") && done(s, "hang"));
    const call = (alias: string) => spans.find((s) => s.name === `chat ${alias}`)!;
    const server = (alias: string) =>
      spans.find((s) => s.kind === "SERVER" && s.traceId === call(alias).traceId)!;

    assert.equal(call("cut").status.code, "ERROR");
    const upstreamError = String(call("cut").attributes["error.type"]);
    assert.ok(upstreamError !== "" && upstreamError !== "client_closed_request", upstreamError);
    assert.equal(server("cut").status.code, "ERROR");

    // The client going away cut the model's answer short (the GenAI span says so), but it is the caller
    // cancelling, not the server failing: the server span stays unset, as the HTTP conventions have it.
    assert.equal(call("hang").status.code, "ERROR");
    assert.equal(call("hang").attributes["error.type"], "client_closed_request");
    assert.equal(server("hang").status.code, "UNSET");
    assert.equal(server("hang").attributes["error.type"], undefined);
  } finally {
    await gw.stop();
    await upstream.stop();
    await otlp.stop();
  }
});
