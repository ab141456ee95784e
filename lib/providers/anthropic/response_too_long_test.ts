/**
 * Anthropic's too-long prompt ("prompt is too long: …", and "input length and `max_tokens` exceed context
 * limit: …") is OpenAI's `context_length_exceeded`, whole or mid-stream, its words kept.
 */
import assert from "node:assert/strict";
import { anthropicHttpError, anthropicStreamError } from "./response.ts";

const KEY = "sk-ant-api03-FAKEKEY0123456789abcdef";

Deno.test("anthropic errors: a prompt over the context window is OpenAI's context_length_exceeded, its words kept", () => {
  const body = (message: string) => ({ type: "error", error: { type: "invalid_request_error", message } });
  for (
    const message of [
      "prompt is too long: 208310 tokens > 200000 maximum",
      "input length and `max_tokens` exceed context limit: 198981 + 21333 > 200000, decrease input length or " +
      "`max_tokens` and try again",
    ]
  ) {
    for (
      const err of [
        anthropicHttpError("claude", 400, JSON.stringify(body(message)), new Headers(), [KEY]),
        anthropicStreamError("claude", body(message), [KEY]),
      ]
    ) {
      assert.equal(err.status, 400);
      assert.equal(err.code, "context_length_exceeded");
      assert.equal(err.type, "invalid_request_error");
      assert.equal(err.param, "messages");
      assert.equal(err.message, message);
      assert.equal(err.anthropicType, "invalid_request_error");
    }
  }
  // Another 400, or the same words under another type, is not one.
  const other = body("max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens");
  assert.equal(anthropicHttpError("claude", 400, JSON.stringify(other), new Headers(), []).code, null);
  const large = { type: "error", error: { type: "request_too_large", message: "prompt is too long" } };
  assert.notEqual(
    anthropicHttpError("claude", 413, JSON.stringify(large), new Headers(), []).code,
    "context_length_exceeded",
  );
});
