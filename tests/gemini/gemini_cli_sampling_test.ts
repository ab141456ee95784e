/**
 * Gemini CLI's sampling settings through the Gemini API on other vendors' models, end to end with the official
 * `@google/genai` SDK. Gemini CLI sends its built-in defaults in every request, a setting its user never chose:
 * `generationConfig: {temperature: 1, topP: 0.95, topK: 64, thinkingConfig: {includeThoughts: true}}`
 * (recorded from Gemini CLI 0.61.0). The fakes refuse what the vendors refuse (`tests/helpers/vendor_refusals.ts`:
 * Claude takes `temperature` or `top_p`, not both; `fake_azure.ts`: Azure takes no `top_k`), so each 200 here is
 * one the CLI would not have got if the gateway sent the settings over as they are; what a target goes without
 * is named in `x-gateway-dropped` and the usage record's `dropped`, in the client's own terms. For a
 * `gemini-2.5-…` model the CLI adds `thinkingBudget: 8192` (`thinkingLevel: "HIGH"` for `gemini-3…`), and Claude
 * refuses any `top_k` with thinking on, as the fakes do: there `topK` goes and the thinking is sent.
 */
import assert from "node:assert/strict";
import { ApiError, type GenerateContentConfig, GoogleGenAI, ThinkingLevel } from "@google/genai";
import { FAKE_ANSWER, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { FAKE_AZURE_ANSWER, FAKE_AZURE_KEY, type FakeAzure, startFakeAzure } from "../helpers/fake_azure.ts";
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CLAUDE_ANSWER,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_ANSWER,
  FAKE_REGION,
  type FakeBedrock,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { type Fakes as FakeSet, startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

type Fakes = FakeSet<
  { openai: FakeUpstream; azure: FakeAzure; anthropic: FakeAnthropic; bedrock: FakeBedrock }
>;

const startAll = (): Fakes =>
  startFakes({
    openai: startFakeOpenAI,
    azure: startFakeAzure,
    anthropic: startFakeAnthropic,
    bedrock: startFakeBedrock,
  });

/** Gemini CLI 0.61.0's `generationConfig`, in every request it sends (tests/agents records the CLI's own). */
const GEMINI_CLI: GenerateContentConfig = {
  temperature: 1,
  topP: 0.95,
  topK: 64,
  thinkingConfig: { includeThoughts: true },
};

const BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

function configFor(f: Fakes): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  oa: { type: openai, base_url: "${f.openai.baseURL}", api_key: "${FAKE_KEY}" }
  az: { type: azure, base_url: "${f.azure.v1BaseURL}", api_key: "${FAKE_AZURE_KEY}" }
  claude: { type: anthropic, base_url: "${f.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  br:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${f.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  gem-openai: { type: chat, targets: [ { provider: oa, model: gpt-ok } ] }
  gem-azure: { type: chat, targets: [ { provider: az, model: gpt-4o } ] }
  gem-azure-strict: { type: chat, strict: true, targets: [ { provider: az, model: gpt-4o } ] }
  gem-nova: { type: chat, targets: [ { provider: br, model: amazon.nova-pro-v1:0 } ] }
  gem-claude: { type: chat, targets: [ { provider: claude, model: claude-ok } ] }
  gem-bedrock-claude: { type: chat, targets: [ { provider: br, model: "${BEDROCK_CLAUDE}" } ] }
  chat-unused: { type: chat, targets: [ { provider: claude, model: claude-ok } ] }
  gemini-2.5-pro: { type: chat, targets: [ { provider: claude, model: claude-ok } ] }
  gemini-2.5-pro-br: { type: chat, targets: [ { provider: br, model: "${BEDROCK_CLAUDE}" } ] }
  gemini-2.5-pro-strict: { type: chat, strict: true, targets: [ { provider: claude, model: claude-ok } ] }
${TEST_TOKENS_YAML}`;
}

function client(gw: TestGateway): GoogleGenAI {
  return new GoogleGenAI({ apiKey: TEST_TOKEN, apiVersion: "v1beta", httpOptions: { baseUrl: gw.url } });
}

/** The answer's text and its `x-gateway-dropped`, whole (`generateContent`) or streamed. */
async function generate(
  ai: GoogleGenAI,
  model: string,
  config: GenerateContentConfig,
  stream: boolean,
): Promise<{ text: string; dropped: string | undefined }> {
  const contents = "Write hello.txt";
  if (!stream) {
    const whole = await ai.models.generateContent({ model, contents, config });
    return { text: whole.text ?? "", dropped: whole.sdkHttpResponse?.headers?.["x-gateway-dropped"] };
  }
  let text = "";
  let dropped: string | undefined;
  for await (const chunk of await ai.models.generateContentStream({ model, contents, config })) {
    text += chunk.text ?? "";
    dropped ??= chunk.sdkHttpResponse?.headers?.["x-gateway-dropped"];
  }
  return { text, dropped };
}

Deno.test("gemini cli sampling: Claude gets Gemini CLI's temperature alone, its topP named as dropped", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const ai = client(gw);
    const config = { temperature: 1, topP: 0.95, thinkingConfig: { includeThoughts: true } };
    const cases: [string, string, () => Record<string, unknown>][] = [
      ["gem-claude", FAKE_CLAUDE_ANSWER, () => fakes.anthropic.requests.at(-1)!.body],
      [
        "gem-bedrock-claude",
        FAKE_BEDROCK_ANSWER,
        () => fakes.bedrock.requests.at(-1)!.body.inferenceConfig as Record<string, unknown>,
      ],
    ];
    for (const stream of [false, true]) {
      for (const [model, answer, sampling] of cases) {
        const { text, dropped } = await generate(ai, model, config, stream);
        assert.equal(text, answer, `${model} stream=${stream}`);
        assert.equal(dropped, "generationConfig.topP", model);
        assert.equal(sampling().temperature, 1, model);
        assert.equal(sampling().top_p ?? sampling().topP, undefined, model);
      }
    }
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "gem-bedrock-claude");
    assert.equal(line.dropped, "generationConfig.topP");
    // topP alone reaches Claude as sent.
    const { dropped } = await generate(ai, "gem-claude", { topP: 0.95 }, false);
    assert.equal(dropped, undefined);
    assert.equal(fakes.anthropic.requests.at(-1)!.body.top_p, 0.95);
  });
});

Deno.test("gemini cli sampling: Gemini CLI's generationConfig is answered on OpenAI, Azure, Anthropic and Bedrock aliases, what each goes without named", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const ai = client(gw);
    type Sent = Record<string, unknown>;
    const converse = () => fakes.bedrock.requests.at(-1)!.body;
    /** Each alias: its fake's answer, what it goes without, and the sampling settings its fake got. */
    const cases: { model: string; answer: string; dropped?: string; sent: () => Sent; expected: Sent }[] = [
      // An OpenAI-compatible server (vLLM, Ollama, this fake) takes top_k.
      {
        model: "gem-openai",
        answer: FAKE_ANSWER,
        sent: () => fakes.openai.requests.at(-1)!.body,
        expected: { temperature: 1, top_p: 0.95, top_k: 64 },
      },
      // Azure answers a top_k with "Unrecognized request argument supplied: top_k".
      {
        model: "gem-azure",
        answer: FAKE_AZURE_ANSWER,
        dropped: "generationConfig.topK",
        sent: () => fakes.azure.requests.at(-1)!.body,
        expected: { temperature: 1, top_p: 0.95, top_k: undefined },
      },
      {
        model: "gem-claude",
        answer: FAKE_CLAUDE_ANSWER,
        dropped: "generationConfig.topP",
        sent: () => fakes.anthropic.requests.at(-1)!.body,
        expected: { temperature: 1, top_p: undefined, top_k: 64 },
      },
      // Claude on Bedrock takes top_k through Converse's additionalModelRequestFields.
      {
        model: "gem-bedrock-claude",
        answer: FAKE_BEDROCK_ANSWER,
        dropped: "generationConfig.topP",
        sent: () => ({
          ...converse().inferenceConfig as Sent,
          extra: converse().additionalModelRequestFields,
        }),
        expected: { temperature: 1, topP: undefined, extra: { top_k: 64 } },
      },
      // Bedrock's other models take no top_k, and take both sampling controls.
      {
        model: "gem-nova",
        answer: FAKE_BEDROCK_ANSWER,
        dropped: "generationConfig.topK",
        sent: () => ({
          ...converse().inferenceConfig as Sent,
          extra: converse().additionalModelRequestFields,
        }),
        expected: { temperature: 1, topP: 0.95, extra: undefined },
      },
    ];
    for (const stream of [false, true]) {
      for (const { model, answer, dropped, sent, expected } of cases) {
        const got = await generate(ai, model, GEMINI_CLI, stream);
        assert.equal(got.text, answer, `${model} stream=${stream}`);
        assert.equal(got.dropped, dropped, model);
        const body = sent();
        for (const [key, value] of Object.entries(expected)) {
          assert.deepEqual(body[key], value, `${model} ${key}`);
        }
      }
    }
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "gem-azure");
    assert.equal(line.dropped, "generationConfig.topK");
    // A strict alias refuses the drop, in Google's shape, naming the client's field, before calling Azure.
    const before = fakes.azure.requests.length;
    await assert.rejects(
      ai.models.generateContent({ model: "gem-azure-strict", contents: "Hi", config: GEMINI_CLI }),
      (err: unknown) =>
        err instanceof ApiError && err.status === 400 && /generationConfig\.topK/.test(err.message),
    );
    assert.equal(fakes.azure.requests.length, before);
  });
});

Deno.test("gemini cli sampling: a Claude alias named for the CLI's model thinks on its thinkingBudget, its topK named as dropped", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const ai = client(gw);
    const converse = () => fakes.bedrock.requests.at(-1)!.body;
    const cases: [string, string, () => Record<string, unknown>][] = [
      ["gemini-2.5-pro", FAKE_CLAUDE_ANSWER, () => fakes.anthropic.requests.at(-1)!.body],
      [
        "gemini-2.5-pro-br",
        FAKE_BEDROCK_ANSWER,
        () => ({
          ...converse().inferenceConfig as object,
          ...converse().additionalModelRequestFields as object,
        }),
      ],
    ];
    const budget = { ...GEMINI_CLI, thinkingConfig: { includeThoughts: true, thinkingBudget: 8192 } };
    // Gemini CLI's thinkingLevel for gemini-3 models: Claude's high budget.
    const level = {
      ...GEMINI_CLI,
      thinkingConfig: { includeThoughts: true, thinkingLevel: ThinkingLevel.HIGH },
    };
    for (const stream of [false, true]) {
      for (const [model, answer, sent] of cases) {
        for (const [config, tokens] of [[budget, 8192], [level, 24576]] as const) {
          const got = await generate(ai, model, config, stream);
          assert.equal(got.text, answer, `${model} stream=${stream}`);
          assert.equal(got.dropped, "generationConfig.topP,generationConfig.topK", model);
          const body = sent();
          assert.deepEqual(body.thinking, { type: "enabled", budget_tokens: tokens }, model);
          assert.equal(body.top_k, undefined, model);
          assert.equal(body.temperature, 1, model);
        }
      }
    }
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "gemini-2.5-pro-br");
    assert.equal(line.dropped, "generationConfig.topP,generationConfig.topK");
    // Without thinking, Claude gets the CLI's topK as before.
    const plain = await generate(ai, "gemini-2.5-pro", GEMINI_CLI, false);
    assert.equal(plain.dropped, "generationConfig.topP");
    assert.equal(fakes.anthropic.requests.at(-1)!.body.top_k, 64);
    // A strict alias refuses the drop, in Google's shape, naming the client's field, before calling Claude.
    const before = fakes.anthropic.requests.length;
    await assert.rejects(
      ai.models.generateContent({
        model: "gemini-2.5-pro-strict",
        contents: "Hi",
        config: { ...budget, topP: undefined },
      }),
      (err: unknown) =>
        err instanceof ApiError && err.status === 400 && /generationConfig\.topK/.test(err.message),
    );
    assert.equal(fakes.anthropic.requests.length, before);
  });
});
