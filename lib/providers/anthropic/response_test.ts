/**
 * Anthropic answers → OpenAI shapes, from the response and error examples in Anthropic's docs (Messages API
 * reference, tool use guide, prompt caching guide, "Errors" page).
 */
import assert from "node:assert/strict";
import type { GatewayError } from "../../errors.ts";
import { anthropicHttpError, anthropicStreamError, toChatCompletion, toFinishReason } from "./response.ts";
import type { JsonObject } from "../../openai/types.ts";

const KEY = "sk-ant-api03-secret-key-abcdef";

/** Messages API reference, example response. */
const TEXT_RESPONSE = {
  content: [{ text: "Hi! My name is Claude.", type: "text" }],
  id: "msg_013Zva2CMHLNnXjNJJKqJ2EF",
  model: "claude-sonnet-4-5-20250929",
  role: "assistant",
  stop_reason: "end_turn",
  stop_sequence: null,
  type: "message",
  usage: { input_tokens: 2095, output_tokens: 503 },
};

/** Tool use guide, example response with a tool_use block. */
const TOOL_RESPONSE = {
  id: "msg_01Aq9w938a90dw8q",
  model: "claude-sonnet-4-5-20250929",
  stop_reason: "tool_use",
  role: "assistant",
  type: "message",
  content: [
    { type: "text", text: "I'll check the current weather in San Francisco for you." },
    {
      type: "tool_use",
      id: "toolu_01A09q90qw90lq917835lq9",
      name: "get_weather",
      input: { location: "San Francisco, CA", unit: "celsius" },
    },
  ],
  usage: { input_tokens: 472, output_tokens: 89 },
};

Deno.test("anthropic response: text message → exact chat.completion", () => {
  const completion = toChatCompletion("claude", TEXT_RESPONSE, "claude-sonnet-4-5", 1_700_000_000);
  assert.deepEqual(completion, {
    id: "chatcmpl-msg_013Zva2CMHLNnXjNJJKqJ2EF",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "claude-sonnet-4-5",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "Hi! My name is Claude.", refusal: null },
      logprobs: null,
      finish_reason: "stop",
    }],
    usage: {
      prompt_tokens: 2095,
      completion_tokens: 503,
      total_tokens: 2598,
      prompt_tokens_details: { cached_tokens: 0 },
    },
  });
});

Deno.test("anthropic response: tool_use blocks → tool_calls with JSON-string arguments", () => {
  const completion = toChatCompletion("claude", TOOL_RESPONSE, "m", 1);
  assert.deepEqual(completion.choices[0], {
    index: 0,
    message: {
      role: "assistant",
      content: "I'll check the current weather in San Francisco for you.",
      refusal: null,
      tool_calls: [{
        id: "toolu_01A09q90qw90lq917835lq9",
        type: "function",
        function: { name: "get_weather", arguments: '{"location":"San Francisco, CA","unit":"celsius"}' },
      }],
    },
    logprobs: null,
    finish_reason: "tool_calls",
  });
  // Only tool calls (and a thinking block, which has no OpenAI counterpart): content is null.
  const only = toChatCompletion(
    "claude",
    {
      ...TOOL_RESPONSE,
      content: [{ type: "thinking", thinking: "hmm", signature: "sig" }, TOOL_RESPONSE.content[1]],
    },
    "m",
    1,
  );
  assert.equal((only.choices[0].message as { content: unknown }).content, null);
});

// Only `end_turn` and `stop_sequence` finished: a paused server-tool turn (sent back, it goes on) and a reason
// unknown today are `length`, never a `stop` that passes an unfinished turn for the answer.
Deno.test("anthropic response: every stop reason → finish_reason", () => {
  const table: [string | null, string][] = [
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["pause_turn", "length"],
    ["max_tokens", "length"],
    ["model_context_window_exceeded", "length"],
    ["tool_use", "tool_calls"],
    ["refusal", "content_filter"],
    ["something_new", "length"],
    [null, "stop"],
  ];
  for (const [reason, finish] of table) {
    assert.equal(toFinishReason(reason), finish, String(reason));
    const completion = toChatCompletion("claude", { ...TEXT_RESPONSE, stop_reason: reason }, "m", 1);
    assert.equal(completion.choices[0].finish_reason, finish);
  }
});

Deno.test("anthropic response: usage with cache tokens (prompt caching guide)", () => {
  const write = toChatCompletion(
    "claude",
    {
      ...TEXT_RESPONSE,
      usage: {
        cache_creation_input_tokens: 188086,
        cache_read_input_tokens: 0,
        input_tokens: 21,
        output_tokens: 393,
      },
    },
    "m",
    1,
  );
  assert.deepEqual(write.usage, {
    prompt_tokens: 188107,
    completion_tokens: 393,
    total_tokens: 188500,
    // The writes are kept apart for pricing (lib/pricing/cost.ts): five-minute ones, Anthropic's default.
    prompt_tokens_details: { cached_tokens: 0, cache_write_5m_tokens: 188086, cache_write_1h_tokens: 0 },
  });
  const read = toChatCompletion(
    "claude",
    {
      ...TEXT_RESPONSE,
      usage: {
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 188086,
        input_tokens: 21,
        output_tokens: 393,
      },
    },
    "m",
    1,
  );
  assert.deepEqual(read.usage, {
    prompt_tokens: 188107,
    completion_tokens: 393,
    total_tokens: 188500,
    prompt_tokens_details: { cached_tokens: 188086 },
  });
});

Deno.test("anthropic response: no usage, or usage without its input or output count, is no usage (not zero tokens)", () => {
  for (const usage of [undefined, null, {}, { input_tokens: 2095 }, { output_tokens: 503 }]) {
    const message: JsonObject = { ...TEXT_RESPONSE, usage };
    if (usage === undefined) delete message.usage;
    const completion = toChatCompletion("claude", message, "m", 1);
    assert.equal(completion.usage, undefined, JSON.stringify(usage));
    assert.equal("usage" in completion, false, "no usage field for the client");
  }
});

Deno.test("anthropic response: usage with a count that is not a count (negative, fractional, huge, string) is no usage", () => {
  for (const bad of [-5000, 2.5, 1e19, 1e308, "100", true]) {
    for (
      const field of [
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
      ]
    ) {
      const usage = { input_tokens: 10, output_tokens: 5, [field]: bad };
      assert.equal(
        toChatCompletion("claude", { ...TEXT_RESPONSE, usage }, "m", 1).usage,
        undefined,
        `${field}: ${bad}`,
      );
    }
    const split = { input_tokens: 10, output_tokens: 5, cache_creation: { ephemeral_1h_input_tokens: bad } };
    assert.equal(toChatCompletion("claude", { ...TEXT_RESPONSE, usage: split }, "m", 1).usage, undefined);
  }
  // Anthropic sends null for a cache count it has nothing for: that is 0, not an untrusted usage.
  const nulls = {
    input_tokens: 10,
    output_tokens: 5,
    cache_read_input_tokens: null,
    cache_creation_input_tokens: null,
  };
  assert.equal(
    toChatCompletion("claude", { ...TEXT_RESPONSE, usage: nulls }, "m", 1).usage?.prompt_tokens,
    10,
  );
});

Deno.test("anthropic response: a body that is not a message → 502", () => {
  for (const body of [null, "text", { type: "message" }, []]) {
    assert.throws(() => toChatCompletion("claude", body, "m", 1), (err: GatewayError) => {
      assert.equal(err.status, 502);
      assert.equal(err.code, "upstream_invalid_response");
      return true;
    });
  }
});

function errorBody(type: string, message: string): string {
  return JSON.stringify({
    type: "error",
    error: { type, message },
    request_id: "req_011CSHoEeqs5C35K2UUqR7Fy",
  });
}

Deno.test("anthropic errors: each documented status → the client's status, type and code", () => {
  const table: [number, string, string, number, string, string | null][] = [
    [400, "invalid_request_error", "max_tokens: Field required", 400, "invalid_request_error", null],
    [
      401,
      "authentication_error",
      `invalid x-api-key ${KEY}`,
      401,
      "authentication_error",
      "upstream_auth_error",
    ],
    [
      403,
      "permission_error",
      "Your API key does not have permission",
      403,
      "permission_error",
      "upstream_auth_error",
    ],
    [404, "not_found_error", "The requested resource could not be found.", 404, "not_found_error", null],
    [
      413,
      "request_too_large",
      "Request exceeds the maximum size",
      413,
      "invalid_request_error",
      "request_too_large",
    ],
    [
      429,
      "rate_limit_error",
      "Number of request tokens has exceeded your rate limit",
      429,
      "rate_limit_error",
      null,
    ],
    [500, "api_error", "Internal server error", 502, "server_error", "upstream_error"],
    [529, "overloaded_error", "Overloaded", 503, "server_error", "upstream_overloaded"],
  ];
  for (const [status, type, message, expectStatus, expectType, expectCode] of table) {
    const headers = new Headers(status === 429 ? { "retry-after": "12" } : {});
    const err = anthropicHttpError("claude", status, errorBody(type, message), headers, [KEY]);
    assert.equal(err.status, expectStatus, `${status}`);
    assert.equal(err.type, expectType, `${status}`);
    assert.equal(err.code, expectCode, `${status}`);
    assert.ok(!err.message.includes(KEY), "the key never reaches the client");
    if (status >= 400 && status < 500 && status !== 401 && status !== 403) assert.equal(err.message, message);
    if (status === 429) assert.deepEqual(err.headers, { "retry-after": "12" });
  }
});

Deno.test("anthropic errors: a body that is not Anthropic's (proxy HTML) still maps by status", () => {
  const err = anthropicHttpError("claude", 502, "<html>Bad gateway</html>", new Headers(), [KEY]);
  assert.equal(err.status, 502);
  const err400 = anthropicHttpError("claude", 400, "", new Headers(), [KEY]);
  assert.equal(err400.status, 400);
  assert.match(err400.message, /refused the request/);
});

Deno.test("anthropic errors: error events inside a stream map by their type", () => {
  const table: [string, number, string | null][] = [
    ["overloaded_error", 503, "upstream_overloaded"],
    ["api_error", 502, "upstream_error"],
    ["rate_limit_error", 429, null],
    ["invalid_request_error", 400, null],
    ["something_new", 502, "upstream_error"],
  ];
  for (const [type, status, code] of table) {
    const err = anthropicStreamError("claude", { type: "error", error: { type, message: "Overloaded" } }, [
      KEY,
    ]);
    assert.equal(err.status, status, type);
    assert.equal(err.code, code, type);
  }
});

Deno.test("anthropic response: thinking blocks → reasoning_content; redacted thinking and signatures left out", () => {
  // The extended-thinking guide's response shape: thinking (with signature), redacted_thinking, then text.
  const completion = toChatCompletion(
    "claude",
    {
      id: "msg_01think",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [
        {
          type: "thinking",
          thinking: "To approach this, let me think about what we know about prime numbers...",
          signature: "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL",
        },
        {
          type: "redacted_thinking",
          data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
        },
        { type: "text", text: "Yes, there are infinitely many prime numbers such that..." },
      ],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 40, output_tokens: 320 },
    },
    "claude-sonnet-4-5",
    1,
  );
  assert.deepEqual(completion.choices[0].message, {
    role: "assistant",
    content: "Yes, there are infinitely many prime numbers such that...",
    refusal: null,
    reasoning_content: "To approach this, let me think about what we know about prime numbers...",
  });
  assert.ok(!JSON.stringify(completion).includes("WaUjzkyp"), "the signature is not exposed");
  assert.ok(!JSON.stringify(completion).includes("EmwKAhgB"), "redacted thinking is not exposed");
  assert.equal(completion.usage?.completion_tokens, 320, "thinking is counted in output tokens");
  const plain = toChatCompletion("claude", TEXT_RESPONSE, "m", 1);
  assert.equal("reasoning_content" in (plain.choices[0].message as object), false, "no thinking, no field");
});

Deno.test("anthropic response: the answer tool's input is the text answer, finish stop; beside a client call, tool_calls", () => {
  const answer = {
    ...TEXT_RESPONSE,
    content: [{
      type: "tool_use",
      id: "toolu_j",
      name: "json_response",
      input: { greeting: "Hi", n: [1, 2] },
    }],
    stop_reason: "tool_use",
  };
  const only = toChatCompletion("claude", answer, "m", 1);
  const message = only.choices[0].message as JsonObject;
  assert.equal(message.content, '{"greeting":"Hi","n":[1,2]}');
  assert.equal("tool_calls" in message, false);
  assert.equal(only.choices[0].finish_reason, "stop");
  const both = toChatCompletion(
    "claude",
    {
      ...answer,
      content: [...answer.content, { type: "tool_use", id: "toolu_w", name: "get_weather", input: {} }],
    },
    "m",
    1,
  );
  const reply = both.choices[0].message as JsonObject;
  assert.equal(reply.content, '{"greeting":"Hi","n":[1,2]}');
  assert.deepEqual((reply.tool_calls as JsonObject[]).map((c) => (c.function as JsonObject).name), [
    "get_weather",
  ]);
  assert.equal(both.choices[0].finish_reason, "tool_calls");
  // Cut by the token limit, the answer says so.
  assert.equal(
    toChatCompletion("claude", { ...answer, stop_reason: "max_tokens" }, "m", 1).choices[0].finish_reason,
    "length",
  );
});

Deno.test("anthropic response: cache writes split by lifetime (cache_creation), priced apart", () => {
  const message = toChatCompletion(
    "claude",
    {
      ...TEXT_RESPONSE,
      usage: {
        input_tokens: 5,
        output_tokens: 7,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 300,
        cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
      },
    },
    "m",
    1,
  );
  assert.deepEqual(message.usage, {
    prompt_tokens: 405,
    completion_tokens: 7,
    total_tokens: 412,
    prompt_tokens_details: { cached_tokens: 100, cache_write_5m_tokens: 100, cache_write_1h_tokens: 200 },
  });
});
