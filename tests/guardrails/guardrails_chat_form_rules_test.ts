/**
 * A target that speaks the client's API natively is sent the translated chat form instead when the request's
 * guardrails need it (`RequestGuardrails.chatOnly`: an output check reads the answer, a `reverse` mask gives
 * masked values back, or an input change the client's body cannot carry). That form is then judged by the
 * target's own parameter rules, as a translated target's is (lib/http/tolerance.ts), over real sockets:
 *
 * - a native target whose rules would refuse the chat form is left out for the alias's other target, which
 *   answers, the native one never called (Gemini's `thinkingLevel: MINIMAL`, which its chat translation has no
 *   budget for; Claude's thinking beside a temperature other than 1);
 * - what its rules drop or its client API withholds from it is named in `x-gateway-dropped` and the usage
 *   record, beside what the chat form holds nowhere (Gemini CLI's `topK`, Claude's `top_p` beside a temperature);
 * - a `strict` alias refuses that drop, naming the client's field, as it refuses a translated target's.
 *
 * Responses' native targets (OpenAI-compatible, `native_responses`) have no parameter rules over the chat form
 * (they take every parameter as sent), so there is nothing there to skip or name.
 */
import assert from "node:assert/strict";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { type Fakes, startFakes } from "../helpers/fakes.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

type Upstreams = Fakes<{
  openai: ReturnType<typeof startFakeOpenAI>;
  gemini: ReturnType<typeof startFakeGemini>;
  claude: ReturnType<typeof startFakeAnthropic>;
}>;

function config(f: Upstreams): string {
  const gem = "{ provider: gem, model: gem-ok }";
  const claude = "{ provider: claude, model: claude-ok }";
  const oa = "{ provider: oa, model: gpt-ok }";
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  oa: { type: openai, base_url: "${f.openai.baseURL}", api_key: "${FAKE_KEY}" }
  gem: { type: gemini, base_url: "${f.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  claude: { type: anthropic, base_url: "${f.claude.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
guardrails:
  answers: { type: pii, entities: [CREDIT_CARD], action: deny, phase: output }
  contacts-back: { type: pii, entities: [EMAIL], action: mask, reverse: true }
models:
  chat-gem-checked: { type: chat, targets: [${gem}, ${oa}], guardrails: [answers] }
  chat-gem-only-checked: { type: chat, targets: [${gem}], guardrails: [answers] }
  chat-gem-strict-checked: { type: chat, strict: true, targets: [${gem}], guardrails: [answers] }
  chat-gem-plain: { type: chat, targets: [${gem}, ${oa}] }
  chat-claude-checked: { type: chat, targets: [${claude}, ${oa}], guardrails: [answers] }
  chat-claude-only-checked: { type: chat, targets: [${claude}], guardrails: [answers] }
  chat-claude-masked: { type: chat, targets: [${claude}, ${oa}], guardrails: [contacts-back] }
  chat-claude-strict-checked: { type: chat, strict: true, targets: [${claude}], guardrails: [answers] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fakes: Upstreams) => Promise<void>): Promise<void> {
  const start = () =>
    startFakes({ openai: startFakeOpenAI, gemini: startFakeGemini, claude: startFakeAnthropic });
  return withFakeGateway(start, config, fn);
}

/** A Gemini API generation; streamed as Gemini CLI asks (`alt=sse`). Its body is read whole. */
async function generate(
  gw: TestGateway,
  alias: string,
  generationConfig: Record<string, unknown>,
  stream = false,
): Promise<{ status: number; headers: Headers; text: string }> {
  const method = stream ? "streamGenerateContent?alt=sse" : "generateContent";
  const response = await fetch(`${gw.url}/v1beta/models/${alias}:${method}`, {
    method: "POST",
    headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }], generationConfig }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** A Messages API request; its body is read whole. */
async function messages(
  gw: TestGateway,
  body: Record<string, unknown>,
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    },
    body: JSON.stringify({ max_tokens: 64, messages: [{ role: "user", content: "Hello" }], ...body }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The usage record's `dropped` of the request `headers` answered (its access-log line, once written). */
async function recordDropped(gw: TestGateway, headers: Headers): Promise<unknown> {
  const id = headers.get("x-request-id");
  assert.ok(id, "the answer names its request");
  const line = await waitForLog(gw, (l) => l.msg === "request" && l.request_id === id);
  return line.dropped;
}

Deno.test("chat-form rules: a Gemini target its output guardrail sends the chat form is skipped when its rules refuse it", async () => {
  await withGateway(async (gw, fakes) => {
    const minimal = { thinkingConfig: { thinkingLevel: "MINIMAL" } };
    // Passed through, Gemini takes the level as sent: the rules of its chat translation do not apply.
    const plain = await generate(gw, "chat-gem-plain", minimal);
    assert.equal(plain.status, 200, plain.text);
    assert.equal(plain.headers.get("x-gateway-provider"), "gem");
    assert.equal(fakes.gemini.requests.length, 1);

    for (const stream of [false, true]) {
      const before = fakes.openai.requests.length;
      const answer = await generate(gw, "chat-gem-checked", minimal, stream);
      assert.equal(answer.status, 200, `stream ${stream}: ${answer.text}`);
      assert.equal(
        answer.headers.get("x-gateway-provider"),
        "oa",
        `stream ${stream}: the alias's other target`,
      );
      assert.equal(fakes.openai.requests.length, before + 1);
      assert.equal(fakes.openai.requests.at(-1)!.body.reasoning_effort, "minimal");
    }
    // The Gemini target was never called with a request it refuses.
    assert.equal(fakes.gemini.requests.length, 1);

    // No other target: Google's 400 names the client's field, and no upstream is called.
    const refused = await generate(gw, "chat-gem-only-checked", minimal);
    assert.equal(refused.status, 400, refused.text);
    assert.equal(JSON.parse(refused.text).error.status, "INVALID_ARGUMENT");
    assert.match(refused.text, /thinkingLevel/);
    assert.equal(fakes.gemini.requests.length, 1);
  });
});

Deno.test("chat-form rules: the topK a Gemini target sent the chat form goes without is named, and a strict alias refuses it", async () => {
  await withGateway(async (gw, fakes) => {
    // Gemini CLI's own defaults, in every request.
    const cli = { temperature: 1, topP: 0.95, topK: 64 };
    for (const stream of [false, true]) {
      const answer = await generate(gw, "chat-gem-only-checked", cli, stream);
      assert.equal(answer.status, 200, `stream ${stream}: ${answer.text}`);
      assert.equal(answer.headers.get("x-gateway-provider"), "gem");
      const sent = fakes.gemini.requests.at(-1)!.body as { generationConfig?: Record<string, unknown> };
      assert.equal(sent.generationConfig?.temperature, 1);
      assert.equal(sent.generationConfig?.topK, undefined, "the chat form's translation has no topK");
      assert.equal(answer.headers.get("x-gateway-dropped"), "generationConfig.topK", `stream ${stream}`);
      assert.equal(await recordDropped(gw, answer.headers), "generationConfig.topK", `stream ${stream}`);
    }
    // A strict alias refuses the drop, in Google's shape, naming the client's field, and calls no upstream.
    const calls = fakes.gemini.requests.length;
    const strict = await generate(gw, "chat-gem-strict-checked", cli);
    assert.equal(strict.status, 400, strict.text);
    assert.equal(JSON.parse(strict.text).error.status, "INVALID_ARGUMENT");
    assert.match(strict.text, /generationConfig\.topK/);
    assert.equal(fakes.gemini.requests.length, calls);
  });
});

Deno.test("chat-form rules: a Claude target sent the chat form names the top_p its rules drop beside a temperature", async () => {
  await withGateway(async (gw, fakes) => {
    for (const stream of [false, true]) {
      const answer = await messages(gw, {
        model: "chat-claude-only-checked",
        temperature: 0.5,
        top_p: 0.9,
        stream,
      });
      assert.equal(answer.status, 200, `stream ${stream}: ${answer.text}`);
      assert.equal(answer.headers.get("x-gateway-provider"), "claude");
      const sent = fakes.claude.requests.at(-1)!.body;
      assert.equal(sent.temperature, 0.5);
      assert.equal(sent.top_p, undefined, "Claude takes one of the two");
      assert.equal(answer.headers.get("x-gateway-dropped"), "top_p", `stream ${stream}`);
      assert.equal(await recordDropped(gw, answer.headers), "top_p", `stream ${stream}`);
    }
  });
});

Deno.test("chat-form rules: a Claude target sent the chat form is skipped when its rules refuse it (output check, reverse mask)", async () => {
  await withGateway(async (gw, fakes) => {
    // Thinking beside a temperature other than 1: Claude's chat translation refuses the effort.
    const thinking = { thinking: { type: "enabled", budget_tokens: 2048 }, temperature: 0.5 };
    const cases: [string, string][] = [["chat-claude-checked", "Hello"], [
      "chat-claude-masked",
      "Mail ada@example.com",
    ]];
    for (const [model, text] of cases) {
      for (const stream of [false, true]) {
        const before = fakes.openai.requests.length;
        const claudeCalls = fakes.claude.requests.length;
        const answer = await messages(gw, {
          model,
          ...thinking,
          stream,
          messages: [{ role: "user", content: text }],
        });
        assert.equal(answer.status, 200, `${model}, stream ${stream}: ${answer.text}`);
        assert.equal(answer.headers.get("x-gateway-provider"), "oa", `${model}, stream ${stream}`);
        assert.equal(fakes.openai.requests.length, before + 1);
        assert.equal(fakes.claude.requests.length, claudeCalls, "Claude is not called with what it refuses");
      }
    }
  });
});

Deno.test("chat-form rules: a strict alias's count is refused where its generation is (Gemini's topK, Claude's top_p)", async () => {
  await withGateway(async (gw, fakes) => {
    const contents = [{ role: "user", parts: [{ text: "hi" }] }];
    const generationConfig = { temperature: 1, topP: 0.95, topK: 64 };
    const geminiCalls = fakes.gemini.requests.length;
    const gemini = await fetch(`${gw.url}/v1beta/models/chat-gem-strict-checked:countTokens`, {
      method: "POST",
      headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify({
        generateContentRequest: { model: "models/chat-gem-strict-checked", contents, generationConfig },
      }),
    });
    const geminiText = await gemini.text();
    assert.equal(gemini.status, 400, geminiText);
    assert.equal(JSON.parse(geminiText).error.status, "INVALID_ARGUMENT");
    assert.match(geminiText, /generationConfig\.topK/);
    assert.equal(fakes.gemini.requests.length, geminiCalls, "no upstream counted it");

    const claudeCalls = fakes.claude.requests.length;
    const claude = await fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: {
        "x-api-key": TEST_TOKEN,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({
        model: "chat-claude-strict-checked",
        messages: [{ role: "user", content: "Hello" }],
      }),
    });
    // Counted: the count of a Message with no sampling params goes where the Message would.
    assert.equal(claude.status, 200, await claude.text());
    const generation = await messages(gw, {
      model: "chat-claude-strict-checked",
      temperature: 0.5,
      top_p: 0.9,
    });
    assert.equal(generation.status, 400, generation.text);
    assert.equal(fakes.claude.requests.length, claudeCalls + 1, "the strict generation called no upstream");
  });
});
