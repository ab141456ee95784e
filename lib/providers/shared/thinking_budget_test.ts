/** Which Claude models take only adaptive thinking, and what is sent for them. */
import assert from "node:assert/strict";
import { claudeAdaptiveOnly, claudeThinking } from "./thinking_budget.ts";

Deno.test("thinking budget: Claude 4.7 and later (and Mythos) take only adaptive thinking, on Anthropic and Bedrock ids", () => {
  const adaptive = [
    "claude-opus-4-7",
    "claude-opus-4-7-20260416",
    "claude-opus-4-8",
    "claude-opus-5",
    "claude-sonnet-5-20270101",
    "claude-mythos-preview",
    "anthropic.claude-opus-4-7",
    "us.anthropic.claude-opus-4-7-v1:0",
    "global.anthropic.claude-opus-5-v1:0",
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-7-v1:0",
  ];
  for (const model of adaptive) assert.ok(claudeAdaptiveOnly(model), model);
  const manual = [
    "claude-opus-4-6",
    "anthropic.claude-opus-4-6-v1",
    "claude-sonnet-4-5-20250929",
    "claude-opus-4-20250514",
    "us.anthropic.claude-sonnet-4-20250514-v1:0",
    "claude-3-7-sonnet-20250219",
    "anthropic.claude-3-5-haiku-20241022-v1:0",
    "anthropic.claude-v2:1",
    "claude-ok",
  ];
  for (const model of manual) assert.ok(!claudeAdaptiveOnly(model), model);
});

Deno.test("thinking budget: adaptive thinking sends an effort, no budget, and keeps a client's limit as it is", () => {
  const efforts: [string, string][] = [["minimal", "low"], ["low", "low"], ["medium", "medium"], [
    "high",
    "high",
  ]];
  for (const [effort, sent] of efforts) {
    const thinking = claudeThinking(effort, undefined, "max_tokens", 4096, "claude-opus-4-7");
    assert.deepEqual(thinking?.thinking, { type: "adaptive" }, effort);
    assert.deepEqual(thinking?.outputConfig, { effort: sent }, effort);
  }
  // No budget to fit under the limit, so a small one is no 400.
  assert.equal(claudeThinking("high", 500, "max_tokens", 4096, "claude-opus-5")?.maxTokens, 500);
  assert.equal(claudeThinking("none", undefined, "max_tokens", 4096, "claude-opus-5"), null);
  // Older models: manual thinking, as before.
  const manual = claudeThinking("medium", undefined, "max_tokens", 4096, "claude-sonnet-4-5");
  assert.deepEqual(manual, { thinking: { type: "enabled", budget_tokens: 8192 }, maxTokens: 4096 + 8192 });
});
