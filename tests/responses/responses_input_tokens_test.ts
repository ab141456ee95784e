/**
 * `POST /v1/responses/input_tokens` end to end with the official `openai` SDK (`responses.inputTokens.count`)
 * against a gateway on a real socket: exact counts from the upstreams that count (the fake Anthropic, Gemini and
 * Bedrock, each adding its own base to the characters it received, so a test knows who counted what), the
 * gateway's estimate marked `estimated: true` where nobody counts or a count failed, stored conversations via
 * `previous_response_id`, scopes, limits, OpenAI's error shape for bad bodies, and one usage record per request.
 * Every count answer validates against the spec's `TokenCountsResource`.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { countTokens } from "../../lib/usage/estimate.ts";
import {
  FAKE_ANTHROPIC_COUNT_BASE,
  FAKE_ANTHROPIC_KEY,
  FAKE_CLAUDE_ANSWER,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_COUNT_BASE,
  FAKE_REGION,
  type FakeBedrock,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import {
  FAKE_GEMINI_COUNT_BASE,
  FAKE_GEMINI_KEY,
  type FakeGemini,
  startFakeGemini,
} from "../helpers/fake_gemini.ts";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { usageRows } from "../helpers/usage_rows.ts";
import { startFakes } from "../helpers/fakes.ts";
import { openaiClient, withTestGateway } from "../helpers/with_gateway.ts";

const schemas = await loadOpenApiSchemas();

const T = {
  main: "gw-count-main-0123456789abcdef",
  narrow: "gw-count-narrow-0123456789abcdef",
  chatOnly: "gw-count-chatonly-0123456789abcdef",
  rpm: "gw-count-rpm-0123456789abcdef",
  budget: "gw-count-budget-0123456789abcdef",
};

interface Fakes {
  anthropic: FakeAnthropic;
  gemini: FakeGemini;
  bedrock: FakeBedrock;
  openai: FakeUpstream;
  native: NativeCounter;
}

/** What the native counting upstream answers. */
const NATIVE_COUNT = 4321;
const NATIVE_KEY = "sk-native-count-key-0123456789";

/** An upstream with OpenAI's `POST /v1/responses/input_tokens` only, recording the bodies it counted. */
interface NativeCounter {
  baseURL: string;
  bodies: Record<string, unknown>[];
  stop(): Promise<void>;
}

function startNativeCounter(): NativeCounter {
  const bodies: Record<string, unknown>[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const path = new URL(request.url).pathname;
    const body = await request.json().catch(() => ({}));
    if (
      request.headers.get("authorization") !== `Bearer ${NATIVE_KEY}` || path !== "/v1/responses/input_tokens"
    ) {
      return Response.json({ error: { message: "no", type: "invalid_request_error" } }, { status: 404 });
    }
    bodies.push(body);
    return Response.json({ object: "response.input_tokens", input_tokens: NATIVE_COUNT });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, bodies, stop: () => server.shutdown() };
}

const RULES = `
    content_rules:
      - { name: code, pattern: "SECRET-\\\\d+", action: redact }
      - { name: never, pattern: "TOPSECRET", action: deny, message: "Secrets may not be sent." }`;

function config(f: Fakes): string {
  const token = (name: string, secret: string, extra = "") =>
    `  - { name: ${name}, environment: test, sha256: ${hashToken(secret)}${extra} }`;
  return `
providers:
  anth: { type: anthropic, base_url: "${f.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  gem: { type: gemini, base_url: "${f.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  br:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${f.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
  compat: { type: openai, base_url: "${f.openai.baseURL}", api_key: "${FAKE_KEY}" }
  native: { type: openai, base_url: "${f.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  local: { type: builtin }
models:
  claude: { type: chat, targets: [ { provider: anth, model: claude-ok } ] }
  claude-ruled:
    type: chat
    targets: [ { provider: anth, model: claude-ok } ]${RULES}
  native-ruled:
    type: chat
    targets: [ { provider: native, model: up-model } ]${RULES}
  claude-broken: { type: chat, targets: [ { provider: anth, model: claude-500 } ] }
  claude-then-gemini:
    type: chat
    strategy: fallback
    targets: [ { provider: anth, model: claude-500, retries: 0 }, { provider: gem, model: gem-ok } ]
  gemini: { type: chat, targets: [ { provider: gem, model: gem-ok } ] }
  bedrock: { type: chat, targets: [ { provider: br, model: "anthropic.claude-3-5-haiku-20241022-v1:0" } ] }
  bedrock-nocount: { type: chat, targets: [ { provider: br, model: "amazon.nocount-v1:0" } ] }
  compat: { type: chat, targets: [ { provider: compat, model: gpt-ok } ] }
  echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
${token("main", T.main, ', models: ["*"]')}
${token("narrow", T.narrow, ', models: ["chat-*"]')}
${token("chat-only", T.chatOnly, ', models: ["*"], endpoints: [chat]')}
${token("rpm-2", T.rpm, ', models: ["*"], limits: { rpm: 2 }')}
${token("budget-40", T.budget, ', models: ["*"], budget: { tokens: 40, period: day }')}
`;
}

interface Ctx {
  gw: TestGateway;
  fakes: Fakes;
  client: (token?: string) => OpenAI;
}

function withGateway(fn: (ctx: Ctx) => Promise<void>): Promise<void> {
  return withTestGateway(() => {
    const fakes = startFakes<Fakes>({
      anthropic: startFakeAnthropic,
      gemini: startFakeGemini,
      bedrock: startFakeBedrock,
      openai: startFakeOpenAI,
      native: startNativeCounter,
    });
    return { fakes, config: config(fakes) };
  }, (gw, fakes) => fn({ gw, fakes, client: (token = T.main) => openaiClient(gw, token) }));
}

/** The count answer as sent, `estimated` included (the SDK's type does not name it, the object keeps it). */
type Count = { object: string; input_tokens: number; estimated?: boolean };

/** Every count answer validates against the spec's `TokenCountsResource` (when the spec is at hand). */
async function count(client: OpenAI, body: OpenAI.Responses.InputTokenCountParams): Promise<Count> {
  const answer = await client.responses.inputTokens.count(body) as Count;
  schemas?.assert("TokenCountsResource", answer, "the input_tokens answer");
  assert.equal(answer.object, "response.input_tokens");
  return answer;
}

/** Raw POST, for bodies the SDK's types refuse. */
async function post(gw: TestGateway, body: unknown, token = T.main) {
  const response = await fetch(`${gw.baseURL}/responses/input_tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await response.json();
  if (response.status === 200) schemas?.assert("TokenCountsResource", json, "the input_tokens answer");
  return { status: response.status, headers: response.headers, json };
}

const INSTRUCTIONS = "Be brief.";
const JOKE = "Tell me a joke.";

Deno.test("input_tokens: Anthropic, Gemini and Bedrock count exactly, from the request the chat would send", async () => {
  await withGateway(async ({ client, fakes }) => {
    const sdk = client();
    const claude = await count(sdk, { model: "claude", instructions: INSTRUCTIONS, input: JOKE });
    assert.deepEqual(claude, {
      object: "response.input_tokens",
      input_tokens: FAKE_ANTHROPIC_COUNT_BASE + INSTRUCTIONS.length + JOKE.length,
    });
    const sent = fakes.anthropic.requests.at(-1)!;
    assert.equal(sent.path, "/v1/messages/count_tokens");
    assert.equal(sent.body.model, "claude-ok");
    assert.equal(fakes.anthropic.requests.length, 1, "counted, not answered");

    const items: OpenAI.Responses.ResponseInput = [
      { role: "user", content: [{ type: "input_text", text: "What is 2+2?" }] },
      { role: "assistant", content: "4" },
      { role: "user", content: JOKE },
    ];
    const gemini = await count(sdk, { model: "gemini", instructions: INSTRUCTIONS, input: items });
    assert.equal(gemini.input_tokens, FAKE_GEMINI_COUNT_BASE + INSTRUCTIONS.length + 12 + 1 + JOKE.length);
    assert.equal(gemini.estimated, undefined);
    assert.equal(fakes.gemini.requests.at(-1)!.method, "countTokens");

    const bedrock = await count(sdk, { model: "bedrock", instructions: INSTRUCTIONS, input: items });
    assert.equal(bedrock.input_tokens, FAKE_BEDROCK_COUNT_BASE + INSTRUCTIONS.length + 12 + 1 + JOKE.length);
    assert.equal(bedrock.estimated, undefined);
    const signed = fakes.bedrock.requests.at(-1)!;
    assert.equal(signed.action, "count-tokens");
    assert.equal(signed.signatureValid, true);
  });
});

Deno.test("input_tokens: without a counting upstream the gateway's tokenizer counts, marked estimated: true", async () => {
  await withGateway(async ({ client, fakes }) => {
    const sdk = client();
    const compat = await count(sdk, { model: "compat", instructions: INSTRUCTIONS, input: JOKE });
    const builtin = await count(sdk, { model: "echo", instructions: INSTRUCTIONS, input: JOKE });
    assert.equal(compat.object, "response.input_tokens");
    assert.equal(compat.estimated, true);
    assert.equal(builtin.estimated, true);
    assert.equal(compat.input_tokens, builtin.input_tokens, "the same tokenizer whichever target");
    // o200k_base over the texts, plus at most a few framing tokens per message.
    const texts = await countTokens([INSTRUCTIONS, JOKE]);
    assert.ok(compat.input_tokens >= texts && compat.input_tokens <= texts + 3 * 3, `${compat.input_tokens}`);
    assert.equal(fakes.openai.requests.length, 0, "nothing was sent upstream");

    const longer = await count(sdk, { model: "echo", instructions: INSTRUCTIONS, input: `${JOKE} ${JOKE}` });
    assert.ok(longer.input_tokens > builtin.input_tokens);
    const withTool = await count(sdk, {
      model: "echo",
      instructions: INSTRUCTIONS,
      input: JOKE,
      tools: [{
        type: "function",
        name: "get_weather",
        description: "The current weather in a city",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        strict: true,
      }],
    });
    assert.ok(withTool.input_tokens > builtin.input_tokens + 10, "tool definitions count");
  });
});

Deno.test("input_tokens: a failed upstream count falls back to routing's next target, else to the estimate", async () => {
  await withGateway(async ({ client, fakes }) => {
    const sdk = client();
    const estimate = await count(sdk, { model: "echo", input: JOKE });

    const broken = await count(sdk, { model: "claude-broken", input: JOKE });
    assert.deepEqual(broken, { ...estimate, estimated: true });
    assert.ok(
      fakes.anthropic.requests.filter((r) => r.path === "/v1/messages/count_tokens").length >= 1,
      "the upstream was asked first",
    );

    // Bedrock models that cannot count answer 400 ValidationException: no retry, the estimate.
    const before = fakes.bedrock.requests.length;
    const nocount = await count(sdk, { model: "bedrock-nocount", input: JOKE });
    assert.deepEqual(nocount, { ...estimate, estimated: true });
    assert.equal(fakes.bedrock.requests.length, before + 1);

    // As routing would: the first target fails, the fallback counts.
    const fallback = await count(sdk, { model: "claude-then-gemini", input: JOKE });
    assert.deepEqual(fallback, {
      object: "response.input_tokens",
      input_tokens: FAKE_GEMINI_COUNT_BASE + JOKE.length,
    });
  });
});

Deno.test("input_tokens: content rules judge the count too; redactions reach the counting upstream", async () => {
  await withGateway(async ({ client, gw, fakes }) => {
    const sdk = client();
    const input = "My code is SECRET-42.";
    const redacted = "My code is [REDACTED].";
    const claude = await count(sdk, { model: "claude-ruled", input });
    assert.equal(claude.input_tokens, FAKE_ANTHROPIC_COUNT_BASE + redacted.length);

    const native = await count(sdk, { model: "native-ruled", instructions: INSTRUCTIONS, input });
    assert.deepEqual(native, { object: "response.input_tokens", input_tokens: NATIVE_COUNT });
    const sent = fakes.native.bodies.at(-1)!;
    assert.equal(sent.model, "up-model", "the target's model, not the alias");
    assert.equal(sent.input, redacted);
    assert.equal(sent.instructions, INSTRUCTIONS);

    const denied = await post(gw, { model: "claude-ruled", input: [{ role: "user", content: "TOPSECRET" }] });
    assert.equal(denied.status, 400);
    assert.equal(denied.json.error.code, "content_policy_violation");
    assert.equal(denied.json.error.param, "input[0].content");
  });
});

Deno.test("input_tokens: previous_response_id counts the stored conversation, with or without new input", async () => {
  await withGateway(async ({ client, gw, fakes }) => {
    const sdk = client();
    const first = await sdk.responses.create({ model: "claude", input: JOKE });
    assert.equal(first.output_text, FAKE_CLAUDE_ANSWER);
    const more = "Another one?";
    const next = await count(sdk, { model: "claude", previous_response_id: first.id, input: more });
    assert.equal(
      next.input_tokens,
      FAKE_ANTHROPIC_COUNT_BASE + JOKE.length + FAKE_CLAUDE_ANSWER.length + more.length,
    );
    const sofar = await count(sdk, { model: "claude", previous_response_id: first.id });
    assert.equal(sofar.input_tokens, FAKE_ANTHROPIC_COUNT_BASE + JOKE.length + FAKE_CLAUDE_ANSWER.length);

    // A native upstream does not hold the gateway's conversation: it gets it as input items.
    await count(sdk, { model: "native-ruled", previous_response_id: first.id, input: more });
    const sent = fakes.native.bodies.at(-1)!;
    assert.equal("previous_response_id" in sent, false);
    const texts = JSON.stringify(sent.input);
    for (const text of [JOKE, FAKE_CLAUDE_ANSWER, more]) assert.ok(texts.includes(text), texts);
    assert.ok(texts.indexOf(JOKE) < texts.indexOf(FAKE_CLAUDE_ANSWER));
    assert.ok(texts.indexOf(FAKE_CLAUDE_ANSWER) < texts.indexOf(more));

    // An id that never existed, and another token's stored response: the same 404, before any upstream call.
    for (const [token, id] of [[T.main, "resp_unknown"], [T.budget, first.id]]) {
      const r = await post(gw, { model: "claude", previous_response_id: id, input: more }, token);
      assert.equal(r.status, 404);
      assert.equal(r.json.error.code, "previous_response_not_found");
      assert.equal(r.json.error.param, "previous_response_id");
    }
  });
});

Deno.test("input_tokens: model and endpoint scopes, rate limits; counting consumes no token budget", async () => {
  await withGateway(async ({ client, gw }) => {
    await assert.rejects(count(client(T.narrow), { model: "claude", input: JOKE }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.NotFoundError);
      assert.equal(err.code, "model_not_found");
      return true;
    });
    assert.equal((await count(client(T.narrow), { model: "chat-echo", input: JOKE })).estimated, true);

    await assert.rejects(count(client(T.chatOnly), { model: "claude", input: JOKE }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.PermissionDeniedError);
      assert.equal(err.code, "endpoint_not_allowed");
      return true;
    });

    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post(gw, { model: "echo", input: JOKE }, T.rpm)).status);
    assert.deepEqual(statuses, [200, 200, 429], "a count is a request for requests-per-minute limits");

    // Each count is over the 40-token budget; a budget that counting charged would refuse the answer after.
    const long = "word ".repeat(100);
    for (let i = 0; i < 3; i++) {
      const counted = await count(client(T.budget), { model: "claude", input: long });
      assert.ok(counted.input_tokens > 40);
    }
    const answer = await client(T.budget).responses.create({ model: "echo", input: "one two three" });
    assert.equal(answer.status, "completed");
  });
});

Deno.test("input_tokens: bad bodies get OpenAI's 400 with the param; other methods get 405", async () => {
  await withGateway(async ({ client, gw }) => {
    const cases: [unknown, string, string][] = [
      [{ model: "echo", input: JOKE, stream: true }, "stream", "unknown_parameter"],
      [{ model: "echo", input: JOKE, max_output_tokens: 5 }, "max_output_tokens", "unknown_parameter"],
      [{ model: "echo", input: JOKE, bogus: 1 }, "bogus", "unknown_parameter"],
      [{ model: "echo" }, "input", "missing_required_parameter"],
      [{ model: "echo", input: [] }, "input", "empty_array"],
      [{ input: JOKE }, "model", "missing_required_parameter"],
      [{ model: "echo", input: JOKE, personality: "friendly" }, "personality", "unsupported_parameter"],
      [{ model: "echo", input: JOKE, conversation: "conv_1" }, "conversation", "unsupported_parameter"],
      [{ model: "echo", input: [{ role: "wizard", content: "hi" }] }, "input[0].role", "invalid_value"],
    ];
    for (const [body, param, code] of cases) {
      const r = await post(gw, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.error.type, "invalid_request_error");
      assert.equal(r.json.error.param, param, JSON.stringify(body));
      assert.equal(r.json.error.code, code, JSON.stringify(body));
      assert.equal(typeof r.json.error.message, "string");
    }
    const notJson = await fetch(`${gw.baseURL}/responses/input_tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${T.main}`, "content-type": "application/json" },
      body: "{",
    });
    assert.equal(notJson.status, 400);
    await notJson.body?.cancel();

    // The SDK raises the same 400 as BadRequestError.
    await assert.rejects(
      count(client(), { model: "echo" } as OpenAI.Responses.InputTokenCountParams),
      (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === "input",
    );

    const get = await fetch(`${gw.baseURL}/responses/input_tokens`, {
      headers: { authorization: `Bearer ${T.main}` },
    });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "POST");
    assert.equal((await get.json()).error.code, "method_not_allowed");
  });
});

interface Row {
  request_id: string;
  endpoint: string;
  alias: string | null;
  provider: string | null;
  status: number;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_estimated: number;
  cost: number;
}

Deno.test("input_tokens: one usage record per request, under responses, with no tokens and the estimate marked", async () => {
  await withGateway(async ({ gw }) => {
    const sent: [string, unknown, number][] = [
      ["count-exact", { model: "claude", input: JOKE }, 200],
      ["count-estimate", { model: "echo", input: JOKE }, 200],
      ["count-fallback", { model: "claude-broken", input: JOKE }, 200],
      ["count-bad", { model: "echo", input: JOKE, stream: true }, 400],
    ];
    for (const [id, body, status] of sent) {
      const r = await fetch(`${gw.baseURL}/responses/input_tokens`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${T.main}`,
          "content-type": "application/json",
          "x-request-id": id,
        },
        body: JSON.stringify(body),
      });
      assert.equal(r.status, status);
      await r.body?.cancel();
    }
    const rows = await usageRows<Row>(gw, sent.length);
    assert.equal(rows.length, sent.length, "exactly one record each");
    const by = Object.fromEntries(rows.map((r) => [r.request_id, r]));
    for (const [id, , status] of sent) {
      assert.equal(by[id].endpoint, "responses");
      assert.equal(by[id].status, status);
      assert.equal(by[id].prompt_tokens, 0);
      assert.equal(by[id].completion_tokens, 0);
      assert.equal(by[id].cost, 0);
    }
    assert.equal(by["count-exact"].tokens_estimated, 0);
    assert.equal(by["count-exact"].provider, "anth");
    assert.equal(by["count-estimate"].tokens_estimated, 1);
    assert.equal(by["count-fallback"].tokens_estimated, 1);
    assert.equal(by["count-fallback"].alias, "claude-broken");
  });
});
