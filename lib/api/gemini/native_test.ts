/**
 * The native Gemini path's reading of `usageMetadata`: the same answer is recorded and priced the same as on the
 * translated path (a chat client of a Gemini target), whichever API the client spoke.
 */
import assert from "node:assert/strict";
import { nativeUsage } from "./native.ts";
import { costOfUsage, tokenClassesOf } from "../../pricing/cost.ts";
import { usageFrom } from "../../providers/gemini/response.ts";

const PRICE = { input: 1_000_000, output: 10_000_000, cached_input: 100_000 };

Deno.test("gemini native usage: tool-use prompt tokens are input, as on the translated path", () => {
  const metadata = {
    promptTokenCount: 1000,
    cachedContentTokenCount: 600,
    toolUsePromptTokenCount: 500,
    candidatesTokenCount: 150,
    thoughtsTokenCount: 50,
    totalTokenCount: 1700,
  };
  const native = nativeUsage(metadata);
  assert.equal(native?.prompt, 1500, "promptTokenCount + toolUsePromptTokenCount");
  assert.equal(native?.completion, 200);
  const translated = usageFrom(metadata)!;
  const classes = tokenClassesOf(translated.prompt_tokens, translated.completion_tokens, translated);
  assert.deepEqual(costOfUsage(PRICE, native!), costOfUsage(PRICE, classes));
  assert.equal(costOfUsage(PRICE, native!).input, 900, "900 uncached input tokens at $1");
});

Deno.test("gemini native usage: a count that is not a count makes the usage untrusted (the gateway counts)", () => {
  const fields = [
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "toolUsePromptTokenCount",
    "cachedContentTokenCount",
  ];
  for (const bad of [-5000, 2.5, 1e20, "100"]) {
    for (const field of fields) {
      assert.equal(
        nativeUsage({ promptTokenCount: 10, candidatesTokenCount: 5, [field]: bad }),
        undefined,
        field,
      );
    }
  }
  assert.deepEqual(nativeUsage({ promptTokenCount: 10 }), { prompt: 10, completion: 0 });
});
