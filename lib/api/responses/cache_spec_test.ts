import assert from "node:assert/strict";
import { responsesCacheSpec } from "./cache_spec.ts";

// The opt-in to a beta changes the answer (it turns the beta's fields on): an answer made with it is kept apart
// from one made without, and a request without it keeps the key it had before the opt-in was keyed.
Deno.test("responses cache spec: the openai-beta names are keyed when sent", () => {
  const body = { model: "m", input: "hi" };
  assert.deepEqual(responsesCacheSpec(body).keyed, { store: true });
  assert.deepEqual(responsesCacheSpec(body, { header: null, query: true }).keyed, { store: true });
  assert.deepEqual(responsesCacheSpec(body, { header: "responses_multi_agent=v1", query: true }).keyed, {
    store: true,
    beta: "responses_multi_agent=v1",
  });
});
