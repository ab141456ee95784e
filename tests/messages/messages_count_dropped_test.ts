/**
 * What `POST /v1/messages/count_tokens` says about what a translated target's count left out. Gemini and
 * Bedrock's models other than Claude count the chat form, built for their counting endpoint in `drop` mode
 * whatever the provider's `unsupported_params` (what it leaves out does not change the input's count): the
 * answer names it in `x-gateway-dropped` and the usage record's `dropped`, in the client's terms (`thinking`,
 * not the chat form's `reasoning_effort`), after the `anthropic-beta` names, as a Message does. A `strict` alias
 * refuses every drop: its count goes to a target that serves the field, or is Anthropic's 400 naming it, as
 * `/v1/messages` is. Each count leaves one usage record.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { json } from "../helpers/mixed_vendors.ts";
import { type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

const TOOLS = [{ name: "get_weather", input_schema: { type: "object", properties: {} } }];
const SERIAL_TOOLS = { tools: TOOLS, tool_choice: { type: "auto", disable_parallel_tool_use: true } };
const THINKING = { thinking: { type: "enabled", budget_tokens: 2048 } };

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
${TEST_TOKENS_YAML}`;
}

function count(gw: InProcessGateway, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return gw.fetch("/v1/messages/count_tokens", {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
      ...headers,
    },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }),
  });
}

function withGateway(fn: (gw: InProcessGateway, up: RawUpstream) => Promise<void>) {
  return withInProcessGateway(() => {
    const up = startRawUpstream();
    return { fakes: up, config: configFor(up) };
  }, fn);
}

Deno.test("messages count_tokens: what a translated target's count left out is named, header and record", async () => {
  await withGateway(async (gw, up) => {
    const cases: [string, Record<string, unknown>, unknown, string][] = [
      // Bedrock's Nova takes no reasoning effort: the count goes without the thinking the client sent.
      ["chat-nova", THINKING, { inputTokens: 43 }, "thinking"],
      // Gemini has no switch for parallel calls.
      ["chat-gemini", SERIAL_TOOLS, { totalTokens: 42 }, "tool_choice.disable_parallel_tool_use"],
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
    // The client's betas come first, then the fields, as on a Message.
    up.next = json({ inputTokens: 43 });
    const beta = await count(gw, { model: "chat-nova", ...THINKING }, {
      "anthropic-beta": "effort-2025-11-24",
    });
    assert.equal(beta.status, 200);
    assert.equal(beta.headers.get("x-gateway-dropped"), "anthropic-beta:effort-2025-11-24,thinking");
  });
});

Deno.test("messages count_tokens: a strict alias counts where the field is served, or refuses it", async () => {
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
    // No target serves it: Anthropic's 400 naming the client's field, no upstream called, one record.
    before = gw.records.length;
    sent = up.requests.length;
    const refused = await count(gw, { model: "chat-strict-only-gemini", ...SERIAL_TOOLS });
    const refusedBody = await refused.json();
    assert.equal(refused.status, 400, JSON.stringify(refusedBody));
    assert.equal(refusedBody.type, "error");
    assert.equal(refusedBody.error.type, "invalid_request_error");
    assert.match(refusedBody.error.message, /^tool_choice\.disable_parallel_tool_use: /);
    assert.equal(up.requests.length, sent);
    assert.equal(gw.records.length, before + 1);
    // Nothing to drop: the strict alias counts on Gemini.
    const plain = await count(gw, { model: "chat-strict-only-gemini" });
    assert.equal(plain.status, 200);
    assert.equal((await plain.json()).input_tokens, 42);
  });
});
