/**
 * Google's Gemini API (v1beta) end to end with the official `@google/genai` SDK against a gateway on a real
 * socket: generateContent and generateContentStream over OpenAI-compatible, Anthropic, Bedrock and builtin
 * targets (translated), embedContent and batchEmbedContents, a function-call round trip, countTokens, the key in `x-goog-api-key` or `?key=`, Google's
 * error shape for a wrong key and an unknown model (Google's 404), a mid-stream failure the SDK raises on, the JSON-array
 * stream without `alt=sse`, and one usage record per request under the endpoint `gemini`.
 */
import assert from "node:assert/strict";
import { ApiError, GoogleGenAI, type Part, Type } from "@google/genai";
import {
  FAKE_ANSWER,
  FAKE_KEY,
  FAKE_REASONING,
  FAKE_REFUSAL,
  type FakeUpstream,
  startFakeOpenAI,
} from "../helpers/fake_openai.ts";
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CLAUDE_ANSWER,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_ANSWER,
  FAKE_REGION,
  type FakeBedrock,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { type Fakes as FakeSet, startFakes } from "../helpers/fakes.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

type Fakes = FakeSet<{ openai: FakeUpstream; anthropic: FakeAnthropic; bedrock: FakeBedrock }>;

const startAll = (): Fakes =>
  startFakes({ openai: startFakeOpenAI, anthropic: startFakeAnthropic, bedrock: startFakeBedrock });

function configFor(f: Fakes): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  oa: { type: openai, base_url: "${f.openai.baseURL}", api_key: "${FAKE_KEY}" }
  claude: { type: anthropic, base_url: "${f.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  local: { type: builtin }
  br:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${f.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  chat-ok: { type: chat, targets: [ { provider: oa, model: gpt-ok } ] }
  chat-tools: { type: chat, targets: [ { provider: oa, model: gpt-tools } ] }
  chat-cut: { type: chat, targets: [ { provider: oa, model: gpt-cut } ] }
  chat-refuse: { type: chat, targets: [ { provider: oa, model: gpt-refuse } ] }
  chat-reasoning: { type: chat, targets: [ { provider: oa, model: gpt-reasoning } ] }
  claude-ok: { type: chat, targets: [ { provider: claude, model: claude-ok } ] }
  br-ok: { type: chat, targets: [ { provider: br, model: "us.plain-model-v1:0" } ] }
  echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  emb: { type: embedding, targets: [ { provider: oa, model: emb-ok } ] }
  emb-fixed: { type: embedding, targets: [ { provider: oa, model: emb-fixed } ] }
  emb-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
  emb-bedrock: { type: embedding, targets: [ { provider: br, model: amazon.titan-embed-text-v2:0 } ] }
  "llama3:8b": { type: chat, targets: [ { provider: oa, model: gpt-ok } ] }
  mod: { type: moderation, targets: [ { provider: oa, model: omni-moderation-latest } ] }
  guarded:
    type: chat
    targets: [ { provider: oa, model: gpt-ok } ]
    content_rules:
      - { name: secret-word, pattern: "forbidden", action: deny }
${TEST_TOKENS_YAML}`;
}

function client(gw: TestGateway, apiKey = TEST_TOKEN): GoogleGenAI {
  return new GoogleGenAI({ apiKey, apiVersion: "v1beta", httpOptions: { baseUrl: gw.url } });
}

Deno.test("gemini sdk: generateContent and generateContentStream over translated targets, Google's fields", async () => {
  await withFakeGateway(startAll, configFor, async (gw) => {
    const ai = client(gw);
    const cases = [["chat-ok", FAKE_ANSWER], ["claude-ok", FAKE_CLAUDE_ANSWER], [
      "br-ok",
      FAKE_BEDROCK_ANSWER,
    ]];
    for (const [model, answer] of cases) {
      const whole = await ai.models.generateContent({ model, contents: "Hi" });
      assert.equal(whole.text, answer, model);
      assert.equal(whole.modelVersion, model);
      assert.equal(typeof whole.responseId, "string");
      assert.equal(whole.candidates?.[0].finishReason, "STOP");
      const usage = whole.usageMetadata!;
      assert.ok(usage.promptTokenCount! > 0 && usage.candidatesTokenCount! > 0);
      assert.equal(usage.totalTokenCount, usage.promptTokenCount! + usage.candidatesTokenCount!);

      let streamed = "";
      let chunks = 0;
      let finish: string | undefined;
      for await (const chunk of await ai.models.generateContentStream({ model, contents: "Hi" })) {
        chunks++;
        streamed += chunk.text ?? "";
        finish = chunk.candidates?.[0].finishReason ?? finish;
      }
      assert.equal(streamed, answer, model);
      assert.ok(chunks > 1, "chunks as they arrive");
      assert.equal(finish, "STOP");
    }
    const echo = await ai.models.generateContent({
      model: "echo",
      contents: "echo me",
      config: { systemInstruction: "Be brief.", temperature: 0.2, maxOutputTokens: 50 },
    });
    assert.match(echo.text ?? "", /echo me/);
  });
});

Deno.test("gemini sdk: a function-call round trip, declarations in Google's schema types", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const ai = client(gw);
    const tools = [{
      functionDeclarations: [{
        name: "get_weather",
        description: "The weather in a city.",
        parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ["city"] },
      }],
    }];
    const first = await ai.models.generateContent({
      model: "chat-tools",
      contents: "Weather?",
      config: { tools },
    });
    const call = first.functionCalls?.[0];
    assert.ok(call, JSON.stringify(first));
    assert.equal(call.name, "get_weather");
    assert.deepEqual(call.args, { city: "Paris" });
    const sent = fakes.openai.requests.at(-1)!.body as { tools: { function: { parameters: unknown } }[] };
    assert.deepEqual(sent.tools[0].function.parameters, {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
    });
    const second = await ai.models.generateContent({
      model: "chat-ok",
      contents: [
        { role: "user", parts: [{ text: "Weather?" }] },
        { role: "model", parts: [{ functionCall: { id: call.id, name: call.name, args: call.args } }] },
        {
          role: "user",
          parts: [{ functionResponse: { id: call.id, name: call.name, response: { temp: 21 } } }],
        },
      ],
    });
    assert.equal(second.text, FAKE_ANSWER);
    const messages = fakes.openai.requests.at(-1)!.body.messages as { role: string; tool_call_id?: string }[];
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "tool"]);
    assert.equal(messages[2].tool_call_id, call.id);
  });
});

Deno.test("gemini sdk: countTokens; keys in x-goog-api-key or ?key=; Google's errors; one usage record each", async () => {
  await withFakeGateway(startAll, configFor, async (gw) => {
    const ai = client(gw);
    const counted = await ai.models.countTokens({ model: "chat-ok", contents: "How many tokens is this?" });
    assert.ok((counted.totalTokens ?? 0) > 0);

    const wrong = await client(gw, "gw-not-a-token").models.generateContent({
      model: "chat-ok",
      contents: "Hi",
    })
      .then(() => null, (e) => e);
    assert.ok(wrong instanceof ApiError, String(wrong));
    assert.equal(wrong.status, 401);
    // Google's 404 in its words: Gemini CLI takes it for a model not found (its model-fallback path).
    const unknown = await ai.models.generateContent({ model: "no-such-model", contents: "Hi" })
      .then(() => null, (e) => e);
    assert.ok(unknown instanceof ApiError);
    assert.equal(unknown.status, 404);
    assert.deepEqual(JSON.parse(unknown.message).error, {
      code: 404,
      message: "models/no-such-model is not found for API version v1beta, or is not supported for " +
        "generateContent. Call ListModels to see the list of available models and their supported methods.",
      status: "NOT_FOUND",
    });

    const byQuery = await fetch(`${gw.url}/v1beta/models/chat-ok:generateContent?key=${TEST_TOKEN}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
    });
    assert.equal(byQuery.status, 200);
    await byQuery.body?.cancel();
    const bad = await fetch(`${gw.url}/v1beta/models/chat-ok:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
      body: JSON.stringify({ contents: "not a list" }),
    });
    assert.equal(bad.status, 400);
    const error = (await bad.json()).error;
    assert.deepEqual([error.code, error.status], [400, "INVALID_ARGUMENT"]);
    assert.equal(typeof error.message, "string");

    const listed = await fetch(`${gw.url}/v1beta/models`, { headers: { "x-goog-api-key": TEST_TOKEN } });
    const names = (await listed.json()).models.map((m: { name: string }) => m.name);
    assert.ok(names.includes("models/chat-ok"));

    const rows = await pollUsageRows<{ endpoint: string; status: number; alias: string | null }>(
      gw,
      (r) => r.length >= 6,
      { sql: "SELECT endpoint, status, alias FROM usage ORDER BY rowid", settleMs: 200 },
    );
    assert.deepEqual(rows.map((r) => [r.endpoint, r.status]), [
      ["gemini", 200],
      ["gemini", 401],
      ["gemini", 404],
      ["gemini", 200],
      ["gemini", 400],
      ["gemini", 200],
    ]);
  });
});

Deno.test("gemini sdk: a mid-stream failure ends with Google's error chunk and the SDK raises; no alt=sse streams a JSON array", async () => {
  await withFakeGateway(startAll, configFor, async (gw) => {
    const ai = client(gw);
    const failed = await (async () => {
      for await (const _ of await ai.models.generateContentStream({ model: "chat-cut", contents: "Hi" })) {
        // reading until the failure
      }
    })().then(() => null, (e) => e);
    assert.ok(failed instanceof Error, "the SDK raised");

    const res = await fetch(`${gw.url}/v1beta/models/chat-ok:streamGenerateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hi" }] }] }),
    });
    const chunks = JSON.parse(await res.text()) as {
      candidates: { content: { parts: { text?: string }[] } }[];
    }[];
    assert.ok(chunks.length > 1);
    assert.equal(
      chunks.map((c) => c.candidates[0].content.parts.map((p) => p.text ?? "").join("")).join(""),
      FAKE_ANSWER,
    );
  });
});

Deno.test("gemini sdk: the alias's content rules judge a Gemini request as any other (a deny is Google's 400)", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const before = fakes.openai.requests.length;
    const denied = await client(gw).models.generateContent({
      model: "guarded",
      contents: "something forbidden",
    })
      .then(() => null, (e) => e);
    assert.ok(denied instanceof ApiError, String(denied));
    assert.equal(denied.status, 400);
    assert.match(denied.message, /INVALID_ARGUMENT/);
    assert.equal(fakes.openai.requests.length, before, "nothing reached the upstream");
    const allowed = await client(gw).models.generateContent({ model: "guarded", contents: "something fine" });
    assert.equal(allowed.text, FAKE_ANSWER);
  });
});

Deno.test("gemini sdk: embedContent and batchEmbedContents over an embedding alias", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const ai = client(gw);
    const one = await ai.models.embedContent({
      model: "emb",
      contents: "hello",
      config: { outputDimensionality: 4 },
    });
    assert.equal(one.embeddings?.length, 1);
    assert.equal(one.embeddings![0].values!.length, 4);
    const sent = fakes.openai.requests.at(-1)!.body as { input: string[]; dimensions: number };
    assert.deepEqual([sent.input, sent.dimensions], [["hello"], 4]);
    const many = await ai.models.embedContent({ model: "emb", contents: ["one", "two", "three"] });
    assert.equal(many.embeddings?.length, 3);
    assert.deepEqual((fakes.openai.requests.at(-1)!.body as { input: string[] }).input, [
      "one",
      "two",
      "three",
    ]);
    // Requests of one batch asking for other dimensionalities: one upstream call for each, none given another's.
    const before = fakes.openai.requests.length;
    const mixed = await fetch(`${gw.url}/v1beta/models/emb:batchEmbedContents`, {
      method: "POST",
      headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify({
        requests: [
          { content: { parts: [{ text: "a" }] }, outputDimensionality: 2 },
          { content: { parts: [{ text: "b" }] } },
          { content: { parts: [{ text: "c" }] }, outputDimensionality: 2 },
        ],
      }),
    });
    const mixedBody = await mixed.json();
    assert.equal(mixed.status, 200, JSON.stringify(mixedBody));
    assert.deepEqual(mixedBody.embeddings.map((e: { values: number[] }) => e.values.length), [2, 8, 2]);
    assert.deepEqual(
      fakes.openai.requests.slice(before).map((r) => [r.body.input, r.body.dimensions]),
      [[["a", "c"], 2], [["b"], undefined]],
    );
    // An outputDimensionality no target could take never reaches the upstream; a refusal of the upstream's
    // names the field the client sent.
    const refused = async (alias: string, requests: unknown[]) => {
      const response = await fetch(`${gw.url}/v1beta/models/${alias}:batchEmbedContents`, {
        method: "POST",
        headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
        body: JSON.stringify({ requests }),
      });
      const body = await response.json();
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(body.error.status, "INVALID_ARGUMENT");
      return body.error.message as string;
    };
    const sentBefore = fakes.openai.requests.length;
    const negative = await refused("emb", [{
      content: { parts: [{ text: "a" }] },
      outputDimensionality: -5,
    }]);
    assert.match(negative, /'requests\[0\]\.outputDimensionality'/);
    assert.equal(fakes.openai.requests.length, sentBefore, "the upstream got nothing");
    const fixed = await refused("emb-fixed", [
      { content: { parts: [{ text: "a" }] } },
      { content: { parts: [{ text: "b" }] }, outputDimensionality: 3 },
    ]);
    assert.equal(
      fixed,
      "Invalid value at 'requests[1].outputDimensionality': This model does not support specifying dimensions.",
    );
    // A chat alias cannot embed, and an embedding alias cannot generate: Google's 400, not a 5xx.
    const wrong = await ai.models.embedContent({ model: "chat-ok", contents: "hello" }).then(
      () => null,
      (e) => e,
    );
    assert.ok(wrong instanceof ApiError);
    assert.equal(wrong.status, 400);
  });
});

Deno.test("gemini sdk: thinkingLevel from Google's enum reaches a translated target; refusals name the client's fields", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const ai = client(gw);
    const thinking = async (thinkingLevel: string) => {
      await ai.models.generateContent({
        model: "claude-ok",
        contents: "Hi",
        config: { thinkingConfig: { thinkingLevel } } as Record<string, unknown>,
      });
      return fakes.anthropic.requests.at(-1)!.body.thinking;
    };
    // XHIGH is as high as Claude's budgets go; UNSPECIFIED is the model's default: no thinking asked.
    assert.deepEqual(await thinking("XHIGH"), await thinking("HIGH"));
    assert.equal(await thinking("THINKING_LEVEL_UNSPECIFIED"), undefined);
    const before = fakes.anthropic.requests.length;
    const refused = async (config: Record<string, unknown>) => {
      const err = await ai.models.generateContent({ model: "claude-ok", contents: "Hi", config })
        .then(() => null, (e) => e);
      assert.ok(err instanceof ApiError, String(err));
      assert.equal(err.status, 400);
      return err.message;
    };
    assert.match(
      await refused({ thinkingConfig: { thinkingLevel: "banana" } }),
      /generationConfig\.thinkingConfig\.thinkingLevel/,
    );
    // Refused by the Anthropic translation, in the Gemini client's terms rather than the chat form's.
    const seed = await refused({ seed: 7 });
    assert.match(seed, /'generationConfig\.seed'/);
    assert.doesNotMatch(seed, /'seed'/);
    const budget = await refused({ maxOutputTokens: 500, thinkingConfig: { thinkingLevel: "HIGH" } });
    assert.match(
      budget,
      /'generationConfig\.maxOutputTokens'.*'generationConfig\.thinkingConfig\.thinkingLevel'/,
    );
    assert.equal(fakes.anthropic.requests.length, before, "no refused request reached the upstream");
  });
});

Deno.test("gemini sdk: models.list holds every alias the key may use; an alias with ':' is fetched and called", async () => {
  await withFakeGateway(startAll, configFor, async (gw) => {
    const ai = client(gw);
    const listed = new Map<string, string[] | undefined>();
    for await (const model of await ai.models.list()) listed.set(model.name!, model.supportedActions);
    // The SDK's pager asks for pages of the size given and follows nextPageToken through the whole list.
    const pager = await ai.models.list({ config: { pageSize: 2 } });
    assert.equal(pager.page.length, 2);
    assert.ok(pager.hasNextPage(), "more than one page of two");
    const paged: string[] = [];
    for await (const model of pager) paged.push(model.name!);
    assert.deepEqual(paged, [...listed.keys()], "every alias once, in the list's order");
    assert.deepEqual(
      listed.get("models/emb"),
      ["embedContent", "batchEmbedContents"],
      "embedding aliases too",
    );
    // A moderation alias has no method on the Gemini API: neither listed nor fetched.
    assert.ok(!listed.has("models/mod"), [...listed.keys()].join(", "));
    const moderation = await fetch(`${gw.url}/v1beta/models/mod`, {
      headers: { "x-goog-api-key": TEST_TOKEN },
    });
    assert.equal(moderation.status, 404);
    await moderation.body?.cancel();
    assert.deepEqual(listed.get("models/llama3:8b"), [
      "generateContent",
      "streamGenerateContent",
      "countTokens",
    ]);
    const got = await ai.models.get({ model: "llama3:8b" });
    assert.equal(got.name, "models/llama3:8b");
    const answer = await ai.models.generateContent({ model: "llama3:8b", contents: "Hi" });
    assert.equal(answer.text, FAKE_ANSWER);
    assert.equal(answer.modelVersion, "llama3:8b");
    // A GET of an alias's method is still Google's 404.
    const wrong = await fetch(`${gw.url}/v1beta/models/chat-ok:generateContent`, {
      headers: { "x-goog-api-key": TEST_TOKEN },
    });
    assert.equal(wrong.status, 404);
    await wrong.body?.cancel();
  });
});

Deno.test("gemini sdk: an enum response type and non-text system parts a chat target cannot take are named dropped", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const res = await fetch(`${gw.url}/v1beta/models/chat-ok:generateContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
      body: JSON.stringify({
        systemInstruction: {
          parts: [{ text: "Classify." }, { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }],
        },
        contents: [{ role: "user", parts: [{ text: "I love it" }] }],
        generationConfig: {
          // Google answers the bare enum value, not JSON: no chat response_format gives that.
          responseMimeType: "text/x.enum",
          responseSchema: { type: "STRING", enum: ["POSITIVE", "NEGATIVE"] },
        },
      }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    assert.deepEqual(res.headers.get("x-gateway-dropped")?.split(","), [
      "generationConfig.responseMimeType",
      "generationConfig.responseSchema",
      "systemInstruction.parts[1]",
    ]);
    const sent = fakes.openai.requests.at(-1)!.body;
    assert.equal(sent.response_format, undefined);
    assert.deepEqual((sent.messages as unknown[])[0], { role: "system", content: "Classify." });
  });
});

Deno.test("gemini sdk: Google's REST examples as published (proto names, lower-case enums, single values) are served whole", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const post = (body: unknown) =>
      fetch(`${gw.url}/v1beta/models/chat-ok:generateContent`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
        body: JSON.stringify(body),
      });
    // The cookbook's Function_calling_config_REST request, with a generation config in the same spelling.
    const res = await post({
      system_instruction: { parts: { text: "You are a helpful lighting system bot." } },
      tools: [{
        function_declarations: [
          { name: "enable_lights", parameters: { type: "object" } },
          { name: "stop_lights", parameters: { type: "object" } },
        ],
      }],
      tool_config: { function_calling_config: { mode: "any", allowed_function_names: ["stop_lights"] } },
      contents: { role: "user", parts: { text: "Lights off!" } },
      generation_config: { max_output_tokens: 50, stop_sequences: ["END"] },
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    assert.equal(res.headers.get("x-gateway-dropped"), null, "nothing the client sent was left out");
    const sent = fakes.openai.requests.at(-1)!.body;
    assert.deepEqual((sent.messages as unknown[])[0], {
      role: "system",
      content: "You are a helpful lighting system bot.",
    });
    assert.deepEqual((sent.tools as { function: { name: string } }[]).map((t) => t.function.name), [
      "stop_lights",
    ]);
    assert.deepEqual(sent.tool_choice, { type: "function", function: { name: "stop_lights" } });
    assert.deepEqual([sent.max_completion_tokens ?? sent.max_tokens, sent.stop], [50, ["END"]]);

    const image = await post({
      contents: [{
        parts: [{ inline_data: { mime_type: "image/png", data: "iVBORw0KGgo=" } }, { text: "Caption." }],
      }],
    });
    assert.equal(image.status, 200, await image.clone().text());
    await image.body?.cancel();

    // A mode Google does not know is Google's 400, not an answer with the tools left to the model.
    const before = fakes.openai.requests.length;
    const bogus = await post({
      contents: [{ parts: [{ text: "Hi" }] }],
      tools: [{ functionDeclarations: [{ name: "f" }] }],
      toolConfig: { functionCallingConfig: { mode: "BOGUS" } },
    });
    assert.equal(bogus.status, 400);
    const error = (await bogus.json()).error;
    assert.equal(error.status, "INVALID_ARGUMENT");
    assert.match(error.message, /toolConfig\.functionCallingConfig\.mode/);
    assert.equal(fakes.openai.requests.length, before);

    // An embedding's proto names too: `output_dimensionality` is not left unread.
    const embedded = await fetch(`${gw.url}/v1beta/models/emb:embedContent`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": TEST_TOKEN },
      body: JSON.stringify({ content: { parts: { text: "embed me" } }, output_dimensionality: 3 }),
    });
    assert.equal(embedded.status, 200, await embedded.clone().text());
    await embedded.body?.cancel();
    assert.equal(fakes.openai.requests.at(-1)!.body.dimensions, 3);
  });
});

Deno.test("gemini sdk: an OpenAI model's refusal is the answer's text, finished by SAFETY, whole and streamed", async () => {
  await withFakeGateway(startAll, configFor, async (gw) => {
    const ai = client(gw);
    const config = {
      responseMimeType: "application/json",
      responseSchema: { type: Type.OBJECT, properties: { plan: { type: Type.STRING } } },
    };
    const whole = await ai.models.generateContent({ model: "chat-refuse", contents: "Plan a crime", config });
    assert.equal(whole.text, FAKE_REFUSAL);
    assert.equal(whole.candidates?.[0].finishReason, "SAFETY");
    let streamed = "";
    let finish: string | undefined;
    for await (
      const chunk of await ai.models.generateContentStream({ model: "chat-refuse", contents: "Hi" })
    ) {
      streamed += chunk.text ?? "";
      finish = chunk.candidates?.[0].finishReason ?? finish;
    }
    assert.equal(streamed, FAKE_REFUSAL);
    assert.equal(finish, "SAFETY");
  });
});

Deno.test("gemini sdk: thoughts come back only with includeThoughts; a thinkingBudget of 0 sends no effort", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const ai = client(gw);
    const thoughtsOf = (parts: Part[] | undefined) =>
      (parts ?? []).filter((p) => p.thought).map((p) => p.text);
    const plain = await ai.models.generateContent({ model: "chat-reasoning", contents: "Hi" });
    assert.equal(plain.text, FAKE_ANSWER);
    assert.deepEqual(thoughtsOf(plain.candidates?.[0].content?.parts), [], "not asked for, as at Google");
    assert.ok((plain.usageMetadata?.thoughtsTokenCount ?? 0) > 0, "its tokens are still reported");
    const asked = await ai.models.generateContent({
      model: "chat-reasoning",
      contents: "Hi",
      config: { thinkingConfig: { includeThoughts: true } },
    });
    assert.deepEqual(thoughtsOf(asked.candidates?.[0].content?.parts), [FAKE_REASONING]);
    let streamed: (string | undefined)[] = [];
    for await (
      const chunk of await ai.models.generateContentStream({ model: "chat-reasoning", contents: "Hi" })
    ) {
      streamed = streamed.concat(thoughtsOf(chunk.candidates?.[0].content?.parts));
    }
    assert.deepEqual(streamed, []);

    await ai.models.generateContent({
      model: "chat-reasoning",
      contents: "Hi",
      config: { thinkingConfig: { thinkingBudget: 0 } },
    });
    assert.equal(
      fakes.openai.requests.at(-1)!.body.reasoning_effort,
      undefined,
      "no effort a model could refuse",
    );
  });
});
