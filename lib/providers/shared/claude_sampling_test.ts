/**
 * Claude's temperature range (0 to 1) as a parameter rule, for Anthropic and Claude on Bedrock: a temperature
 * above 1 is refused by name (or dropped and named), never clamped.
 */
import assert from "node:assert/strict";
import type { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { ANTHROPIC_PARAM_RULES } from "../anthropic/request.ts";
import { bedrockParamRules } from "../bedrock/request.ts";
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
