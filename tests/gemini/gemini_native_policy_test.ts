/**
 * Content rules on a Gemini request passed through to a `gemini` provider: the chat form reads a plain-text
 * `inlineData` part as a plain-text file, so its matches are redacted in the passed-through body too (decoded,
 * redacted, encoded back); a model turn's thought, which only a Gemini target reads, is judged by deny rules.
 */
import assert from "node:assert/strict";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { decodeUtf8Base64, encodeUtf8Base64 } from "../../lib/encoding/utf8_base64.ts";

async function withGemini(
  fn: (post: (body: unknown) => Promise<Response>, sent: () => string) => Promise<void>,
) {
  const fake = startFakeGemini();
  const gw = await startGateway(`
providers:
  gem: { type: gemini, base_url: "${fake.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  chat-gem:
    type: chat
    targets: [{ provider: gem, model: gem-ok }]
    content_rules:
      - { name: forbidden, pattern: FORBIDDENWORD, action: deny }
      - { name: ssn, pattern: '\\b\\d{3}-\\d{2}-\\d{4}\\b', action: redact }
${TEST_TOKENS_YAML}`);
  const post = (body: unknown) =>
    fetch(`${gw.url}/v1beta/models/chat-gem:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  // What the upstream got last, its plain-text parts decoded so a match inside one shows.
  const sent = () =>
    JSON.stringify(
      fake.requests.at(-1)?.body ?? {},
      (key, value) => key === "data" && typeof value === "string" ? decodeUtf8Base64(value) : value,
    );
  try {
    await fn(post, sent);
  } finally {
    await gw.stop();
    await fake.stop();
  }
}

const textPart = (text: string) => ({ inlineData: { mimeType: "text/plain", data: encodeUtf8Base64(text) } });

Deno.test("gemini native policy: plain-text inlineData is redacted as the chat form is", async () => {
  await withGemini(async (post, sent) => {
    const res = await post({
      systemInstruction: { parts: [{ text: "ssn 000-11-2222" }] },
      contents: [{ role: "user", parts: [textPart("patient ssn 111-22-3333 é"), { text: "444-55-6666" }] }],
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    assert.deepEqual(sent().match(/\d{3}-\d{2}-\d{4}/g) ?? [], [], sent());
    assert.match(sent(), /patient ssn \[REDACTED\] é/, "decoded, redacted and encoded back");
  });
});

Deno.test("gemini native policy: deny rules judge a model turn's thought, which only Gemini reads", async () => {
  await withGemini(async (post, sent) => {
    const res = await post({
      contents: [
        { role: "user", parts: [{ text: "hi" }] },
        { role: "model", parts: [{ text: "FORBIDDENWORD", thought: true }, { text: "hello" }] },
        { role: "user", parts: [{ text: "again" }] },
      ],
    });
    const body = await res.json();
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.ok(!sent().includes("FORBIDDENWORD"), "the forbidden text reached the upstream");
  });
});
