/**
 * Converse response → OpenAI, stop reasons, usage and errors. The tool-use response is AWS's documented example
 * (tool `top_song`, id `tooluse_kZJMlvQmRJ6eAyJE5GIl7Q`); stop reasons are the MessageStopEvent valid values
 * (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_MessageStopEvent.html); error names and statuses
 * are the Converse API's documented errors.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import {
  bedrockHttpError,
  bedrockStreamException,
  fromConverseResponse,
  mapStopReason,
  mapUsage,
} from "./response.ts";

const TOOL_USE_RESPONSE = {
  output: {
    message: {
      role: "assistant",
      content: [{
        toolUse: { toolUseId: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", name: "top_song", input: { sign: "WZPZ" } },
      }],
    },
  },
  stopReason: "tool_use",
  usage: { inputTokens: 375, outputTokens: 50, totalTokens: 425 },
  metrics: { latencyMs: 1240 },
};

const TEXT_RESPONSE = {
  output: {
    message: {
      role: "assistant",
      content: [{ text: "The most popular song on WZPZ is " }, { text: "Elemental Hotel by 8 Storey Hike." }],
    },
  },
  stopReason: "end_turn",
  usage: { inputTokens: 432, outputTokens: 20, totalTokens: 452 },
  metrics: { latencyMs: 800 },
};

Deno.test("bedrock response: text answer", () => {
  const out = fromConverseResponse("aws", TEXT_RESPONSE, "anthropic.claude-3-haiku-20240307-v1:0");
  assert.equal(out.object, "chat.completion");
  assert.match(out.id, /^chatcmpl-/);
  assert.equal(out.model, "anthropic.claude-3-haiku-20240307-v1:0");
  assert.deepEqual(out.choices, [{
    index: 0,
    message: {
      role: "assistant",
      content: "The most popular song on WZPZ is Elemental Hotel by 8 Storey Hike.",
      refusal: null,
    },
    logprobs: null,
    finish_reason: "stop",
  }]);
  assert.deepEqual(out.usage, { prompt_tokens: 432, completion_tokens: 20, total_tokens: 452 });
});

Deno.test("bedrock response: AWS's tool-use example becomes tool_calls", () => {
  const out = fromConverseResponse("aws", TOOL_USE_RESPONSE, "m");
  assert.deepEqual(out.choices[0].message, {
    role: "assistant",
    content: null,
    refusal: null,
    tool_calls: [{
      id: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
      type: "function",
      function: { name: "top_song", arguments: '{"sign":"WZPZ"}' },
    }],
  });
  assert.equal(out.choices[0].finish_reason, "tool_calls");
});

Deno.test("bedrock response: every documented stop reason", () => {
  const table: [string, string][] = [
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["max_tokens", "length"],
    ["model_context_window_exceeded", "length"],
    ["tool_use", "tool_calls"],
    ["guardrail_intervened", "content_filter"],
    ["content_filtered", "content_filter"],
    // Not known to have finished: cut off, as Anthropic's table reads a reason it does not know (never `stop`).
    ["something_new", "length"],
  ];
  for (const [reason, finish] of table) assert.equal(mapStopReason("aws", reason), finish, reason);
  assert.equal(mapStopReason("aws", undefined), "stop", "no stop reason at all");
});

Deno.test("bedrock response: a malformed tool use or output is a 502, as Gemini's malformed call, not a stop", () => {
  for (const [reason, what] of [["malformed_tool_use", "tool call"], ["malformed_model_output", "answer"]]) {
    const body = {
      ...TEXT_RESPONSE,
      output: { message: { role: "assistant", content: [] } },
      stopReason: reason,
    };
    assert.throws(() => fromConverseResponse("aws", body, "m"), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 502);
      assert.equal(err.code, "upstream_malformed_function_call");
      assert.equal(err.message, `Provider "aws" produced an unusable ${what} (${reason}).`);
      return true;
    }, reason);
  }
});

Deno.test("bedrock response: usage with prompt caching", () => {
  assert.deepEqual(
    mapUsage({ inputTokens: 10, outputTokens: 5, totalTokens: 115, cacheReadInputTokens: 100 }),
    {
      prompt_tokens: 110,
      completion_tokens: 5,
      total_tokens: 115,
      prompt_tokens_details: { cached_tokens: 100 },
    },
  );
  assert.deepEqual(mapUsage({ inputTokens: 10, outputTokens: 5, cacheWriteInputTokens: 50 }), {
    prompt_tokens: 60,
    completion_tokens: 5,
    total_tokens: 65,
    prompt_tokens_details: { cache_write_5m_tokens: 50, cache_write_1h_tokens: 0 },
  });
});

Deno.test("bedrock response: no usage, or usage without its input or output count, is no usage (not zero tokens)", () => {
  for (const usage of [undefined, null, {}, { inputTokens: 10 }, { outputTokens: 5 }, { totalTokens: 15 }]) {
    assert.equal(mapUsage(usage), undefined, JSON.stringify(usage));
    const body = { ...TEXT_RESPONSE, usage };
    if (usage === undefined) delete (body as Record<string, unknown>).usage;
    assert.equal(fromConverseResponse("aws", body, "m").usage, undefined, JSON.stringify(usage));
  }
});

Deno.test("bedrock response: a count that is not a count (negative, fractional, huge, string) is no usage", () => {
  for (const bad of [-5000, 2.5, 1e19, 1e308, "100", true]) {
    for (const field of ["inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"]) {
      const usage = { inputTokens: 10, outputTokens: 5, [field]: bad };
      assert.equal(
        fromConverseResponse("aws", { ...TEXT_RESPONSE, usage }, "m").usage,
        undefined,
        `${field}: ${bad}`,
      );
    }
    const details = {
      inputTokens: 1,
      outputTokens: 1,
      cacheWriteInputTokens: 5,
      cacheDetails: [{ ttl: "1h", inputTokens: bad }],
    };
    assert.equal(mapUsage(details), undefined, `cacheDetails: ${bad}`);
  }
});

Deno.test("bedrock response: a body without output.message is a 502", () => {
  assert.throws(
    () => fromConverseResponse("aws", { stopReason: "end_turn" }, "m"),
    (err: unknown) =>
      err instanceof GatewayError && err.status === 502 && err.code === "upstream_invalid_response",
  );
});

const SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

Deno.test("bedrock errors: Bedrock error names and statuses map to what OpenAI clients expect", () => {
  const table: [number, string | null, string, number, string | null][] = [
    // status, x-amzn-ErrorType, message, expected status, expected type
    [
      403,
      "UnrecognizedClientException",
      "The security token included in the request is invalid.",
      401,
      "authentication_error",
    ],
    [
      403,
      "InvalidSignatureException",
      "The request signature we calculated does not match",
      401,
      "authentication_error",
    ],
    [
      403,
      "ExpiredTokenException",
      "The security token included in the request is expired",
      401,
      "authentication_error",
    ],
    [
      403,
      "AccessDeniedException",
      "You don't have access to the model with the specified model ID.",
      403,
      "permission_error",
    ],
    [403, null, "Forbidden", 401, "authentication_error"],
    [
      429,
      "ThrottlingException",
      "Too many requests, please wait before trying again.",
      429,
      "rate_limit_error",
    ],
    [429, "ModelNotReadyException", "Model is not ready", 429, "rate_limit_error"],
    [
      400,
      "ServiceQuotaExceededException",
      "Your request exceeds the service quota for your account. You can resubmit your request later.",
      429,
      "rate_limit_error",
    ],
    [503, "ServiceUnavailableException", "Bedrock is unable to process your request.", 503, "server_error"],
    [400, "ValidationException", "The provided model identifier is invalid.", 400, "invalid_request_error"],
    [404, "ResourceNotFoundException", "Model not found", 404, "invalid_request_error"],
    [408, "ModelTimeoutException", "Model timeout", 504, "timeout_error"],
    [424, "ModelErrorException", "The model failed", 502, "server_error"],
    [500, "InternalServerException", "Internal error", 502, "server_error"],
  ];
  for (const [status, type, message, want, wantType] of table) {
    const headers = new Headers(
      type ? { "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/` } : {},
    );
    const err = bedrockHttpError("aws", status, headers, JSON.stringify({ message }), [SECRET]);
    assert.equal(err.status, want, `${type}`);
    assert.equal(err.type, wantType, `${type}`);
    if (want === 401 || want === 403) {
      assert.doesNotMatch(err.message, /security token|signature|access to the model/);
    }
  }
  const throttled = bedrockHttpError(
    "aws",
    429,
    new Headers({ "x-amzn-errortype": "ThrottlingException", "retry-after": "3" }),
    '{"message":"slow down"}',
    [],
  );
  assert.deepEqual(new Headers(throttled.headers).get("retry-after"), "3");
  const validation = bedrockHttpError(
    "aws",
    400,
    new Headers({ "x-amzn-errortype": "ValidationException" }),
    '{"message":"bad"}',
    [],
  );
  assert.equal(validation.message, "bad");
});

Deno.test("bedrock errors: the error name may come from the body; secrets are scrubbed", () => {
  const err = bedrockHttpError(
    "aws",
    400,
    new Headers(),
    JSON.stringify({
      __type: "com.amazon.coral.validate#ValidationException",
      message: `key ${SECRET} is odd`,
    }),
    [SECRET],
  );
  assert.equal(err.status, 400);
  assert.equal(err.message, "key *** is odd");
  const html = bedrockHttpError("aws", 502, new Headers(), "<html>bad gateway</html>", []);
  assert.equal(html.status, 502);
});

Deno.test("bedrock errors: stream exception frames", () => {
  const table: [string, number][] = [
    ["throttlingException", 429],
    ["serviceQuotaExceededException", 429],
    ["serviceUnavailableException", 503],
    ["validationException", 400],
    ["internalServerException", 502],
    ["modelStreamErrorException", 502],
    ["somethingElse", 502],
  ];
  for (const [type, status] of table) {
    const err = bedrockStreamException("aws", type, `failed ${SECRET}`, [SECRET]);
    assert.equal(err.status, status, type);
    assert.doesNotMatch(err.message, /wJalr/);
  }
});

Deno.test("bedrock errors: a model stream error's originalStatusCode, and a model timeout, map as HTTP answers", () => {
  const table: [string, unknown, number, string][] = [
    [
      "modelStreamErrorException",
      { originalStatusCode: 529, originalMessage: `Overloaded ${SECRET}` },
      503,
      "server_error",
    ],
    ["modelStreamErrorException", { originalStatusCode: 503 }, 503, "server_error"],
    ["modelStreamErrorException", { originalStatusCode: 429 }, 429, "rate_limit_error"],
    ["modelStreamErrorException", { originalStatusCode: 500 }, 502, "server_error"],
    ["modelStreamErrorException", { originalStatusCode: "529" }, 502, "server_error"],
    // Only a model stream error carries the model's status.
    ["internalServerException", { originalStatusCode: 529 }, 502, "server_error"],
    ["modelTimeoutException", {}, 504, "timeout_error"],
  ];
  for (const [type, payload, status, errorType] of table) {
    const err = bedrockStreamException("aws", type, "Model stream error", [SECRET], payload);
    assert.equal(err.status, status, `${type} ${JSON.stringify(payload)}`);
    assert.equal(err.type, errorType, type);
    assert.doesNotMatch(err.message, /wJalr/);
  }
  assert.equal(
    bedrockStreamException("aws", "modelStreamErrorException", null, [], { originalStatusCode: 529 }).code,
    "upstream_overloaded",
  );
});

Deno.test("bedrock response: reasoningContent blocks → reasoning_content; signature and redacted reasoning left out", () => {
  // The Converse answer shape of Claude with thinking on (ContentBlock.reasoningContent, ReasoningContentBlock).
  const completion = fromConverseResponse("aws", {
    output: {
      message: {
        role: "assistant",
        content: [
          {
            reasoningContent: {
              reasoningText: { text: "Greet back briefly.", signature: "EqoBCkgSecretSig" },
            },
          },
          { reasoningContent: { redactedContent: "AAECAwQF" } },
          { text: "Hello!" },
        ],
      },
    },
    stopReason: "end_turn",
    usage: { inputTokens: 9, outputTokens: 40, totalTokens: 49 },
  }, "m");
  assert.deepEqual(completion.choices[0].message, {
    role: "assistant",
    content: "Hello!",
    refusal: null,
    reasoning_content: "Greet back briefly.",
  });
  assert.ok(!JSON.stringify(completion).includes("EqoBCkgSecretSig"));
  assert.ok(!JSON.stringify(completion).includes("AAECAwQF"));
});

Deno.test("bedrock response: the answer tool's input is the text answer, finish stop; beside a client call, tool_calls", () => {
  const answer = {
    ...TOOL_USE_RESPONSE,
    output: {
      message: {
        role: "assistant",
        content: [{ toolUse: { toolUseId: "tooluse_j", name: "json_response", input: { greeting: "Hi" } } }],
      },
    },
  };
  const only = fromConverseResponse("aws", answer, "m");
  assert.deepEqual(only.choices[0].message, {
    role: "assistant",
    content: '{"greeting":"Hi"}',
    refusal: null,
  });
  assert.equal(only.choices[0].finish_reason, "stop");
  const both = fromConverseResponse("aws", {
    ...answer,
    output: {
      message: {
        role: "assistant",
        content: [...answer.output.message.content, ...TOOL_USE_RESPONSE.output.message.content],
      },
    },
  }, "m");
  const reply = both.choices[0].message as { content: unknown; tool_calls: { function: { name: string } }[] };
  assert.equal(reply.content, '{"greeting":"Hi"}');
  assert.deepEqual(reply.tool_calls.map((c) => c.function.name), ["top_song"]);
  assert.equal(both.choices[0].finish_reason, "tool_calls");
  // A tool_use stop without the answer tool is still tool_calls (unchanged).
  assert.equal(
    fromConverseResponse("aws", { ...TEXT_RESPONSE, stopReason: "tool_use" }, "m").choices[0].finish_reason,
    "tool_calls",
  );
});

Deno.test("mapUsage: cacheDetails splits cache writes by lifetime (a 1-hour write is priced apart)", () => {
  const usage = mapUsage({
    inputTokens: 10,
    outputTokens: 5,
    cacheWriteInputTokens: 70,
    cacheDetails: [{ ttl: "1h", inputTokens: 50 }, { ttl: "5m", inputTokens: 20 }],
  });
  assert.equal(usage?.prompt_tokens, 80);
  assert.deepEqual(usage?.prompt_tokens_details, { cache_write_5m_tokens: 20, cache_write_1h_tokens: 50 });
  // Details that claim more than the writes reported are bounded by them.
  const odd = mapUsage({
    inputTokens: 1,
    outputTokens: 1,
    cacheWriteInputTokens: 5,
    cacheDetails: [{ ttl: "1h", inputTokens: 9 }],
  });
  assert.deepEqual(odd?.prompt_tokens_details, { cache_write_5m_tokens: 0, cache_write_1h_tokens: 5 });
});
