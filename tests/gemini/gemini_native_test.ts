/**
 * The Gemini API passed through to a `gemini` provider, end to end with `@google/genai` and the fake Gemini
 * upstream: the client's body reaches the upstream as sent (thinking settings, safety settings, built-in tools,
 * thought signatures), the target's model in the URL, the gateway's key instead of the client's; the answer is
 * the upstream's with the alias as `modelVersion`; one usage record with the upstream's counts; a mid-stream
 * error ends the stream with Google's error chunk; the token's max_tokens ceiling lowers `maxOutputTokens`.
 */
import assert from "node:assert/strict";
import { GoogleGenAI } from "@google/genai";
import {
  FAKE_GEMINI_KEY,
  FAKE_GEMINI_THOUGHT,
  FAKE_SIGNATURE,
  type FakeGemini,
  GEMINI_ANSWER,
  startFakeGemini,
} from "../helpers/fake_gemini.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import { hashToken } from "../../lib/auth/authenticate.ts";

const CEILING = "gw-gemini-ceiling-0123456789abcdef";

function configFor(fake: FakeGemini): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  gem: { type: gemini, base_url: "${fake.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  gemini-ok: { type: chat, targets: [ { provider: gem, model: gem-ok } ] }
  gemini-tools: { type: chat, targets: [ { provider: gem, model: gem-tools } ] }
  gemini-3: { type: chat, targets: [ { provider: gem, model: gem-3-ok } ] }
  gemini-broken: { type: chat, targets: [ { provider: gem, model: gem-midstream-error } ] }
  chat-unused: { type: chat, targets: [ { provider: gem, model: gem-ok } ] }
  gemini-emb: { type: embedding, targets: [ { provider: gem, model: text-embedding-004 } ] }
  gemini-redact:
    type: chat
    targets: [ { provider: gem, model: gem-ok } ]
    content_rules:
      - { name: ssn, pattern: "\\\\d{3}-\\\\d{2}-\\\\d{4}", action: redact, replacement: "[SSN]" }
      - { name: pin, pattern: 'pin\\W+\\d+', action: redact, replacement: 'pin "[PIN]"' }
  gemini-guard:
    type: chat
    targets: [ { provider: gem, model: gem-ok } ]
    content_rules:
      - { name: secret, pattern: "forbidden", action: deny }
      - { name: ssn, pattern: "\\\\d{3}-\\\\d{2}-\\\\d{4}", action: redact, replacement: "[SSN]" }
${TEST_TOKENS_YAML}
  - { name: capped, sha256: ${hashToken(CEILING)}, models: ["*"], max_tokens: 64 }
`;
}

Deno.test("gemini native: the client's body passes through to a gemini provider; the answer is the upstream's", async () => {
  await withFakeGateway(startFakeGemini, configFor, async (gw, fake) => {
    const ai = new GoogleGenAI({
      apiKey: TEST_TOKEN,
      apiVersion: "v1beta",
      httpOptions: { baseUrl: gw.url },
    });
    const answer = await ai.models.generateContent({
      model: "gemini-ok",
      contents: "Hi",
      config: {
        thinkingConfig: { includeThoughts: true, thinkingBudget: 512 },
        safetySettings: [{ category: "HARM_CATEGORY_HATE_SPEECH", threshold: "BLOCK_NONE" }],
      } as Record<string, unknown>,
    });
    assert.equal(answer.text, GEMINI_ANSWER);
    assert.equal(answer.modelVersion, "gemini-ok");
    const parts = answer.candidates?.[0].content?.parts ?? [];
    assert.ok(
      parts.some((p) => p.thought === true && p.text === FAKE_GEMINI_THOUGHT),
      "the upstream's thoughts",
    );
    const sent = fake.requests.at(-1)!;
    assert.equal(sent.model, "gem-ok");
    assert.equal(sent.headers.get("x-goog-api-key"), FAKE_GEMINI_KEY);
    assert.deepEqual((sent.body.generationConfig as Record<string, unknown>).thinkingConfig, {
      includeThoughts: true,
      thinkingBudget: 512,
    });
    assert.ok(Array.isArray(sent.body.safetySettings), "passed through, not dropped");

    // A function call with its thought signature comes back, and goes back, as the upstream wrote it.
    const call = await ai.models.generateContent({ model: "gemini-tools", contents: "Weather?" });
    const callPart = call.candidates![0].content!.parts!.find((p) => p.functionCall)!;
    assert.equal(callPart.thoughtSignature, FAKE_SIGNATURE);
    await ai.models.generateContent({
      model: "gemini-tools",
      contents: [
        { role: "user", parts: [{ text: "Weather?" }] },
        { role: "model", parts: [callPart] },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { temp: 21 } } }] },
      ],
    });
    const history = fake.requests.at(-1)!.body.contents as { parts: { thoughtSignature?: string }[] }[];
    assert.equal(history[1].parts[0].thoughtSignature, FAKE_SIGNATURE);

    let streamed = "";
    for await (const chunk of await ai.models.generateContentStream({ model: "gemini-ok", contents: "Hi" })) {
      streamed += chunk.text ?? "";
      assert.equal(chunk.modelVersion, "gemini-ok");
    }
    assert.equal(streamed, GEMINI_ANSWER);

    const rows = await pollUsageRows<{ endpoint: string; prompt_tokens: number; tokens_estimated: number }>(
      gw,
      (r) => r.length >= 4,
      { sql: "SELECT endpoint, prompt_tokens, tokens_estimated FROM usage ORDER BY rowid" },
    );
    assert.deepEqual(rows.map((r) => [r.endpoint, r.tokens_estimated]), [
      ["gemini", 0],
      ["gemini", 0],
      ["gemini", 0],
      ["gemini", 0],
    ]);
  });
});

Deno.test("gemini native: a function call another vendor made goes to Gemini 3 with the signature Google documents for it", async () => {
  // Gemini CLI's history of an alias whose earlier turn a non-Gemini target answered (a fallback, or the
  // alias moved): its calls carry no thought signature, which Gemini 3 refuses in the current turn.
  await withFakeGateway(startFakeGemini, configFor, async (gw, fake) => {
    const ai = new GoogleGenAI({
      apiKey: TEST_TOKEN,
      apiVersion: "v1beta",
      httpOptions: { baseUrl: gw.url },
    });
    const call = (city: string) => ({ functionCall: { name: "get_weather", args: { city } } });
    const answer = await ai.models.generateContent({
      model: "gemini-3",
      contents: [
        { role: "user", parts: [{ text: "Weather in two cities?" }] },
        { role: "model", parts: [{ text: "Checking." }, call("Paris"), call("Rome")] },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "get_weather", response: { temp: 21 } } },
            { functionResponse: { name: "get_weather", response: { temp: 25 } } },
          ],
        },
        { role: "model", parts: [{ ...call("Oslo"), thoughtSignature: FAKE_SIGNATURE }] },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { temp: 3 } } }] },
      ],
    });
    assert.equal(answer.text, GEMINI_ANSWER);
    type Part = { thoughtSignature?: string; functionCall?: unknown };
    const sent = fake.requests.at(-1)!.body.contents as { parts: Part[] }[];
    assert.deepEqual(sent[1].parts.map((p) => p.thoughtSignature), [
      undefined,
      "skip_thought_signature_validator",
      undefined,
    ], "the first call of the turn carries it (parallel calls carry one signature, on the first)");
    assert.equal(
      sent[3].parts[0].thoughtSignature,
      FAKE_SIGNATURE,
      "a call Gemini signed keeps its signature",
    );
  });
});

Deno.test("gemini native: content rules redact function responses as they redact a translated target's tool results", async () => {
  await withFakeGateway(startFakeGemini, configFor, async (gw, fake) => {
    const contents = [
      { role: "user", parts: [{ text: "Look up employee 123-45-6789" }] },
      { role: "model", parts: [{ functionCall: { name: "lookup", args: { id: 7 } } }] },
      {
        role: "user",
        parts: [{
          functionResponse: { name: "lookup", response: { record: { name: "Ann", ssn: "987-65-4321" } } },
        }],
      },
      { role: "model", parts: [{ functionCall: { name: "pin_of", args: { id: 7 } } }] },
      // The rule matches across the JSON's structure and its replacement holds a quote: not JSON once redacted.
      { role: "user", parts: [{ functionResponse: { name: "pin_of", response: { pin: 4321 } } }] },
    ];
    const res = await fetch(`${gw.url}/v1beta/models/gemini-redact:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
      body: JSON.stringify({ contents }),
    });
    assert.equal(res.status, 200, await res.text());
    const sent = fake.requests.at(-1)!.body.contents as { parts: Record<string, unknown>[] }[];
    assert.deepEqual(sent[0].parts[0], { text: "Look up employee [SSN]" });
    assert.deepEqual(sent[2].parts[0].functionResponse, {
      name: "lookup",
      response: { record: { name: "Ann", ssn: "[SSN]" } },
    });
    // Sent as the text a translated target's model reads, under the key Google names for a function's output.
    assert.deepEqual(sent[4].parts[0].functionResponse, {
      name: "pin_of",
      response: { output: '{"pin "[PIN]"}' },
    });
    assert.ok(!JSON.stringify(sent).includes("4321"), "no match reaches the upstream");
  });
});

Deno.test("gemini native: the policy judges Google's proto spellings and user thought parts as the target reads them", async () => {
  await withFakeGateway(startFakeGemini, configFor, async (gw, fake) => {
    const generate = async (body: unknown, token = TEST_TOKEN, alias = "gemini-guard") => {
      const res = await fetch(`${gw.url}/v1beta/models/${alias}:generateContent`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": token },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };
    const hi = [{ role: "user", parts: [{ text: "Hi" }] }];
    // Denied text in `system_instruction` (Google reads it as systemInstruction) or in a user part flagged as a
    // thought: Google's 400, and nothing reaches the upstream.
    const denied = [
      { system_instruction: { parts: [{ text: "the forbidden word" }] }, contents: hi },
      {
        contents: [{ role: "user", parts: [{ text: "Hi" }, { text: "the forbidden word", thought: true }] }],
      },
    ];
    for (const body of denied) {
      const before = fake.requests.length;
      const answer = await generate(body);
      assert.equal(answer.status, 400, JSON.stringify(answer.body));
      assert.match(answer.body.error.message, /content policy/);
      assert.equal(fake.requests.length, before, "nothing reached the upstream");
    }
    // Redacted there as anywhere; the upstream gets one spelling, the one the policy read.
    const redacted = await generate({
      system_instruction: { parts: { text: "SSN 123-45-6789" } },
      contents: { role: "user", parts: [{ text: "Hi" }, { text: "and 987-65-4321", thought: true }] },
    });
    assert.equal(redacted.status, 200, JSON.stringify(redacted.body));
    const sent = fake.requests.at(-1)!.body;
    assert.deepEqual(sent.systemInstruction, { parts: [{ text: "SSN [SSN]" }] });
    assert.equal("system_instruction" in sent, false);
    assert.ok(
      !JSON.stringify(sent).includes("6789") && !JSON.stringify(sent).includes("4321"),
      JSON.stringify(sent),
    );

    // The token's max_tokens ceiling holds for `generation_config.max_output_tokens` too.
    const capped = await generate(
      { contents: hi, generation_config: { max_output_tokens: 60_000 } },
      CEILING,
      "gemini-ok",
    );
    assert.equal(capped.status, 200, JSON.stringify(capped.body));
    const body = fake.requests.at(-1)!.body;
    assert.deepEqual(body.generationConfig, { maxOutputTokens: 64 });
    assert.equal("generation_config" in body, false);
  });
});

Deno.test("gemini native: a mid-stream error ends with Google's error chunk; the ceiling lowers maxOutputTokens", async () => {
  await withFakeGateway(startFakeGemini, configFor, async (gw, fake) => {
    const res = await fetch(`${gw.url}/v1beta/models/gemini-broken:streamGenerateContent?alt=sse`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
    });
    // The error chunk arrives, then the connection is cut: no client reads the stream as complete.
    let text = "";
    let broken = false;
    const decoder = new TextDecoder();
    try {
      for await (const bytes of res.body!) text += decoder.decode(bytes, { stream: true });
    } catch {
      broken = true;
    }
    assert.ok(broken, "the connection was cut after the error chunk");
    const events = text.split("\r\n\r\n").filter((e) => e.startsWith("data: "));
    const last = JSON.parse(events.at(-1)!.slice(6));
    assert.equal(typeof last.error?.code, "number");
    assert.equal(typeof last.error?.status, "string");
    // The usage so far was the prompt's only: the output the client got is counted, and marked estimated.
    const [row] = await pollUsageRows<
      { prompt_tokens: number; completion_tokens: number; tokens_estimated: number; error_code: string }
    >(gw, (r) => r.length >= 1, {
      sql: "SELECT prompt_tokens, completion_tokens, tokens_estimated, error_code FROM usage ORDER BY rowid",
    });
    assert.equal(row.prompt_tokens, 30);
    assert.ok(row.completion_tokens > 0, `completion ${row.completion_tokens}`);
    assert.equal(row.tokens_estimated, 1);
    assert.ok(row.error_code);

    const capped = new GoogleGenAI({
      apiKey: CEILING,
      apiVersion: "v1beta",
      httpOptions: { baseUrl: gw.url },
    });
    await capped.models.generateContent({
      model: "gemini-ok",
      contents: "Hi",
      config: { maxOutputTokens: 1000 },
    });
    const config = fake.requests.at(-1)!.body.generationConfig as Record<string, unknown>;
    assert.equal(config.maxOutputTokens, 64);
  });
});

Deno.test("gemini native: without alt=sse, the JSON array is sent as a stream; a mid-stream error is its last element", async () => {
  await withFakeGateway(startFakeGemini, configFor, async (gw) => {
    const res = await fetch(`${gw.url}/v1beta/models/gemini-broken:streamGenerateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    let text = "";
    let broken = false;
    const decoder = new TextDecoder();
    try {
      for await (const bytes of res.body!) text += decoder.decode(bytes, { stream: true });
    } catch {
      broken = true;
    }
    // The chunks before the failure, then Google's error element as the array's last, then the cut.
    assert.ok(broken, "the connection was cut after the error element");
    const elements = JSON.parse(text) as { candidates?: unknown; error?: { code: number; status: string } }[];
    assert.ok(elements.length >= 2, text.slice(0, 300));
    assert.ok(elements[0].candidates, "the chunks before the failure came first");
    assert.equal(typeof elements.at(-1)!.error?.code, "number");
    assert.equal(typeof elements.at(-1)!.error?.status, "string");
  });
});

Deno.test("gemini native: embedContent and batchEmbedContents over a gemini embedding target", async () => {
  await withFakeGateway(startFakeGemini, configFor, async (gw, fake) => {
    const ai = new GoogleGenAI({
      apiKey: TEST_TOKEN,
      apiVersion: "v1beta",
      httpOptions: { baseUrl: gw.url },
    });
    const one = await ai.models.embedContent({ model: "gemini-emb", contents: "hello" });
    assert.equal(one.embeddings?.length, 1);
    assert.ok((one.embeddings![0].values?.length ?? 0) > 0);
    const many = await ai.models.embedContent({
      model: "gemini-emb",
      contents: ["one", "two"],
      config: { outputDimensionality: 3 },
    });
    assert.deepEqual(many.embeddings?.map((e) => e.values?.length), [3, 3]);
    assert.equal(fake.requests.at(-1)!.model, "text-embedding-004");
  });
});

Deno.test("gemini embed: an upstream that answers base64 is a 502, recorded with the tokens it reported", async () => {
  // An OpenAI-compatible embedding upstream that answers base64 whatever it is asked.
  const upstream = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    await request.text();
    return Response.json({
      object: "list",
      data: [{ object: "embedding", index: 0, embedding: "AAAAAA==" }],
      model: "emb",
      usage: { prompt_tokens: 9, total_tokens: 9 },
    });
  });
  const gw = await startGateway(`
providers:
  oa: { type: openai, base_url: "http://127.0.0.1:${upstream.addr.port}/v1", api_key: sk-emb-0123456789 }
models:
  emb-b64: { type: embedding, targets: [ { provider: oa, model: emb } ] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    const res = await fetch(`${gw.url}/v1beta/models/emb-b64:embedContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
      body: JSON.stringify({ content: { parts: [{ text: "embed me" }] } }),
    });
    assert.equal(res.status, 502);
    await res.body?.cancel();
    const [row] = await pollUsageRows<{ status: number; prompt_tokens: number; tokens_estimated: number }>(
      gw,
      (r) => r.length >= 1,
      { sql: "SELECT status, prompt_tokens, tokens_estimated FROM usage ORDER BY rowid" },
    );
    assert.deepEqual([row.status, row.prompt_tokens, row.tokens_estimated], [502, 9, 0]);
  } finally {
    await gw.stop();
    await upstream.shutdown();
  }
});
