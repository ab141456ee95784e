/**
 * A Gemini answer with HTTP 200 whose body is Google's error body in place of the answer is the upstream's error,
 * mapped as the same error inside a stream: for a passed-through `generateContent`, a translated chat and
 * embeddings; a body that is the answer is left alone.
 */
import assert from "node:assert/strict";
import { configSchema, type GeminiProviderConfig } from "../../config/schema.ts";
import type { GatewayError } from "../../errors.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import type { UpstreamCall } from "../types.ts";
import { geminiAdapter } from "./adapter.ts";

const KEY = "AIzaSyFAKE-error-body-0123456789";
const config = configSchema.parse({
  providers: { g: { type: "gemini", base_url: "https://gemini.example/v1beta", api_key: KEY } },
  models: {},
}).providers.g as GeminiProviderConfig;
const call: UpstreamCall = {
  target: { provider: "g", providerConfig: config, model: "gem-up" } as unknown as ResolvedTarget,
  signal: new AbortController().signal,
  requestId: "req_1",
};
const EXHAUSTED = {
  error: { code: 429, message: `Quota exceeded for ${KEY}`, status: "RESOURCE_EXHAUSTED" },
};

const limited = (err: GatewayError) => {
  assert.equal(err.status, 429);
  assert.equal(err.code, "rate_limit_exceeded");
  assert.ok(err.message.startsWith("Quota exceeded for"), err.message);
  assert.ok(!err.message.includes(KEY), err.message);
  return true;
};

Deno.test("gemini: a 200 with Google's error body in place of the answer is the upstream's error", async () => {
  const adapter = geminiAdapter(config);
  assert.throws(() => adapter.errorBody!(EXHAUSTED, call), limited);
  assert.throws(() => adapter.completion(JSON.stringify(EXHAUSTED), call), limited);
  const send = () => Promise.resolve({ json: structuredClone(EXHAUSTED), headers: new Headers() });
  await assert.rejects(adapter.embed({ model: "e", input: "hi" }, call, send), limited);
  // A status-less error is a 502 in its words; an answer is left alone, whatever its `error` says.
  assert.throws(
    () => adapter.errorBody!({ error: { message: "odd" } }, call),
    (err: GatewayError) => err.status === 502 && err.message === "odd",
  );
  adapter.errorBody!({ candidates: [], error: EXHAUSTED.error }, call);
  adapter.errorBody!({ promptFeedback: { blockReason: "SAFETY" }, error: EXHAUSTED.error }, call);
  adapter.errorBody!({ error: null }, call);
});
