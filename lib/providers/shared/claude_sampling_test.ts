/**
 * Claude's sampling rules, for Anthropic and Claude on Bedrock: a temperature above 1 is refused by name (or
 * dropped and named), never clamped; beside a temperature, `top_p` (which Claude refuses with it) is left out
 * and named, whatever the provider's `unsupported_params`; so is `top_k` beside the thinking a
 * `reasoning_effort` turns on (Claude refuses the two together), and the thinking is sent.
 */
import assert from "node:assert/strict";
import { providerSchema } from "../../config/provider_schema.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import type { GatewayError } from "../../errors.ts";
import type { ChatRequest, JsonObject } from "../../openai/types.ts";
import { ANTHROPIC_PARAM_RULES, toAnthropicRequest } from "../anthropic/request.ts";
import { bedrockParamRules, toConverseRequest } from "../bedrock/request.ts";
import { chatParamsOn } from "../capabilities.ts";
import { claudeSamplingDropped } from "./claude_sampling.ts";
import { paramVerdict } from "./unsupported_params.ts";

const CLAUDE_RULES = [ANTHROPIC_PARAM_RULES, bedrockParamRules("us.anthropic.claude-sonnet-4-20250514-v1:0")];
const request = (fields: JsonObject): JsonObject => ({
  model: "m",
  messages: [{ role: "user", content: "Hi" }],
  ...fields,
});

Deno.test("claude sampling: a temperature above 1 is refused by name on Anthropic and Claude on Bedrock, or dropped", () => {
  for (const rules of CLAUDE_RULES) {
    for (const temperature of [1.01, 1.5, 2]) {
      const verdict = paramVerdict(request({ temperature }), rules, "error");
      assert.ok(verdict !== null && "refusal" in verdict, `${rules.vendor} ${temperature}`);
      const refusal: GatewayError = verdict.refusal;
      assert.equal(refusal.status, 400);
      assert.equal(refusal.param, "temperature");
      assert.equal(refusal.code, "unsupported_parameter");
      assert.match(refusal.message, /'temperature' above 1 \(Claude takes 0 to 1\)/);
      assert.deepEqual(paramVerdict(request({ temperature }), rules, "drop"), { dropped: ["temperature"] });
    }
    for (const temperature of [0, 0.7, 1]) {
      assert.equal(
        paramVerdict(request({ temperature }), rules, "error"),
        null,
        `${rules.vendor} ${temperature}`,
      );
    }
    // Beside reasoning_effort (which a temperature other than 1 excludes too), the temperature is named first.
    const both = paramVerdict(request({ temperature: 1.5, reasoning_effort: "low" }), rules, "error");
    assert.equal(both !== null && "refusal" in both ? both.refusal.param : null, "temperature");
  }
});

/** A target of a provider entry of `type` (with `unsupported_params: mode`) naming `model`. */
function target(type: "anthropic" | "bedrock", model: string, mode: "error" | "drop"): ResolvedTarget {
  const raw = type === "anthropic"
    ? { type, api_key: "k", unsupported_params: mode }
    : { type, region: "us-east-1", access_key_id: "a", secret_access_key: "s", unsupported_params: mode };
  return { provider: "p", model, providerConfig: providerSchema.parse(raw) } as ResolvedTarget;
}

const BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

Deno.test("claude sampling: beside a temperature, top_p is left out and named on Claude, whatever unsupported_params", () => {
  const both = request({ temperature: 1, top_p: 0.95 });
  for (const mode of ["error", "drop"] as const) {
    for (
      const t of [target("anthropic", "claude-sonnet-4-5", mode), target("bedrock", BEDROCK_CLAUDE, mode)]
    ) {
      assert.deepEqual(chatParamsOn(t, both as ChatRequest), { dropped: ["top_p"] }, `${t.model} ${mode}`);
      // Either alone is sent as asked.
      assert.equal(chatParamsOn(t, request({ temperature: 0.3 }) as ChatRequest), null);
      assert.equal(chatParamsOn(t, request({ top_p: 0.3 }) as ChatRequest), null);
    }
    // Other Bedrock models take both.
    assert.equal(chatParamsOn(target("bedrock", "amazon.nova-pro-v1:0", mode), both as ChatRequest), null);
  }
  // A temperature Claude cannot take is refused by name, or dropped; then top_p is the one sent.
  const hot = request({ temperature: 1.5, top_p: 0.9 }) as ChatRequest;
  const refused = chatParamsOn(target("anthropic", "claude-sonnet-4-5", "error"), hot);
  assert.equal(refused !== null && "refusal" in refused ? refused.refusal.param : null, "temperature");
  assert.deepEqual(chatParamsOn(target("anthropic", "claude-sonnet-4-5", "drop"), hot), {
    dropped: ["temperature"],
  });
  assert.deepEqual(claudeSamplingDropped(hot, ["temperature"]), []);
});

Deno.test("claude sampling: the Anthropic and Converse translations send the temperature alone beside top_p", () => {
  const both = request({ temperature: 0.7, top_p: 0.9, top_k: 40 }) as ChatRequest;
  const anthropic = toAnthropicRequest(both, { model: "claude-sonnet-4-5", defaultMaxTokens: 4096 });
  assert.deepEqual([anthropic.temperature, anthropic.top_p, anthropic.top_k], [0.7, undefined, 40]);
  const onlyTopP = toAnthropicRequest(request({ top_p: 0.9 }) as ChatRequest, {
    model: "claude-sonnet-4-5",
    defaultMaxTokens: 4096,
  });
  assert.equal(onlyTopP.top_p, 0.9);
  const converse = (model: string) =>
    toConverseRequest(request({ temperature: 0.7, top_p: 0.9 }) as ChatRequest, model);
  assert.deepEqual(converse(BEDROCK_CLAUDE).inferenceConfig, { temperature: 0.7 });
  assert.deepEqual(converse("amazon.nova-pro-v1:0").inferenceConfig, { temperature: 0.7, topP: 0.9 });
});

Deno.test("claude sampling: beside the thinking a reasoning_effort turns on, top_k is left out and named, the thinking kept", () => {
  const opts = { model: "claude-sonnet-4-5", defaultMaxTokens: 4096 };
  const thinking = request({ temperature: 1, top_k: 64, reasoning_effort: "medium" }) as ChatRequest;
  for (const mode of ["error", "drop"] as const) {
    for (
      const t of [target("anthropic", "claude-sonnet-4-5", mode), target("bedrock", BEDROCK_CLAUDE, mode)]
    ) {
      assert.deepEqual(chatParamsOn(t, thinking), { dropped: ["top_k"] }, `${t.model} ${mode}`);
      // With top_p beside the temperature, both go; without thinking, top_k is Claude's to take.
      const cli = request({
        temperature: 1,
        top_p: 0.95,
        top_k: 64,
        reasoning_effort: "high",
      }) as ChatRequest;
      assert.deepEqual(chatParamsOn(t, cli), { dropped: ["top_p", "top_k"] });
      for (const effort of [undefined, "none"]) {
        assert.equal(chatParamsOn(t, { ...thinking, reasoning_effort: effort }), null, `${effort}`);
      }
      // A temperature other than 1 keeps thinking off, as before: the effort goes, top_k stays.
      const cool = { ...thinking, temperature: 0.3 };
      const verdict = chatParamsOn(t, cool);
      const param = verdict !== null && "refusal" in verdict ? verdict.refusal.param : verdict?.dropped;
      assert.deepEqual(param, mode === "drop" ? ["reasoning_effort"] : "reasoning_effort");
    }
  }
  const anthropic = toAnthropicRequest(thinking, opts);
  assert.deepEqual([anthropic.thinking, anthropic.top_k], [
    { type: "enabled", budget_tokens: 8192 },
    undefined,
  ]);
  assert.equal(toAnthropicRequest({ ...thinking, reasoning_effort: "none" }, opts).top_k, 64);
  const converse = toConverseRequest(thinking, BEDROCK_CLAUDE);
  assert.deepEqual(converse.additionalModelRequestFields, {
    thinking: { type: "enabled", budget_tokens: 8192 },
  });
});
