/**
 * An upstream stopped by its length limit, a content filter or a Gemini safety stop, seen through
 * `POST /v1/responses` with the official `openai` SDK, whole and streamed: `status: "incomplete"` with
 * `incomplete_details.reason` `max_output_tokens` or `content_filter`, the stream ending in
 * `response.incomplete` (never `response.completed`), and the text that did arrive kept. Through an
 * OpenAI-compatible chat upstream (`finish_reason` `length` / `content_filter`) and Gemini (`finishReason`
 * `MAX_TOKENS` / `SAFETY`); every Response and stream is validated against OpenAI's published spec. And an
 * upstream that fails before the first byte is not an ending at all: the alias's next target answers.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { FAKE_GEMINI_KEY, GEMINI_ANSWER, startFakeGemini } from "../helpers/fake_gemini.ts";
import { FAKE_ANSWER, FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, waitForLog } from "../helpers/gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { ResponsesWire } from "../helpers/responses_conformance.ts";

const schemas = await loadOpenApiSchemas();

const CASES = [
  {
    via: "an OpenAI-compatible upstream",
    model: "gpt-length",
    reason: "max_output_tokens",
    text: FAKE_ANSWER,
  },
  { via: "an OpenAI-compatible upstream", model: "gpt-filter", reason: "content_filter", text: FAKE_ANSWER },
  { via: "gemini", model: "gem-length", reason: "max_output_tokens", text: GEMINI_ANSWER },
  { via: "gemini", model: "gem-safety", reason: "content_filter", text: GEMINI_ANSWER },
] as const;

Deno.test("responses stops: length, content filter and safety stops are incomplete with their reason, whole and streamed", async (t) => {
  const openai = startFakeOpenAI();
  const gemini = startFakeGemini();
  const gw = await startGateway(`
providers:
  oai: { type: openai, base_url: "${openai.baseURL}", api_key: "${FAKE_KEY}" }
  gem: { type: gemini, base_url: "${gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
${
    CASES.map((c) =>
      `  chat-${c.model}: { type: chat, targets: [ { provider: ${
        c.via === "gemini" ? "gem" : "oai"
      }, model: ${c.model} } ] }`
    ).join("\n")
  }
${TEST_TOKENS_YAML}`);
  try {
    const wire = new ResponsesWire(schemas);
    const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0, fetch: wire.fetch });
    for (const c of CASES) {
      await t.step(`${c.via}: ${c.model} → ${c.reason}`, async () => {
        const whole = await client.responses.create({ model: `chat-${c.model}`, input: "Hi" });
        assert.equal(whole.status, "incomplete");
        assert.deepEqual(whole.incomplete_details, { reason: c.reason });
        assert.equal(whole.output_text, c.text, "the text that arrived is kept");

        const types: string[] = [];
        let last: OpenAI.Responses.Response | undefined;
        const stream = await client.responses.create({ model: `chat-${c.model}`, input: "Hi", stream: true });
        for await (const event of stream) {
          types.push(event.type);
          if (event.type === "response.incomplete") last = event.response;
        }
        assert.equal(types.at(-1), "response.incomplete");
        assert.ok(!types.includes("response.completed") && !types.includes("response.failed"));
        assert.ok(last);
        assert.deepEqual(last.incomplete_details, { reason: c.reason });
        const message = last.output.find((i) => i.type === "message");
        assert.ok(message && message.type === "message");
        assert.equal(message.content.map((p) => p.type === "output_text" ? p.text : "").join(""), c.text);
      });
    }
    assert.deepEqual(await wire.check(), { responses: CASES.length, streams: CASES.length });
  } finally {
    await gw.stop();
    await openai.stop();
    await gemini.stop();
  }
});

Deno.test("responses stops: a translated target failing before the first byte falls back to the next, whole and streamed", async () => {
  const openai = startFakeOpenAI();
  const gw = await startGateway(`
providers:
  oai: { type: openai, base_url: "${openai.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-fallback:
    type: chat
    targets: [ { provider: oai, model: gpt-500, retries: 0 }, { provider: oai, model: gpt-ok } ]
${TEST_TOKENS_YAML}`);
  try {
    const wire = new ResponsesWire(schemas);
    const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0, fetch: wire.fetch });
    const whole = await client.responses.create({ model: "chat-fallback", input: "Hi" });
    assert.equal(whole.status, "completed");
    assert.equal(whole.output_text, FAKE_ANSWER);
    const streamed = await client.responses.stream({ model: "chat-fallback", input: "Hi" }).finalResponse();
    assert.equal(streamed.output_text, FAKE_ANSWER);
    assert.deepEqual(openai.requests.map((r) => r.body.model), ["gpt-500", "gpt-ok", "gpt-500", "gpt-ok"]);
    for (const stream of [false, true]) {
      const line = await waitForLog(
        gw,
        (l) => l.msg === "request" && l.endpoint === "responses" && l.stream === stream,
      );
      assert.equal(line.attempts, 2, `two attempts (stream ${stream})`);
      assert.equal(line.status, 200);
    }
    assert.deepEqual(await wire.check(), { responses: 1, streams: 1 });
  } finally {
    await gw.stop();
    await openai.stop();
  }
});
