/**
 * `text.verbosity` (Responses) and `verbosity` (chat completions) on targets with no verbosity control
 * (Anthropic, Gemini, Bedrock): a style hint, left out and named in `x-gateway-dropped` and the usage record's
 * `dropped` on a default config (no `unsupported_params: drop`), never refused. Codex 0.171 sends
 * `text: {verbosity: "low"}` in every request for its built-in model names (gpt-5.5 and later), so pointed at an
 * alias of that name served by Claude or Gemini it got a 400 on every turn. An OpenAI-compatible target gets it
 * as sent; a `strict` alias refuses the drop, or routes to a target that takes it.
 */
import assert from "node:assert/strict";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_AWS, FAKE_REGION, startFakeBedrock } from "../helpers/fake_bedrock.ts";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

type Fakes = ReturnType<typeof start>;

function start() {
  return startFakes({
    anthropic: startFakeAnthropic,
    gemini: startFakeGemini,
    bedrock: startFakeBedrock,
    openai: startFakeOpenAI,
  });
}

function config(fakes: Fakes): string {
  return `
providers:
  anthropic: { type: anthropic, base_url: "${fakes.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  gemini: { type: gemini, base_url: "${fakes.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  bedrock:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fakes.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
  openai: { type: openai, base_url: "${fakes.openai.baseURL}", api_key: "${FAKE_KEY}" }
models:
  gpt-5.5: { type: chat, targets: [ { provider: anthropic, model: claude-ok } ] }
  chat-gemini: { type: chat, targets: [ { provider: gemini, model: gem-ok } ] }
  chat-bedrock: { type: chat, targets: [ { provider: bedrock, model: "anthropic.claude-3-5-sonnet-20240620-v1:0" } ] }
  chat-nova: { type: chat, targets: [ { provider: bedrock, model: "us.amazon.nova-pro-v1:0" } ] }
  chat-openai: { type: chat, targets: [ { provider: openai, model: gpt-ok } ] }
  strict-claude: { type: chat, strict: true, targets: [ { provider: anthropic, model: claude-ok } ] }
  strict-mixed: { type: chat, strict: true, targets: [ { provider: anthropic, model: claude-ok }, { provider: openai, model: gpt-ok } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: InProcessGateway, fakes: Fakes) => Promise<void>): Promise<void> {
  return withInProcessGateway(() => {
    const fakes = start();
    return { fakes, config: config(fakes) };
  }, fn);
}

function post(gw: InProcessGateway, path: string, body: Record<string, unknown>): Promise<Response> {
  return gw.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Which fake serves each alias of {@linkcode VENDOR_ALIASES}. */
const VENDOR_OF = {
  "gpt-5.5": "anthropic",
  "chat-gemini": "gemini",
  "chat-bedrock": "bedrock",
  "chat-nova": "bedrock",
} as const;

/** The body of the last request the target of `alias` received. */
function lastSent(fakes: Fakes, alias: keyof typeof VENDOR_OF): Record<string, unknown> {
  return fakes[VENDOR_OF[alias]].requests.at(-1)!.body;
}

const VENDOR_ALIASES = Object.keys(VENDOR_OF) as (keyof typeof VENDOR_OF)[];

Deno.test("responses: text.verbosity on Claude, Gemini and Bedrock targets is left out and named, streamed or not", async () => {
  await withGateway(async (gw, fakes) => {
    for (const model of VENDOR_ALIASES) {
      for (const stream of [true, false]) {
        const records = gw.records.length;
        const response = await post(gw, "/v1/responses", {
          model,
          input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
          text: { verbosity: "low" },
          store: false,
          stream,
        });
        const text = await response.text();
        assert.equal(response.status, 200, `${model} stream=${stream}: ${text.slice(0, 300)}`);
        assert.equal(response.headers.get("x-gateway-dropped"), "text.verbosity", model);
        // The client's Response still echoes what it asked for.
        if (stream) assert.match(text, /event: response\.completed/);
        else assert.equal(JSON.parse(text).text.verbosity, "low");
        assert.equal(JSON.stringify(lastSent(fakes, model)).includes("verbosity"), false, model);
        assert.equal(gw.records.length, records + 1, `${model}: one usage record`);
        assert.equal(gw.records.at(-1)!.dropped, "text.verbosity");
      }
    }
  });
});

Deno.test("chat completions: verbosity on Claude, Gemini and Bedrock targets is left out and named, not refused", async () => {
  await withGateway(async (gw, fakes) => {
    for (const model of VENDOR_ALIASES) {
      const response = await post(gw, "/v1/chat/completions", {
        model,
        messages: [{ role: "user", content: "hi" }],
        verbosity: "high",
      });
      const body = await response.json();
      assert.equal(response.status, 200, `${model}: ${JSON.stringify(body)}`);
      assert.equal(response.headers.get("x-gateway-dropped"), "verbosity", model);
      assert.equal(JSON.stringify(lastSent(fakes, model)).includes("verbosity"), false, model);
      assert.equal(gw.records.at(-1)!.dropped, "verbosity");
    }
  });
});

Deno.test("verbosity: an OpenAI-compatible target gets it as sent, and a strict alias refuses the drop", async () => {
  await withGateway(async (gw, fakes) => {
    const served = await post(gw, "/v1/responses", {
      model: "chat-openai",
      input: "hi",
      text: { verbosity: "low" },
    });
    assert.equal(served.status, 200, await served.clone().text());
    assert.equal(served.headers.get("x-gateway-dropped"), null);
    assert.equal(fakes.openai.requests.at(-1)!.body.verbosity, "low");
    await served.body?.cancel();

    const sent = fakes.anthropic.requests.length;
    const refused = await post(gw, "/v1/responses", {
      model: "strict-claude",
      input: "hi",
      text: { verbosity: "low" },
    });
    const error = (await refused.json()).error;
    assert.equal(refused.status, 400);
    assert.equal(error.param, "text.verbosity");
    assert.match(error.message, /strict/);
    const chat = await post(gw, "/v1/chat/completions", {
      model: "strict-claude",
      messages: [{ role: "user", content: "hi" }],
      verbosity: "low",
    });
    assert.equal(chat.status, 400);
    assert.equal((await chat.json()).error.param, "verbosity");
    assert.equal(fakes.anthropic.requests.length, sent, "no upstream asked");

    // A strict alias with a target that takes it sends it there.
    const routed = await post(gw, "/v1/responses", {
      model: "strict-mixed",
      input: "hi",
      text: { verbosity: "low" },
    });
    assert.equal(routed.status, 200);
    assert.equal(routed.headers.get("x-gateway-provider"), "openai");
    assert.equal(routed.headers.get("x-gateway-dropped"), null);
    assert.equal(fakes.openai.requests.at(-1)!.body.verbosity, "low");
    await routed.body?.cancel();
  });
});
