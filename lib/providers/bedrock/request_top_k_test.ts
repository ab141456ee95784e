/**
 * Claude's own sampling parameter on Bedrock: `top_k`, which Converse has no field for, reaches Claude through
 * `additionalModelRequestFields` (as AWS's Converse examples for Claude send it); Bedrock's other models take
 * none, and the parameter rules refuse it by name or drop it.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { applyUnsupportedRules } from "../shared/unsupported_params.ts";
import { bedrockParamRules, toConverseRequest } from "./request.ts";
import { req } from "./request_test_helpers.ts";

const NOVA = bedrockParamRules("amazon.nova-pro-v1:0");

Deno.test("bedrock request: top_k reaches Claude through additionalModelRequestFields; other models refuse it", () => {
  const claude = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
  const request = req({ messages: [{ role: "user", content: "Hi" }], top_k: 64, temperature: 0.5 });
  assert.equal(applyUnsupportedRules(request, bedrockParamRules(claude), "error"), request);
  const body = toConverseRequest(request, claude);
  assert.deepEqual(body.additionalModelRequestFields, { top_k: 64 });
  assert.deepEqual(body.inferenceConfig, { temperature: 0.5 });
  // Not beside thinking, which Claude refuses it with (the parameter rules name it as dropped then).
  const thinking = toConverseRequest(
    req({ messages: request.messages, top_k: 64, reasoning_effort: "low" }),
    claude,
  );
  assert.deepEqual(Object.keys(thinking.additionalModelRequestFields as JsonObject), ["thinking"]);
  // Converse has no field for it and the other models take none: refused by name, or dropped.
  assert.throws(
    () => applyUnsupportedRules(request, NOVA, "error"),
    (err: unknown) => err instanceof GatewayError && err.param === "top_k",
  );
  const nova = toConverseRequest(applyUnsupportedRules(request, NOVA, "drop"), "amazon.nova-pro-v1:0");
  assert.equal("additionalModelRequestFields" in nova, false);
});
