/**
 * A span is scrubbed with the secrets of the config its request started with: a reload that rotates the
 * provider key while a request is at the upstream must not let the old key through into the exported spans
 * when the answer quotes it (content capture on). Errors, log fields and usage records already use the
 * request's own config; spans used the live one, which no longer knew the old key.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway } from "../helpers/gateway.ts";
import { startOtlpReceiver } from "../helpers/otlp_receiver.ts";
import { jsonStep, type RawRequest, type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";

const TOKEN = "gw-span-reload-0123456789abcdef";
const ADMIN = "gw-span-reload-admin-9f8e7d6c5b4a";
const OLD_KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";
const NEW_KEY = "sk-proj-Rt5Yu7Io9Pa1Sd3Fg5Hj7Kl9Zx2Cv4Bn";
/** Any 8-character run of the old key is a leak. */
const OLD_PIECE = OLD_KEY.slice(8, 20);

const config = (otlp: string, upstream: string, key: string) => `
telemetry: { otlp: { endpoint: "${otlp}", interval: 50ms }, capture_content: true }
providers:
  oa: { type: openai, base_url: "${upstream}/v1", api_key: ${key} }
models:
  oa: { type: chat, targets: [ { provider: oa, model: m, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, token: ${ADMIN} }
`;

Deno.test("span reload: what an answer quotes of the key its request was sent with is masked in the spans after a reload rotated it", async () => {
  const up = startRawUpstream();
  const otlp = startOtlpReceiver();
  const gate = Promise.withResolvers<void>();
  /** The upstream quotes the key it got in the answer's text, and holds its first answer until the gate opens. */
  up.stepFor = (req: RawRequest): RawStep => {
    const key = (req.headers.get("authorization") ?? "").replace("Bearer ", "");
    const step = jsonStep({
      id: "c1",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [{
        index: 0,
        message: { role: "assistant", content: `the key is ${key}` },
        finish_reason: "stop",
      }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    });
    return up.requests.length === 1 ? { ...step, hold: { at: 0, open: gate.promise } } : step;
  };
  const gw = await startGateway(config(otlp.url, up.url, OLD_KEY));
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  const ask = () =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: "oa", messages: [{ role: "user", content: "hi" }] }),
    });
  try {
    const pending = ask();
    for (let i = 0; up.requests.length === 0; i++) {
      assert.ok(i < 500, "the request never reached the upstream");
      await new Promise((r) => setTimeout(r, 10));
    }
    await Deno.writeTextFile(gw.configFile, config(otlp.url, up.url, NEW_KEY));
    const reload = await fetch(`${gw.url}/admin/reload`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(reload.status, 200, await reload.text());
    gate.resolve();
    const held = await pending;
    assert.equal(held.status, 200);
    // The model's text is the answer itself (SECURITY.md, "Not promised"): the client gets it as written.
    assert.ok((await held.text()).includes(OLD_PIECE));
    // A request under the new config, whose answer quotes the new key: masked as before.
    const after = await ask();
    assert.equal(after.status, 200);
    await after.text();
    const outputs = (await otlp.waitForSpans((spans) =>
      spans.filter((s) =>
        "gen_ai.output.messages" in s.attributes
      ).length >= 2
    )).filter((s) => "gen_ai.output.messages" in s.attributes).map((s) =>
      String(s.attributes["gen_ai.output.messages"])
    );
    assert.equal(outputs.length, 2);
    for (const output of outputs) assert.ok(output.includes("the key is ***"), output);
    const exported = otlp.requests.map((r) => new TextDecoder().decode(r.bytes)).join("\n");
    assert.ok(!exported.includes(OLD_PIECE), "an exported span holds the key the request was sent with");
    assert.ok(!exported.includes(NEW_KEY.slice(8, 20)), "an exported span holds the live key");
  } finally {
    gate.resolve();
    await gw.stop();
    await up.stop();
    await otlp.stop();
  }
});
