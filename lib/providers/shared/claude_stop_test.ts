/**
 * Claude refuses a stop sequence that is empty or only whitespace ("stop_sequences: each stop sequence must
 * contain non-whitespace"): on Anthropic and Claude on Bedrock such a `stop` is a value the target cannot honour,
 * refused by name before routing (so an alias's other target serves it), or dropped and named.
 */
import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { ANTHROPIC_PARAM_RULES } from "../anthropic/request.ts";
import { bedrockParamRules } from "../bedrock/request.ts";
import { paramVerdict } from "./unsupported_params.ts";

const CLAUDE_RULES = [ANTHROPIC_PARAM_RULES, bedrockParamRules("us.anthropic.claude-sonnet-4-20250514-v1:0")];
const request = (stop: unknown): JsonObject => ({
  model: "m",
  messages: [{ role: "user", content: "Hi" }],
  stop,
});

Deno.test("claude stop: a blank stop sequence is refused by name on Anthropic and Claude on Bedrock, or dropped", () => {
  for (const rules of CLAUDE_RULES) {
    for (const stop of ["\n", "", " ", ["END", "\n\n"], ["\t"]]) {
      const verdict = paramVerdict(request(stop), rules, "error");
      assert.ok(verdict !== null && "refusal" in verdict, `${rules.vendor} ${JSON.stringify(stop)}`);
      assert.equal(verdict.refusal.status, 400);
      assert.equal(verdict.refusal.param, "stop");
      assert.equal(verdict.refusal.code, "unsupported_parameter");
      assert.match(verdict.refusal.message, /'stop' with an empty or whitespace-only sequence/);
      assert.deepEqual(paramVerdict(request(stop), rules, "drop"), { dropped: ["stop"] });
    }
    // Sequences with something besides whitespace are Claude's to take, whitespace around them included.
    for (const stop of ["END", ["\nHuman:", " ."], []]) {
      assert.equal(
        paramVerdict(request(stop), rules, "error"),
        null,
        `${rules.vendor} ${JSON.stringify(stop)}`,
      );
    }
  }
  // Bedrock's other models are not Claude, and not known to refuse them.
  assert.equal(paramVerdict(request("\n"), bedrockParamRules("amazon.nova-pro-v1:0"), "error"), null);
});
