/**
 * Gemini's countTokens request (from the adapter, so it is the chat translation the gateway really sends) and
 * answer, as in Google's reference: `generateContentRequest` holding the whole request and naming its model,
 * `totalTokens` in the answer.
 */
import assert from "node:assert/strict";
import type { GeminiProviderConfig } from "../../config/schema.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import { GatewayError } from "../../errors.ts";
import type { ChatRequest, JsonObject } from "../../openai/types.ts";
import type { UpstreamCall } from "../types.ts";
import { geminiAdapter } from "./adapter.ts";
import { countTokensBody, geminiInputTokens } from "./count_tokens.ts";

const CONFIG = {
  type: "gemini",
  base_url: "https://generativelanguage.googleapis.com/v1beta/",
  api_key: "AIzaSy-test-key-0123456789",
  headers: {},
  timeouts: {},
  unsupported_params: "error",
} as unknown as GeminiProviderConfig;

function countRequest(chat: ChatRequest, model = "gemini-2.5-flash", gemini?: JsonObject) {
  const call: UpstreamCall = {
    target: { provider: "gem", model } as unknown as ResolvedTarget,
    signal: new AbortController().signal,
    requestId: "req_1",
  };
  const request = geminiAdapter(CONFIG).countTokensRequest!({ chat, gemini }, call);
  assert.ok(request !== null);
  return { ...request, json: JSON.parse(request.body as string) };
}

Deno.test("gemini countTokens: the whole GenerateContentRequest, naming its model", () => {
  const request = countRequest({
    model: "alias",
    messages: [{ role: "developer", content: "Be brief." }, {
      role: "user",
      content: "The quick brown fox.",
    }],
    temperature: 0.5,
  });
  assert.equal(
    request.url,
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:countTokens",
  );
  assert.equal(request.headers["x-goog-api-key"], undefined, "the key is added by the authorize step");
  assert.deepEqual(request.json, {
    generateContentRequest: {
      model: "models/gemini-2.5-flash",
      contents: [{ role: "user", parts: [{ text: "The quick brown fox." }] }],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      generationConfig: { temperature: 0.5 },
    },
  });
});

Deno.test("gemini countTokens: parameters Gemini cannot take are dropped, not refused; tuned models keep their name", () => {
  const request = countRequest(
    { model: "alias", messages: [{ role: "user", content: "hi" }], logit_bias: { "1": 2 }, stream: true },
    "tunedModels/my-model",
  );
  assert.match(request.url, /\/tunedModels\/my-model:countTokens$/);
  assert.equal(request.json.generateContentRequest.model, "tunedModels/my-model");
  assert.equal("logit_bias" in request.json.generateContentRequest, false);
  assert.deepEqual(countTokensBody({ contents: [] }, "models/x"), {
    generateContentRequest: { model: "models/x", contents: [] },
  });
});

Deno.test("gemini countTokens: a Gemini API request is counted as a Gemini target gets it, not from the chat form", () => {
  const native = {
    cachedContent: "cachedContents/abc",
    contents: [{
      role: "user",
      parts: [{ text: "Sum up" }, { fileData: { mimeType: "application/pdf", fileUri: "files/xyz" } }],
    }],
  };
  const request = countRequest(
    { model: "alias", messages: [{ role: "user", content: "Sum up" }] },
    undefined,
    native,
  );
  assert.deepEqual(request.json, { generateContentRequest: { model: "models/gemini-2.5-flash", ...native } });
});

Deno.test("gemini countTokens: the answer's totalTokens; anything else is a 502", () => {
  assert.equal(geminiInputTokens({ totalTokens: 10, promptTokensDetails: [] }, "gem"), 10);
  for (const bad of [{}, { totalTokens: "10" }, { totalTokens: -3 }, { total_tokens: 10 }]) {
    assert.throws(() => geminiInputTokens(bad, "gem"), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 502);
      return true;
    });
  }
});
