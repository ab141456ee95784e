/**
 * What chat completions do with a parameter a translated target cannot honour, over real sockets: an alias's
 * target that refuses it is skipped for one that takes it (the 400 comes only when none does); a target
 * configured with `unsupported_params: drop` goes without it, and the answer and the usage record say so; a
 * `strict` alias refuses instead. One raw upstream stands behind every provider type.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { GEMINI_OK, json, OPENAI_OK, withMixedVendors } from "../helpers/mixed_vendors.ts";
import type { RawUpstream } from "../helpers/raw_upstream.ts";

function configFor(url: string): string {
  const target = (provider: string, model: string) =>
    `{ provider: ${provider}, model: ${model}, retries: 0 }`;
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms }
providers:
  openai: { type: openai, base_url: "${url}/oai/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  anthropic: { type: anthropic, base_url: "${url}", api_key: "sk-ant-key-abcdef0123456789" }
  gemini: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
  geminidrop: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789", unsupported_params: drop }
  bedrock:
    type: bedrock
    region: us-east-1
    base_url: "${url}"
    access_key_id: AKIAQ7EXAMPLEW3RT6YU
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY
models:
  chat-mixed: { type: chat, targets: [${target("anthropic", "m-a")}, ${target("openai", "m-o")}] }
  chat-weighted: { type: chat, strategy: weighted, targets: [${target("anthropic", "m-a")}, ${
    target("openai", "m-o")
  }] }
  chat-translated: { type: chat, targets: [${target("anthropic", "m-a")}, ${target("gemini", "m-g")}] }
  chat-gemini: { type: chat, targets: [${target("gemini", "m-g")}] }
  chat-geminidrop: { type: chat, targets: [${target("geminidrop", "m-g")}] }
  chat-bedrock: { type: chat, targets: [${target("bedrock", "m-b")}] }
  chat-strict: { type: chat, strict: true, targets: [${target("geminidrop", "m-g")}] }
  chat-strict-mixed: { type: chat, strict: true, targets: [${target("geminidrop", "m-g")}, ${
    target("openai", "m-o")
  }] }
${TEST_TOKENS_YAML}`;
}

/** A gateway with this file's aliases over a fresh raw upstream, for `fn`. */
function withGateway(fn: (gw: TestGateway, up: RawUpstream) => Promise<void>) {
  return withMixedVendors(fn, configFor);
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

Deno.test("chat tolerance: Gemini and Bedrock refuse a parameter they do not translate, named, with no upstream call", async () => {
  await withGateway(async (gw, up) => {
    const cases: [string, Record<string, unknown>, string][] = [
      ["chat-gemini", { top_k: 5 }, "top_k"],
      ["chat-gemini", { next_months_param: 1 }, "next_months_param"],
      ["chat-bedrock", { top_k: 5 }, "top_k"],
    ];
    for (const [model, extra, param] of cases) {
      const before = up.requests.length;
      const answer = await post(gw, { model, ...extra });
      assert.equal(answer.status, 400, `${model} ${param}`);
      assert.equal(answer.body.error.param, param);
      assert.equal(answer.body.error.code, "unsupported_parameter");
      assert.equal(up.requests.length, before, `${model} ${param}`);
    }
  });
});

Deno.test("chat tolerance: legacy functions are refused, even by a provider that drops what it cannot serve", async () => {
  await withGateway(async (gw, up) => {
    const functions = [{ name: "get_weather", parameters: { type: "object", properties: {} } }];
    for (const model of ["chat-gemini", "chat-geminidrop", "chat-bedrock", "chat-translated"]) {
      const before = up.requests.length;
      const answer = await post(gw, { model, functions, function_call: { name: "get_weather" } });
      assert.equal(answer.status, 400, model);
      assert.equal(answer.body.error.param, "functions");
      assert.match(answer.body.error.message, /tools/);
      assert.equal(up.requests.length, before, model);
    }
    // An OpenAI-compatible target serves them as sent.
    up.next = json(OPENAI_OK);
    const served = await post(gw, { model: "chat-mixed", functions, function_call: { name: "get_weather" } });
    assert.equal(served.status, 200);
    assert.deepEqual(JSON.parse(up.requests.at(-1)!.body).function_call, { name: "get_weather" });
  });
});

Deno.test("chat tolerance: what a drop provider leaves out is named in x-gateway-dropped and the usage record", async () => {
  await withGateway(async (gw, up) => {
    up.next = json(GEMINI_OK);
    const answer = await post(gw, {
      model: "chat-geminidrop",
      verbosity: "low",
      logit_bias: { "1": 2 },
      seed: 3,
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("x-gateway-dropped"), "logit_bias,verbosity");
    const sent = JSON.parse(up.requests.at(-1)!.body);
    assert.equal("verbosity" in sent, false);
    assert.equal("logit_bias" in sent, false);
    assert.equal(sent.generationConfig.seed, 3);
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "chat-geminidrop");
    assert.equal(line?.dropped, "logit_bias,verbosity");
    // Nothing left out: no header.
    const whole = await post(gw, { model: "chat-geminidrop", seed: 3 });
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get("x-gateway-dropped"), null);
  });
});

Deno.test("chat tolerance: a strict alias refuses what its target would drop, or sends it where it is served", async () => {
  await withGateway(async (gw, up) => {
    const before = up.requests.length;
    const refused = await post(gw, { model: "chat-strict", verbosity: "low" });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, "verbosity");
    assert.match(refused.body.error.message, /strict/);
    assert.equal(up.requests.length, before);
    up.next = json(OPENAI_OK);
    const served = await post(gw, { model: "chat-strict-mixed", verbosity: "low" });
    assert.equal(served.status, 200);
    assert.equal(served.headers.get("x-gateway-provider"), "openai");
    assert.equal(served.headers.get("x-gateway-dropped"), null);
    assert.equal(JSON.parse(up.requests.at(-1)!.body).verbosity, "low");
  });
});

Deno.test("chat tolerance: a strict alias refuses a prompt-caching marker its target would go without", async () => {
  await withGateway(async (gw, up) => {
    const messages = [{ role: "user", content: "hi", cache_control: { type: "ephemeral" } }];
    const before = up.requests.length;
    const refused = await post(gw, { model: "chat-strict", messages });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, "messages[0].cache_control");
    assert.equal(up.requests.length, before);
    // An OpenAI-compatible target gets the body as sent, markers included (OpenRouter and LiteLLM read them).
    up.next = json(OPENAI_OK);
    const served = await post(gw, { model: "chat-strict-mixed", messages });
    assert.equal(served.status, 200);
    assert.equal(served.headers.get("x-gateway-provider"), "openai");
    assert.equal(served.headers.get("x-gateway-dropped"), null);
    assert.deepEqual(JSON.parse(up.requests.at(-1)!.body).messages, messages);
  });
});

Deno.test("chat tolerance: a forced tool_choice without tools and a json_schema format without its schema are 400s on every target", async () => {
  await withGateway(async (gw, up) => {
    for (const model of ["chat-mixed", "chat-translated", "chat-bedrock", "chat-gemini"]) {
      const before = up.requests.length;
      const choice = await post(gw, { model, tool_choice: "required" });
      assert.equal(choice.status, 400, model);
      assert.equal(choice.body.error.param, "tool_choice");
      const format = await post(gw, { model, response_format: { type: "json_schema" } });
      assert.equal(format.status, 400, model);
      assert.equal(format.body.error.param, "response_format.json_schema");
      assert.equal(up.requests.length, before, model);
    }
    // `auto` and `none` force nothing: still served.
    up.next = json(GEMINI_OK);
    assert.equal((await post(gw, { model: "chat-gemini", tool_choice: "none" })).status, 200);
  });
});
