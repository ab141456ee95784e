/**
 * What `POST /v1/messages` does with what its chat form asks and a translated target's parameter rules refuse
 * (`tool_choice.disable_parallel_tool_use`, which Gemini and Converse have no switch for; `thinking` on a
 * Bedrock model that is not Claude), over real sockets: the alias's target that would refuse it is skipped for
 * one that takes it, every time, and Anthropic's 400 naming the client's field comes only when none does; a
 * target that drops it is named in `x-gateway-dropped` and the usage record; a `strict` alias sends it where it
 * is served. A refused effort names the field that set it (`output_config.effort`, else `thinking`), whether
 * the gateway or the upstream refuses it.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { GEMINI_OK, json, OPENAI_OK, withMixedVendors } from "../helpers/mixed_vendors.ts";
import type { RawStep } from "../helpers/raw_upstream.ts";

const TOOLS = [{ name: "get_weather", input_schema: { type: "object", properties: {} } }];
const SERIAL_TOOLS = { tools: TOOLS, tool_choice: { type: "auto", disable_parallel_tool_use: true } };
const THINKING = { max_tokens: 4096, thinking: { type: "enabled", budget_tokens: 2048 } };

async function post(gw: TestGateway, body: Record<string, unknown>) {
  const response = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    },
    body: JSON.stringify({ max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...body }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

Deno.test("messages tolerance: a target that refuses what the request asks is skipped for one that takes it", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(OPENAI_OK);
    const cases: [string, Record<string, unknown>][] = [
      ["chat-mixed-gemini", SERIAL_TOOLS],
      ["chat-weighted-gemini", SERIAL_TOOLS],
      ["chat-weighted-bedrock", SERIAL_TOOLS],
      ["chat-mixed-bedrock", THINKING],
    ];
    for (const [model, extra] of cases) {
      for (let i = 0; i < 6; i++) {
        const before = up.requests.length;
        const answer = await post(gw, { model, ...extra });
        assert.equal(answer.status, 200, `${model}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.headers.get("x-gateway-provider"), "openai");
        assert.equal(up.requests.length, before + 1);
      }
    }
    assert.equal(JSON.parse(up.requests.at(-1)!.body).reasoning_effort, "low");
    // No target takes it: Anthropic's 400 names the client's field, and no upstream is called.
    const before = up.requests.length;
    const refused = await post(gw, { model: "chat-only-gemini", ...SERIAL_TOOLS });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.type, "error");
    assert.equal(refused.body.error.type, "invalid_request_error");
    assert.match(refused.body.error.message, /^tool_choice\.disable_parallel_tool_use: /);
    assert.equal(up.requests.length, before);
  });
});

Deno.test("messages tolerance: what a drop target leaves out of the chat form is named in x-gateway-dropped and the record", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(GEMINI_OK);
    const answer = await post(gw, { model: "chat-only-geminidrop", ...SERIAL_TOOLS });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.headers.get("x-gateway-dropped"), "tool_choice.disable_parallel_tool_use");
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "chat-only-geminidrop");
    assert.equal(line.dropped, "tool_choice.disable_parallel_tool_use");
    // A strict alias sends it to the target that serves it.
    up.next = json(OPENAI_OK);
    const strict = await post(gw, { model: "chat-strict-geminidrop", ...SERIAL_TOOLS });
    assert.equal(strict.status, 200);
    assert.equal(strict.headers.get("x-gateway-provider"), "openai");
    assert.equal(strict.headers.get("x-gateway-dropped"), null);
    assert.equal(JSON.parse(up.requests.at(-1)!.body).parallel_tool_calls, false);
  });
});

const UPSTREAM_REFUSAL: RawStep = {
  status: 400,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify({
    error: {
      message: "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
      type: "invalid_request_error",
      param: "reasoning_effort",
      code: "unsupported_parameter",
    },
  })],
};

Deno.test("messages tolerance: a refused effort names the field that set it, output_config.effort or thinking", async () => {
  await withMixedVendors(async (gw, up) => {
    // Claude Code's own: adaptive thinking at the effort of output_config.effort, a hint that a target which
    // cannot take it goes without (tests/messages/messages_effort_hint_test.ts), unless the alias is strict.
    const EFFORT = { thinking: { type: "adaptive" }, output_config: { effort: "high" } };
    // No target can think (Bedrock's models other than Claude): thinking asked for is refused before routing, in
    // the client's terms, its message's mention of the chat form's parameter too; an effort beside it names that.
    const before = up.requests.length;
    for (
      const [extra, field] of [
        [THINKING, "thinking"],
        [{ ...THINKING, output_config: { effort: "low" } }, "output_config.effort"],
      ] as const
    ) {
      const refused = await post(gw, { model: "chat-only-bedrock", ...extra });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.ok(refused.body.error.message.startsWith(`${field}: `), refused.body.error.message);
      assert.doesNotMatch(refused.body.error.message, /reasoning_effort/);
    }
    assert.equal(up.requests.length, before, "no upstream is called");
    // The upstream's own 400 on `reasoning_effort` (an OpenAI model that does not reason) is named the same, its
    // message's mention of the chat form's parameter too. A strict alias keeps the effort from the Bedrock target
    // that would go without it, so the OpenAI one gets it.
    for (
      const [model, extra, field] of [
        ["chat-strict-bedrock", EFFORT, "output_config.effort"],
        ["chat-mixed-bedrock", THINKING, "thinking"],
      ] as const
    ) {
      up.next = UPSTREAM_REFUSAL;
      const refused = await post(gw, { model, ...extra });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error.type, "invalid_request_error");
      assert.equal(
        refused.body.error.message,
        `${field}: Unsupported parameter: '${field}' is not supported with this model.`,
      );
      assert.equal(
        JSON.parse(up.requests.at(-1)!.body).reasoning_effort,
        field === "thinking" ? "low" : "high",
      );
    }
  });
});
