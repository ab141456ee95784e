import assert from "node:assert/strict";
import { scrubError } from "../errors.ts";
import { createScrubber } from "../secrets/scrubber.ts";
import { PolicyDenied } from "./denied.ts";

// A denial renamed into the client's terms, or masked, is still a denial by its rule: the usage record names it.
Deno.test("PolicyDenied: renamed or masked, it stays a denial by the same rule", () => {
  const key = "sk-upstream-Q2w3E4r5T6y7U8i9";
  const denial = new PolicyDenied(400, `Refused: ${key}`, "alias.content:keys", {
    type: "invalid_request_error",
    code: "content_policy_violation",
    param: "messages[0].content",
  });
  const masked = scrubError(denial, createScrubber([key]));
  assert.ok(masked instanceof PolicyDenied);
  assert.deepEqual([masked.rule, masked.message, masked.code], [
    "alias.content:keys",
    "Refused: ***",
    denial.code,
  ]);
  const renamed = denial.withParam("input[0].content", "Refused there.");
  assert.ok(renamed instanceof PolicyDenied);
  assert.deepEqual([renamed.rule, renamed.param, renamed.status], [
    "alias.content:keys",
    "input[0].content",
    400,
  ]);
});
