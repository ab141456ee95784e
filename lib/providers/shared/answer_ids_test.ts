import assert from "node:assert/strict";
import { createScrubber, type Scrubber } from "../../secrets/scrubber.ts";
import type { JsonObject } from "../../openai/types.ts";
import { idScrub, scrubAnswerIds } from "./answer_ids.ts";

const KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";

Deno.test("answer ids: identifiers are scrubbed where each API keeps them; the content is left as the model said it", () => {
  const scrubber = createScrubber([KEY]);
  const chunk = scrubAnswerIds({
    id: `chatcmpl-${KEY}`,
    model: `m-${KEY}`,
    system_fingerprint: `fp_${KEY}`,
    choices: [{ index: 0, delta: { content: `the key is ${KEY}` } }],
  }, scrubber);
  assert.deepEqual(chunk, {
    id: "chatcmpl-***",
    model: "m-***",
    system_fingerprint: "fp_***",
    choices: [{ index: 0, delta: { content: `the key is ${KEY}` } }],
  });
  const event = scrubAnswerIds({
    type: "response.completed",
    response: { id: `resp_${KEY}`, output: [{ id: `msg_${KEY}`, type: "message" }] },
  }, scrubber);
  assert.equal(JSON.stringify(event).includes(KEY.slice(8, 20)), false);
  const start = scrubAnswerIds(
    { type: "message_start", message: { id: `msg_${KEY}`, model: "claude" } },
    scrubber,
  );
  assert.deepEqual(start, { type: "message_start", message: { id: "msg_***", model: "claude" } });
  const gemini = scrubAnswerIds({ responseId: KEY, modelVersion: "gem" }, scrubber);
  assert.deepEqual(gemini, { responseId: "***", modelVersion: "gem" });
});

Deno.test("answer ids: a stream's repeated clean id is tested once, and nothing is asked without a secret", () => {
  const inner = createScrubber([KEY]);
  let tests = 0;
  const counting: Scrubber = { ...inner, test: (t) => (tests++, inner.test(t)) };
  const scrub = idScrub(counting);
  for (let i = 0; i < 100; i++) scrub({ id: "chatcmpl-1", model: "m", choices: [] } as JsonObject);
  assert.equal(tests, 2);
  const none = { id: `x-${KEY}` };
  assert.equal(scrubAnswerIds(none, createScrubber([])).id, `x-${KEY}`);
  assert.equal(scrubAnswerIds(none, undefined).id, `x-${KEY}`);
});
