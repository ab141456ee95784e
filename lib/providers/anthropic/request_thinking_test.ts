/** OpenAI `reasoning_effort` → Anthropic extended thinking. */
import assert from "node:assert/strict";
import { assertGatewayError, CONFIG, MODEL, translate, WEATHER_TOOL } from "./request_test_helpers.ts";
import { buildAnthropicBody } from "./adapter.ts";
import type { ChatRequest } from "../../openai/types.ts";

Deno.test("anthropic request: reasoning_effort → thinking budget; max_tokens leaves the default answer room", () => {
  const base = { messages: [{ role: "user", content: "Hi" }] };
  const budgets: [string, number][] = [["minimal", 1024], ["low", 2048], ["medium", 8192], ["high", 24576]];
  for (const [effort, budget] of budgets) {
    const body = translate({ ...base, reasoning_effort: effort });
    assert.deepEqual(body.thinking, { type: "enabled", budget_tokens: budget }, effort);
    assert.equal(body.max_tokens, 4096 + budget, effort);
  }
  assert.deepEqual(translate({ ...base, reasoning_effort: "none" }), {
    model: MODEL,
    max_tokens: 4096,
    messages: [{ role: "user", content: "Hi" }],
  });
});

Deno.test("anthropic request: a client's token limit bounds thinking and answer together", () => {
  const base = { messages: [{ role: "user", content: "Hi" }] };
  const medium = translate({ ...base, reasoning_effort: "medium", max_completion_tokens: 20000 });
  assert.deepEqual([medium.max_tokens, medium.thinking], [20000, { type: "enabled", budget_tokens: 8192 }]);
  const capped = translate({ ...base, reasoning_effort: "high", max_tokens: 3000 });
  assert.deepEqual([capped.max_tokens, capped.thinking], [3000, { type: "enabled", budget_tokens: 2999 }]);
  assertGatewayError(
    () => translate({ ...base, reasoning_effort: "low", max_completion_tokens: 1024 }),
    400,
    "max_completion_tokens",
  );
  assertGatewayError(
    () => translate({ ...base, reasoning_effort: "low", max_tokens: 500 }),
    400,
    "max_tokens",
  );
});

Deno.test("anthropic request: no thinking while a tool loop is under way (no signed thinking block to send)", () => {
  const toolLoop = [
    { role: "user", content: "Weather in Paris?" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: "{}" } }],
    },
    { role: "tool", tool_call_id: "toolu_1", content: "sunny" },
  ];
  const during = translate({ messages: toolLoop, tools: [WEATHER_TOOL], reasoning_effort: "high" });
  assert.equal("thinking" in during, false);
  assert.equal(during.max_tokens, 4096);
  const after = translate({
    messages: [...toolLoop, { role: "assistant", content: "It is sunny." }, {
      role: "user",
      content: "And Rome?",
    }],
    tools: [WEATHER_TOOL],
    reasoning_effort: "high",
  });
  assert.deepEqual(after.thinking, { type: "enabled", budget_tokens: 24576 }, "a finished loop thinks again");
});

Deno.test("anthropic request: reasoning_effort beside a forced tool or changed sampling is refused, or dropped by name", () => {
  const base = { messages: [{ role: "user", content: "Weather in Paris?" }], reasoning_effort: "low" };
  const named = { type: "function", function: { name: "get_weather" } };
  const excluding = [
    { tools: [WEATHER_TOOL], tool_choice: "required" },
    { tools: [WEATHER_TOOL], tool_choice: named },
    { temperature: 0.2 },
    { top_p: 0.9 },
  ];
  const drop = { ...CONFIG, unsupported_params: "drop" as const };
  for (const extra of excluding) {
    assertGatewayError(
      () => translate({ ...base, ...extra }),
      400,
      "reasoning_effort",
      "unsupported_parameter",
    );
    const body = translate({ ...base, ...extra }, drop);
    assert.equal("thinking" in body, false, JSON.stringify(extra));
    assert.equal(body.max_tokens, 4096, JSON.stringify(extra));
  }
  const forced = translate(
    { ...base, tools: [WEATHER_TOOL], tool_choice: "required", temperature: 0.2 },
    drop,
  );
  assert.deepEqual([forced.tool_choice, forced.temperature], [{ type: "any" }, 0.2]);
  // What thinking allows: temperature 1, top_p from 0.95, tool_choice auto.
  const allowed = translate({
    ...base,
    tools: [WEATHER_TOOL],
    tool_choice: "auto",
    temperature: 1,
    top_p: 0.95,
  });
  assert.deepEqual(allowed.thinking, { type: "enabled", budget_tokens: 2048 });
  // A top_k goes instead of the thinking (Claude refuses the two together; `claude_sampling.ts` names it).
  const topK = translate({ ...base, top_k: 5 });
  assert.deepEqual([topK.thinking, topK.top_k], [{ type: "enabled", budget_tokens: 2048 }, undefined]);
  // A forced answer tool leaves thinking off anyway: the client's temperature is no reason to refuse.
  const format = translate({ ...base, temperature: 0.2, response_format: { type: "json_object" } });
  assert.equal("thinking" in format, false);
  assert.equal(format.temperature, 0.2);
});

Deno.test("anthropic request: reasoning_effort on Claude 4.7 and later → adaptive thinking with output_config.effort", () => {
  const request = { model: "alias", messages: [{ role: "user", content: "Hi" }], reasoning_effort: "medium" };
  const body = buildAnthropicBody(CONFIG, request as ChatRequest, "claude-opus-4-7");
  assert.deepEqual(body.thinking, { type: "adaptive" });
  assert.deepEqual(body.output_config, { effort: "medium" });
  assert.equal(body.max_tokens, 4096 + 8192);
  const bounded = buildAnthropicBody(
    CONFIG,
    { ...request, max_tokens: 800 } as ChatRequest,
    "claude-opus-4-7",
  );
  assert.deepEqual([bounded.max_tokens, bounded.thinking], [800, { type: "adaptive" }]);
  // Older models keep manual thinking and no output_config.
  assert.equal("output_config" in translate({ ...request }), false);
});

Deno.test("anthropic request: no thinking beside a final assistant message (a prefill), manual or adaptive", () => {
  const prefill = [{ role: "user", content: "Write a haiku" }, { role: "assistant", content: "Autumn" }];
  const manual = translate({ messages: prefill, reasoning_effort: "low" });
  assert.equal("thinking" in manual, false);
  assert.equal(manual.max_tokens, 4096);
  const request = { model: "alias", messages: prefill, reasoning_effort: "high" } as ChatRequest;
  const adaptive = buildAnthropicBody(CONFIG, request, "claude-opus-4-7");
  assert.equal("thinking" in adaptive, false);
  assert.equal("output_config" in adaptive, false);
  // Thinking is off anyway, so nothing beside it is refused: the temperature is sent as asked.
  const warm = translate({ messages: prefill, reasoning_effort: "low", temperature: 0.2 });
  assert.deepEqual(["thinking" in warm, warm.temperature], [false, 0.2]);
});

Deno.test("anthropic request: a top_p under 0.95 beside a temperature of 1 does not keep thinking off (it is not sent)", () => {
  const body = translate({
    messages: [{ role: "user", content: "Hi" }],
    reasoning_effort: "low",
    temperature: 1,
    top_p: 0.9,
  });
  assert.deepEqual(body.thinking, { type: "enabled", budget_tokens: 2048 });
  assert.deepEqual([body.temperature, "top_p" in body], [1, false]);
});

Deno.test("anthropic request: a top_p of exactly 0.95 (Claude's least beside thinking) keeps thinking on and is sent", () => {
  const body = translate({
    messages: [{ role: "user", content: "Hi" }],
    reasoning_effort: "low",
    top_p: 0.95,
  });
  assert.deepEqual([body.thinking, body.top_p], [{ type: "enabled", budget_tokens: 2048 }, 0.95]);
});
