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
import { geminiHttpError, geminiStreamError, keptDetails } from "./error.ts";

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

const RETRY = { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "41s" };
const QUOTA = {
  "@type": "type.googleapis.com/google.rpc.QuotaFailure",
  violations: [{ quotaId: "GenerateRequestsPerDayPerProjectPerModel-FreeTier", quotaValue: "250" }],
};
const HELP = { "@type": "type.googleapis.com/google.rpc.Help", links: [{ url: "https://ai.google.dev/x" }] };

Deno.test("gemini error: Google's details are kept for a client of Google's shape, scrubbed; none for its key", () => {
  const body = (code: number, status: string, details: unknown[]) =>
    JSON.stringify({ error: { code, message: "no", status, details } });
  const secret = { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "X", metadata: { key: KEY } };
  const limited = geminiHttpError(
    "g",
    429,
    body(429, "RESOURCE_EXHAUSTED", [QUOTA, RETRY, secret]),
    new Headers(),
    [
      KEY,
    ],
  );
  assert.deepEqual(limited.googleDetails?.slice(0, 2), [QUOTA, RETRY]);
  assert.ok(!JSON.stringify(limited.googleDetails).includes(KEY));
  // Mid-stream, as over HTTP.
  const streamed = geminiStreamError("g", JSON.parse(body(429, "RESOURCE_EXHAUSTED", [RETRY])), [KEY]);
  assert.deepEqual(streamed.googleDetails, [RETRY]);
  // The gateway's key refused: the reworded error is the gateway's, without the details of its key.
  const denied = geminiHttpError("g", 403, body(403, "PERMISSION_DENIED", [secret]), new Headers(), [KEY]);
  assert.equal(denied.googleDetails, null);
  assert.equal(
    geminiHttpError("g", 400, body(400, "INVALID_ARGUMENT", []), new Headers(), []).googleDetails,
    null,
  );
});

Deno.test("gemini error: details over the bound keep what a retry is decided by first, in the order sent", () => {
  const big = { "@type": "type.googleapis.com/google.rpc.DebugInfo", detail: "x".repeat(1900) };
  assert.deepEqual(keptDetails([HELP, big, QUOTA, RETRY], []), [HELP, QUOTA, RETRY]);
  assert.deepEqual(keptDetails([{ ...big, detail: "x".repeat(5000) }], []), null);
  assert.deepEqual(keptDetails([], []), null);
});
