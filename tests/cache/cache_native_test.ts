/**
 * The response cache on natively passed-through requests, over real sockets with the vendors' SDKs: a
 * Messages request to a Claude target, a Responses request to a `native_responses` target and a Gemini request
 * to a Gemini target are keyed on their own bodies. JSON and streamed, each misses and then hits with the
 * upstream called once per shape; a hit has a fresh answer id (`msg_…`, `resp_…`, `responseId`); a native
 * entry never answers another client API; a native stream cut mid-way is not cached.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { NATIVE_KEY, startFakeNativeResponses } from "../helpers/fake_openai_responses.ts";
import { startFakes } from "../helpers/fakes.ts";
import { startGateway, TEST_TOKEN } from "../helpers/gateway.ts";

Deno.test("cache native: Messages, Responses and Gemini passthroughs miss then hit per shape, fresh ids", async () => {
  const fakes = startFakes({
    claude: startFakeAnthropic,
    native: startFakeNativeResponses,
    gemini: startFakeGemini,
  });
  const gw = await startGateway(`
providers:
  claude: { type: anthropic, base_url: "${fakes.claude.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  native: { type: openai, base_url: "${fakes.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  gem: { type: gemini, base_url: "${fakes.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  claude: { type: chat, targets: [{ provider: claude, model: claude-ok }], cache: {} }
  claude-cut: { type: chat, targets: [{ provider: claude, model: claude-midstream-error }], cache: {} }
  resp: { type: chat, targets: [{ provider: native, model: resp-ok }], cache: {} }
  gem: { type: chat, targets: [{ provider: gem, model: gem-ok }], cache: {} }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    // Messages → Anthropic, JSON then streamed.
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: TEST_TOKEN, maxRetries: 0 });
    const ask = { model: "claude", max_tokens: 100, messages: [{ role: "user" as const, content: "Hi" }] };
    const miss = await anthropic.messages.create(ask).withResponse();
    const hit = await anthropic.messages.create(ask).withResponse();
    assert.equal(miss.response.headers.get("x-cache"), "MISS");
    assert.equal(hit.response.headers.get("x-cache"), "HIT");
    assert.deepEqual(hit.data.content, miss.data.content);
    assert.notEqual(hit.data.id, miss.data.id, "a fresh message id");
    assert.match(hit.data.id, /^msg_/);
    assert.equal(fakes.claude.requests.length, 1);
    const streamed: string[] = [];
    for (const expected of ["MISS", "HIT"]) {
      const stream = anthropic.messages.stream(ask);
      const message = await stream.finalMessage();
      const headers = (await stream.withResponse()).response.headers;
      assert.equal(headers.get("x-cache"), expected, `stream ${expected}`);
      assert.deepEqual(message.content, miss.data.content);
      streamed.push(message.id);
    }
    assert.notEqual(streamed[0], streamed[1]);
    assert.equal(fakes.claude.requests.length, 2, "one call per shape");

    // A beta the client turns on goes upstream and may change the answer: its own entry.
    const beta = await anthropic.messages.create(ask, {
      headers: { "anthropic-beta": "context-1m-2025-08-07" },
    })
      .withResponse();
    assert.equal(beta.response.headers.get("x-cache"), "MISS");
    assert.equal(fakes.claude.requests.length, 3);
    assert.equal(fakes.claude.requests.at(-1)!.headers.get("anthropic-beta"), "context-1m-2025-08-07");
    const betaAgain = await anthropic.messages.create(ask, {
      headers: { "anthropic-beta": "context-1m-2025-08-07" },
    })
      .withResponse();
    assert.equal(betaAgain.response.headers.get("x-cache"), "HIT");

    // A native stream cut mid-way is never cached.
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: "POST",
        headers: {
          "x-api-key": TEST_TOKEN,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
        },
        body: JSON.stringify({ ...ask, model: "claude-cut", stream: true }),
      });
      assert.equal(res.headers.get("x-cache"), "MISS");
      // Before or after its first event, depending on how the runtime's fetch delivers the bytes: a 5xx, or an
      // error event in the stream; never a whole answer.
      const text = await res.text();
      assert.ok(res.status >= 500 || /event: error/.test(text), text.slice(0, 200));
    }
    assert.equal(fakes.claude.requests.length, 5);

    // Responses → native_responses, JSON: the gateway's own id on both, the upstream called once.
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN, maxRetries: 0 });
    const first = await openai.responses.create({ model: "resp", input: "Hi" }).withResponse();
    const second = await openai.responses.create({ model: "resp", input: "Hi" }).withResponse();
    assert.equal(first.response.headers.get("x-cache"), "MISS");
    assert.equal(second.response.headers.get("x-cache"), "HIT");
    assert.equal(second.data.output_text, first.data.output_text);
    assert.notEqual(second.data.id, first.data.id);
    assert.equal(fakes.native.requests.length, 1);
    // The hit was stored under its own id: it can be read back and continued from.
    const stored = await openai.responses.retrieve(second.data.id);
    assert.equal(stored.output_text, first.data.output_text);

    // A native entry answers only its own client API: chat completions on the same alias is another entry.
    const chat = await openai.chat.completions.create({
      model: "claude",
      messages: [{ role: "user", content: "Hi" }],
    })
      .withResponse();
    assert.equal(chat.response.headers.get("x-cache"), "MISS");

    // Gemini → Gemini, JSON.
    const google = new GoogleGenAI({
      apiKey: TEST_TOKEN,
      apiVersion: "v1beta",
      httpOptions: { baseUrl: gw.url },
    });
    const g1 = await google.models.generateContent({ model: "gem", contents: "Hi" });
    const g2 = await google.models.generateContent({ model: "gem", contents: "Hi" });
    assert.equal(g2.text, g1.text);
    assert.equal(fakes.gemini.requests.length, 1, "the second Gemini request was a hit");
    assert.equal(typeof g1.responseId, "string");
    assert.notEqual(g2.responseId, g1.responseId, "a fresh responseId");
    // Streamed: its own entry, replayed as chunks.
    const texts: string[] = [];
    for (let i = 0; i < 2; i++) {
      let text = "";
      for await (const chunk of await google.models.generateContentStream({ model: "gem", contents: "Hi" })) {
        text += chunk.text ?? "";
      }
      texts.push(text);
    }
    assert.equal(texts[1], texts[0]);
    assert.equal(texts[0], g1.text);
    assert.equal(fakes.gemini.requests.length, 2, "one call per shape");
  } finally {
    await gw.stop();
    await fakes.stop();
  }
});
