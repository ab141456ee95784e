/**
 * Bedrock's too-long prompt (a ValidationException in the model's words, or a `validationException` frame in a
 * stream) is OpenAI's `context_length_exceeded`, its words kept.
 */
import assert from "node:assert/strict";
import { bedrockHttpError, bedrockStreamException } from "./response.ts";

const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY";

Deno.test("bedrock errors: a ValidationException saying the input is too long is OpenAI's context_length_exceeded", () => {
  const validation = new Headers({
    "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/",
  });
  const tooLong = [
    "The model returned the following errors: Input is too long for requested model.",
    "The model returned the following errors: prompt is too long: 200049 tokens > 200000 maximum",
    "400 Bad Request: Too many input tokens. Max input tokens: 8192, request input token count: 9279 ",
    "This model's maximum context length is 8192 tokens. Please reduce the length of the prompt",
  ];
  for (const message of tooLong) {
    for (
      const err of [
        bedrockHttpError("aws", 400, validation, JSON.stringify({ message }), [SECRET]),
        bedrockStreamException("aws", "validationException", message, [SECRET]),
      ]
    ) {
      assert.equal(err.status, 400, message);
      assert.equal(err.code, "context_length_exceeded", message);
      assert.equal(err.type, "invalid_request_error");
      assert.equal(err.param, "messages");
      assert.equal(err.message, message);
    }
  }
  // Any other validation error is not one, nor the same words under another exception.
  const other = bedrockHttpError(
    "aws",
    400,
    validation,
    JSON.stringify({ message: "Malformed input request" }),
    [],
  );
  assert.equal(other.code, null);
  const throttled = bedrockStreamException("aws", "throttlingException", tooLong[0], []);
  assert.equal(throttled.code, "rate_limit_exceeded");
});
