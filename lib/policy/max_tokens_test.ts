import assert from "node:assert/strict";
import type { JsonObject } from "../openai/types.ts";
import { applyMaxTokensCeiling } from "./max_tokens.ts";

Deno.test("max_tokens ceiling: lowered, set when absent, left alone when under", () => {
  const cases: [JsonObject, boolean, JsonObject][] = [
    [{ max_tokens: 5000 }, true, { max_tokens: 1000 }],
    [{ max_completion_tokens: 5000 }, true, { max_completion_tokens: 1000 }],
    [{ max_tokens: 5000, max_completion_tokens: 3000 }, true, {
      max_tokens: 1000,
      max_completion_tokens: 1000,
    }],
    [{}, true, { max_completion_tokens: 1000 }],
    [{ max_tokens: null }, true, { max_tokens: null, max_completion_tokens: 1000 }],
    [{ max_tokens: 1000 }, false, { max_tokens: 1000 }],
    [{ max_completion_tokens: 20 }, false, { max_completion_tokens: 20 }],
    [{ max_tokens: "lots" }, false, { max_tokens: "lots" }],
  ];
  for (const [body, changed, after] of cases) {
    assert.equal(applyMaxTokensCeiling(body, 1000), changed, JSON.stringify(after));
    assert.deepEqual(body, after);
  }
});
