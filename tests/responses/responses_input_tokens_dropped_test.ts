/**
 * What `POST /v1/responses/input_tokens` says about what a translated target's count left out. Gemini and
 * Bedrock's models other than Claude count the chat form, built for their counting endpoint in `drop` mode
 * whatever the provider's `unsupported_params` (what it leaves out does not change the input's count): the
 * answer names it in `x-gateway-dropped` and the usage record's `dropped`, in the client's terms
 * (`reasoning.effort`, not the chat form's `reasoning_effort`), as `POST /v1/responses` does. A `strict` alias
 * refuses every drop: its count goes to a target that serves the field, or is OpenAI's 400 naming it, as
 * `POST /v1/responses` is. Each count leaves one usage record.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { json } from "../helpers/mixed_vendors.ts";
import { type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

const TOOLS = [{ type: "function", name: "get_weather", parameters: { type: "object", properties: {} } }];
const SERIAL_TOOLS = { tools: TOOLS, parallel_tool_calls: false };
const REASONING = { reasoning: { effort: "high" } };

function configFor(up: RawUpstream): string {
  const target = (provider: string, model: string) =>
    `{ provider: ${provider}, model: "${model}", retries: 0 }`;
  return `
providers:
  openai: { type: openai, base_url: "${up.url}/oai/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  gemini: { type: gemini, base_url: "${up.url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
  aws:
    type: bedrock
    region: us-east-1
    base_url: "${up.url}"
    access_key_id: AKIAQ7EXAMPLEW3RT6YU
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY
models:
  chat-nova: { type: chat, targets: [${target("aws", "us.amazon.nova-pro-v1:0")}] }
  chat-gemini: { type: chat, targets: [${target("gemini", "gemini-2.5-flash")}] }
  chat-strict-gemini: { type: chat, strict: true, targets: [${target("gemini", "gemini-2.5-flash")}, ${
    target("openai", "gpt-4o")
  }] }
  chat-strict-only-gemini: { type: chat, strict: true, targets: [${target("gemini", "gemini-2.5-flash")}] }
  chat-strict-nova: { type: chat, strict: true, targets: [${target("aws", "us.amazon.nova-pro-v1:0")}] }
${TEST_TOKENS_YAML}`;
}

function count(gw: InProcessGateway, body: Record<string, unknown>) {
  return gw.fetch("/v1/responses/input_tokens", {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ input: "hi", ...body }),
  });
}

function withGateway(fn: (gw: InProcessGateway, up: RawUpstream) => Promise<void>) {
  return withInProcessGateway(() => {
    const up = startRawUpstream();
    return { fakes: up, config: configFor(up) };
  }, fn);
}

Deno.test("input_tokens: what a translated target's count left out is named, header and record", async () => {
  await withGateway(async (gw, up) => {
    const cases: [string, Record<string, unknown>, unknown, string][] = [
      // Bedrock's Nova takes no reasoning effort: the count goes without it.
      ["chat-nova", REASONING, { inputTokens: 43 }, "reasoning.effort"],
      // Gemini has no switch for parallel calls, nor a verbosity.
      [
        "chat-gemini",
        { ...SERIAL_TOOLS, text: { verbosity: "low" } },
        { totalTokens: 42 },
        "parallel_tool_calls,text.verbosity",
      ],
    ];
    for (const [model, extra, answer, dropped] of cases) {
      up.next = json(answer);
      const before = gw.records.length;
      const sent = up.requests.length;
      const response = await count(gw, { model, ...extra });
      const body = await response.json();
      assert.equal(response.status, 200, JSON.stringify(body));
      assert.equal(body.estimated, undefined, `${model}: the vendor counted`);
      assert.equal(up.requests.length, sent + 1);
      assert.equal(response.headers.get("x-gateway-dropped"), dropped, model);
      assert.equal(gw.records.length, before + 1, `${model}: one usage record`);
      assert.equal(gw.records.at(-1)!.dropped, dropped);
      assert.equal(gw.records.at(-1)!.prompt_tokens, 0);
    }
    const converse = JSON.parse(up.requests.at(-2)!.body);
    assert.equal(JSON.stringify(converse).includes("reasoning"), false, "Nova's count went without it");
    // Nothing to drop: nothing named.
    up.next = json({ totalTokens: 42 });
    const plain = await count(gw, { model: "chat-gemini" });
    assert.equal(plain.status, 200);
    assert.equal(plain.headers.get("x-gateway-dropped"), null);
    assert.equal(gw.records.at(-1)!.dropped ?? null, null);
  });
});

Deno.test("input_tokens: the gateway's estimate names what the request's chat form left out", async () => {
  await withGateway(async (gw, up) => {
    // A built-in tool, which no target of this alias serves: the chat form goes without it, as a response would.
    up.next = { status: 500, headers: { "content-type": "application/json" }, chunks: ["{}"] };
    const before = gw.records.length;
    const response = await count(gw, { model: "chat-gemini", tools: [{ type: "web_search" }] });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.equal(body.estimated, true);
    assert.equal(response.headers.get("x-gateway-dropped"), "tools[0]");
    assert.equal(gw.records.length, before + 1);
    assert.equal(gw.records.at(-1)!.dropped, "tools[0]");
  });
});

Deno.test("input_tokens: a strict alias counts where the field is served, or refuses it", async () => {
  await withGateway(async (gw, up) => {
    up.next = json({ totalTokens: 42 });
    // The Gemini target would drop it: the count goes to the OpenAI one, which has no counting endpoint, so
    // the gateway counts the chat form, which keeps it.
    let before = gw.records.length;
    let sent = up.requests.length;
    const served = await count(gw, { model: "chat-strict-gemini", ...SERIAL_TOOLS });
    const servedBody = await served.json();
    assert.equal(served.status, 200, JSON.stringify(servedBody));
    assert.equal(servedBody.estimated, true);
    assert.equal(served.headers.get("x-gateway-dropped"), null);
    assert.equal(up.requests.length, sent, "Gemini's count was not asked");
    assert.equal(gw.records.length, before + 1);
    // No target serves it: OpenAI's 400 naming the client's field, as POST /v1/responses answers; no upstream
    // called, one record.
    const refusals: [string, Record<string, unknown>, string][] = [
      ["chat-strict-only-gemini", SERIAL_TOOLS, "parallel_tool_calls"],
      ["chat-strict-nova", REASONING, "reasoning.effort"],
    ];
    for (const [model, extra, param] of refusals) {
      before = gw.records.length;
      sent = up.requests.length;
      const refused = await count(gw, { model, ...extra });
      const refusedBody = await refused.json();
      assert.equal(refused.status, 400, JSON.stringify(refusedBody));
      assert.equal(refusedBody.error.type, "invalid_request_error");
      assert.equal(refusedBody.error.param, param);
      assert.equal(refusedBody.error.code, "unsupported_parameter");
      assert.equal(up.requests.length, sent);
      assert.equal(gw.records.length, before + 1);
    }
    // Nothing to drop: the strict alias counts on Gemini.
    const plain = await count(gw, { model: "chat-strict-only-gemini" });
    assert.equal(plain.status, 200);
    assert.equal((await plain.json()).input_tokens, 42);
  });
});
