/** OpenAI `reasoning_effort` → Claude's thinking on Bedrock, for the models that take only adaptive thinking. */
import assert from "node:assert/strict";
import { bedrockParamRules, toConverseRequest } from "./request.ts";
import { applyUnsupportedRules } from "../shared/unsupported_params.ts";
import { req } from "./request_test_helpers.ts";
import { GatewayError } from "../../errors.ts";
import { claudeSamplingDropped } from "../shared/claude_sampling.ts";

Deno.test("bedrock request: reasoning_effort on Claude 4.7 and later → adaptive thinking with output_config.effort", () => {
  const opus = "us.anthropic.claude-opus-4-7-v1:0";
  const request = req({ reasoning_effort: "minimal", messages: [{ role: "user", content: "Hi" }] });
  assert.equal(applyUnsupportedRules(request, bedrockParamRules(opus), "error"), request);
  const body = toConverseRequest(request, opus);
  assert.deepEqual(body.additionalModelRequestFields, {
    thinking: { type: "adaptive" },
    output_config: { effort: "low" },
  });
  assert.deepEqual(body.inferenceConfig, { maxTokens: 4096 + 1024 });
  const bounded = toConverseRequest({ ...request, max_completion_tokens: 600 }, opus);
  assert.deepEqual(bounded.inferenceConfig, { maxTokens: 600 });
});

Deno.test("bedrock request: no thinking beside a final assistant turn (a prefill), and nothing refused for it", () => {
  const prefill = [{ role: "user", content: "Write a haiku" }, { role: "assistant", content: "Autumn" }];
  for (const model of ["us.anthropic.claude-sonnet-4-20250514-v1:0", "us.anthropic.claude-opus-4-7-v1:0"]) {
    const request = req({ reasoning_effort: "high", temperature: 0.2, messages: prefill });
    assert.equal(applyUnsupportedRules(request, bedrockParamRules(model), "error"), request, model);
    const body = toConverseRequest(request, model);
    assert.equal("additionalModelRequestFields" in body, false, model);
    assert.deepEqual(body.inferenceConfig, { temperature: 0.2 }, model);
  }
});

Deno.test("bedrock request: a blank final assistant turn is left out, so the effort beside a temperature is judged as sent", () => {
  const model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
  const messages = [{ role: "user", content: "Write a haiku" }, { role: "assistant", content: " " }];
  const request = req({ reasoning_effort: "low", temperature: 0.2, messages });
  assert.throws(
    () => applyUnsupportedRules(request, bedrockParamRules(model), "error"),
    (e: unknown) => e instanceof GatewayError && e.status === 400 && e.param === "reasoning_effort",
  );
  const dropped = applyUnsupportedRules(request, bedrockParamRules(model), "drop");
  const body = toConverseRequest(dropped, model);
  assert.equal("additionalModelRequestFields" in body, false);
  assert.deepEqual(body.inferenceConfig, { temperature: 0.2 });
  assert.deepEqual(body.messages, [{ role: "user", content: [{ text: "Write a haiku" }] }]);
  // Thinking on after it: top_k is left out, and named.
  const withTopK = req({ reasoning_effort: "low", top_k: 5, messages });
  assert.deepEqual(claudeSamplingDropped(withTopK), ["top_k"]);
  assert.deepEqual(toConverseRequest(withTopK, model).additionalModelRequestFields, {
    thinking: { type: "enabled", budget_tokens: 2048 },
  });
});

Deno.test("bedrock request: a prefill followed by a system message or a blank user turn keeps thinking off, and nothing is refused", () => {
  const model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
  const prefill = [{ role: "user", content: "Write a haiku" }, { role: "assistant", content: "Autumn" }];
  for (const last of [{ role: "system", content: "Be brief." }, { role: "user", content: "" }]) {
    const request = req({ reasoning_effort: "low", temperature: 0.2, messages: [...prefill, last] });
    assert.equal(applyUnsupportedRules(request, bedrockParamRules(model), "error"), request, last.role);
    const body = toConverseRequest(request, model);
    assert.equal("additionalModelRequestFields" in body, false, last.role);
    assert.deepEqual(body.inferenceConfig, { temperature: 0.2 }, last.role);
  }
});
