/** OpenAI `reasoning_effort` → Claude's thinking on Bedrock, for the models that take only adaptive thinking. */
import assert from "node:assert/strict";
import { bedrockParamRules, toConverseRequest } from "./request.ts";
import { applyUnsupportedRules } from "../shared/unsupported_params.ts";
import { req } from "./request_test_helpers.ts";

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
