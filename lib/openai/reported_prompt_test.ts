import assert from "node:assert/strict";
import { reportedPromptOf, withReportedPrompt } from "./reported_prompt.ts";

Deno.test("reported prompt: carried on a chunk without changing what any client or comparison sees", () => {
  const chunk = { id: "c", choices: [] };
  const carried = withReportedPrompt({ ...chunk }, 320);
  assert.equal(reportedPromptOf(carried), 320);
  assert.equal(JSON.stringify(carried), JSON.stringify(chunk));
  assert.deepEqual(carried, chunk);
  assert.equal(reportedPromptOf(chunk), undefined);
  assert.equal(reportedPromptOf(null), undefined);
});
