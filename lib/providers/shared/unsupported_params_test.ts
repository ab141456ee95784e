import assert from "node:assert/strict";
import { applyUnsupportedRules, type ParamRules, paramVerdict, STYLE_HINTS } from "./unsupported_params.ts";
import { ANTHROPIC_PARAM_RULES } from "../anthropic/request.ts";
import { geminiParamRules } from "../gemini/request.ts";
import { bedrockParamRules } from "../bedrock/request.ts";

const RULES: ParamRules = {
  vendor: "Test",
  unsupported: { seed: () => true },
  known: new Set(["model", "messages"]),
  hints: STYLE_HINTS,
};
const HI = { model: "m", messages: [{ role: "user", content: "hi" }] };

Deno.test("a style hint is dropped in either mode, never refused", () => {
  for (const mode of ["error", "drop"] as const) {
    assert.deepEqual(paramVerdict({ ...HI, verbosity: "low" }, RULES, mode), { dropped: ["verbosity"] });
    assert.deepEqual(applyUnsupportedRules({ ...HI, verbosity: "low" }, RULES, mode), HI);
  }
  assert.equal(paramVerdict({ ...HI, verbosity: null }, RULES, "error"), null);
});

Deno.test("beside a refused parameter the refusal wins; in drop mode the hint comes after the others", () => {
  const both = { ...HI, verbosity: "low", seed: 1 };
  const verdict = paramVerdict(both, RULES, "error");
  assert.ok(verdict !== null && "refusal" in verdict);
  assert.equal(verdict.refusal.param, "seed");
  assert.deepEqual(paramVerdict(both, RULES, "drop"), { dropped: ["seed", "verbosity"] });
});

Deno.test("Anthropic, Gemini and Bedrock (Claude and others) treat verbosity as a style hint", () => {
  const request = { ...HI, verbosity: "high" };
  for (
    const rules of [
      ANTHROPIC_PARAM_RULES,
      geminiParamRules(false),
      geminiParamRules(true),
      bedrockParamRules("anthropic.claude-sonnet-4-5-20250929-v1:0"),
      bedrockParamRules("amazon.nova-pro-v1:0"),
    ]
  ) {
    assert.deepEqual(paramVerdict(request, rules, "error"), { dropped: ["verbosity"] }, rules.vendor);
  }
});
