import assert from "node:assert/strict";
import { promptOfUsage, reportedPromptOf, withReportedPrompt } from "./reported_prompt.ts";

Deno.test("reported prompt: carried on a chunk without changing what any client or comparison sees", () => {
  const chunk = { id: "c", choices: [] };
  const carried = withReportedPrompt({ ...chunk }, { prompt: 320, cachedRead: 20 });
  assert.deepEqual(reportedPromptOf(carried), { prompt: 320, cachedRead: 20 });
  assert.equal(JSON.stringify(carried), JSON.stringify(chunk));
  assert.deepEqual(carried, chunk);
  assert.equal(reportedPromptOf(chunk), undefined);
  assert.equal(reportedPromptOf(null), undefined);
});

Deno.test("reported prompt: a chat usage's prompt with its cache reads and writes, without its output", () => {
  assert.deepEqual(
    promptOfUsage({
      prompt_tokens: 320,
      completion_tokens: 0,
      total_tokens: 320,
      prompt_tokens_details: { cached_tokens: 200, cache_write_5m_tokens: 30, cache_write_1h_tokens: 10 },
    }),
    { prompt: 320, cachedRead: 200, cacheWrite5m: 30, cacheWrite1h: 10 },
  );
  assert.deepEqual(promptOfUsage({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 }), {
    prompt: 7,
  });
});
