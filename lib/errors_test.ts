import assert from "node:assert/strict";
import { ClientGoneError, CONTEXT_LENGTH_EXCEEDED, GatewayError, scrubError } from "./errors.ts";
import { anthropicErrorBody } from "./anthropic_errors.ts";
import { googleErrorBody } from "./google_errors.ts";
import { createScrubber } from "./secrets/scrubber.ts";

const tooLong = (message: string) =>
  new GatewayError(400, message, {
    type: "invalid_request_error",
    code: CONTEXT_LENGTH_EXCEEDED,
    param: "messages",
  });

Deno.test("errors: a too-long prompt is said in Anthropic's words on the Messages API, with the counts when given", () => {
  const cases: [string, string][] = [
    [
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 130021 tokens.",
      "prompt is too long: 130021 tokens > 128000 maximum (This model's maximum context length is 128000 tokens. " +
      "However, your messages resulted in 130021 tokens.)",
    ],
    [
      "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
      "prompt is too long: 1200293 tokens > 1048576 maximum (The input token count (1200293) exceeds the maximum " +
      "number of tokens allowed (1048576).)",
    ],
    [
      "Too many input tokens. Max input tokens: 8192, request input token count: 9279",
      "prompt is too long: 9279 tokens > 8192 maximum (Too many input tokens. Max input tokens: 8192, request " +
      "input token count: 9279)",
    ],
    ["Input is too long for requested model.", "prompt is too long: Input is too long for requested model."],
    // Anthropic's own words are kept as they are.
    [
      "prompt is too long: 208310 tokens > 200000 maximum",
      "prompt is too long: 208310 tokens > 200000 maximum",
    ],
    [
      "input length and `max_tokens` exceed context limit: 198981 + 21333 > 200000",
      "input length and `max_tokens` exceed context limit: 198981 + 21333 > 200000",
    ],
  ];
  for (const [message, said] of cases) {
    const body = anthropicErrorBody(tooLong(message));
    assert.deepEqual(body.error, { type: "invalid_request_error", message: said });
    // The other APIs keep the message: OpenAI's code says it there, Google's 400 INVALID_ARGUMENT.
    assert.equal(tooLong(message).toBody().error.code, "context_length_exceeded");
    assert.deepEqual(googleErrorBody(tooLong(message)).error, {
      code: 400,
      message,
      status: "INVALID_ARGUMENT",
    });
  }
  // Any other error keeps its message.
  const other = new GatewayError(400, "max_tokens: 10000 > 4096", { type: "invalid_request_error" });
  assert.equal(anthropicErrorBody(other).error.message, "max_tokens: 10000 > 4096");
});

// An upstream may quote the gateway's own key back in its error; scrubError is the last step before that text
// reaches a client, so each field the client sees must come out masked, with the rest of the error kept.
Deno.test("errors: scrubError masks a secret quoted in the message, code and param, keeping status and headers", () => {
  const key = "sk-upstream-Q2w3E4r5T6y7U8i9";
  const scrubber = createScrubber([key]);
  const raw = new GatewayError(401, `Incorrect API key provided: ${key}.`, {
    type: "authentication_error",
    code: `bad_key_${key}`,
    param: key,
    headers: { "retry-after": "3" },
    anthropicType: "authentication_error",
  });
  const clean = scrubError(raw, scrubber);
  assert.equal(clean.message, "Incorrect API key provided: ***.");
  assert.equal(clean.code, "bad_key_***");
  assert.equal(clean.param, "***");
  assert.ok(!JSON.stringify(clean.toBody()).includes("Q2w3E4r5"), JSON.stringify(clean.toBody()));
  assert.equal(clean.status, 401);
  assert.equal(clean.type, "authentication_error");
  assert.equal(clean.anthropicType, "authentication_error");
  assert.deepEqual(clean.headers, { "retry-after": "3" });
  // Nothing to mask: the same error back, untouched.
  const plain = new GatewayError(502, "upstream said no");
  assert.equal(scrubError(plain, scrubber), plain);
});

// What happens after an error is masked is decided by its class: a client gone is not the target's failure.
Deno.test("errors: scrubError keeps the error's class (a client gone stays one)", () => {
  const key = "sk-upstream-Q2w3E4r5T6y7U8i9";
  const scrubber = createScrubber([key]);
  const gone = scrubError(
    new ClientGoneError({ status: 1008, code: "policy", message: `bye ${key}` }),
    scrubber,
  );
  assert.ok(gone instanceof ClientGoneError);
  assert.deepEqual([gone.status, gone.code, gone.message], [1008, "policy", "bye ***"]);
});
