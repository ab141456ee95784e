/**
 * Gemini response → OpenAI completion, table-driven over recorded/documented `GenerateContentResponse`
 * bodies (https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse), and Google error
 * bodies → OpenAI errors.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { geminiHttpError, geminiStreamError, parseGoogleErrorBody } from "./error.ts";
import { finishReasonFor, toChatCompletion, usageFrom } from "./response.ts";
import { signatureFromToolCallId } from "./types.ts";
import type { JsonObject } from "../../openai/types.ts";

/** A text answer as the REST reference shows it (gemini-2.5-flash, with thinking tokens). */
const TEXT_RESPONSE = {
  candidates: [{
    content: { parts: [{ text: "AI learns patterns from data." }], role: "model" },
    finishReason: "STOP",
    index: 0,
  }],
  usageMetadata: {
    promptTokenCount: 8,
    candidatesTokenCount: 7,
    totalTokenCount: 45,
    thoughtsTokenCount: 30,
    cachedContentTokenCount: 4,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: 8 }],
  },
  modelVersion: "gemini-2.5-flash",
  responseId: "tTCwacuEBMvnitYP06qsgQY",
};

/** A function call (function-calling guide); Gemini 3 attaches a thoughtSignature to the part. */
const TOOL_RESPONSE = {
  candidates: [{
    content: {
      role: "model",
      parts: [{
        functionCall: { name: "schedule_meeting", args: { attendees: ["Bob", "Alice"], date: "2025-03-27" } },
        thoughtSignature: "AY89a18iOcFus5wr5bW5xN6zZ4aUiCyhgmg6HE2YjtYDV/dwZ5oZlZHeTmiUKv34qq0=",
      }],
    },
    finishReason: "STOP",
    index: 0,
  }],
  usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 25, totalTokenCount: 145 },
};

const ctx = {
  provider: "gem",
  model: "gemini-2.5-flash",
  id: "chatcmpl-x",
  created: 1,
  newId: () => "call_1",
};

Deno.test("gemini response: text answer with usage (thoughts and cached tokens)", () => {
  assert.deepEqual(toChatCompletion(TEXT_RESPONSE, ctx), {
    id: "chatcmpl-x",
    object: "chat.completion",
    created: 1,
    model: "gemini-2.5-flash",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "AI learns patterns from data.", refusal: null },
      logprobs: null,
      finish_reason: "stop",
    }],
    usage: {
      prompt_tokens: 8,
      completion_tokens: 37,
      total_tokens: 45,
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 30 },
    },
  });
});

Deno.test("gemini response: functionCall → tool_calls with a generated id carrying the signature", () => {
  const completion = toChatCompletion(TOOL_RESPONSE, { ...ctx, newId: () => "call_abc" });
  const choice = completion.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  const message = choice.message as JsonObject;
  assert.equal(message.content, null);
  const [call] = message.tool_calls as {
    id: string;
    type: string;
    function: { name: string; arguments: string };
  }[];
  assert.match(call.id, /^call_abc_ts_[A-Za-z0-9_-]+$/);
  assert.equal(
    signatureFromToolCallId(call.id),
    TOOL_RESPONSE.candidates[0].content.parts[0].thoughtSignature,
  );
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "schedule_meeting");
  assert.deepEqual(JSON.parse(call.function.arguments), { attendees: ["Bob", "Alice"], date: "2025-03-27" });
  assert.deepEqual(completion.usage, { prompt_tokens: 120, completion_tokens: 25, total_tokens: 145 });
});

Deno.test("gemini response: thought parts → reasoning_content, not the answer; several candidates → several choices", () => {
  const body = {
    candidates: [
      {
        content: { role: "model", parts: [{ text: "thinking…", thought: true }, { text: "A" }] },
        finishReason: "STOP",
        index: 0,
      },
      { content: { role: "model", parts: [{ text: "B" }] }, finishReason: "MAX_TOKENS", index: 1 },
    ],
  };
  const completion = toChatCompletion(body, ctx);
  assert.deepEqual(
    completion.choices.map((c) => [c.index, (c.message as JsonObject).content, c.finish_reason]),
    [
      [0, "A", "stop"],
      [1, "B", "length"],
    ],
  );
  assert.equal((completion.choices[0].message as JsonObject).reasoning_content, "thinking…");
  assert.equal("reasoning_content" in (completion.choices[1].message as JsonObject), false);
  assert.equal(completion.usage, undefined, "no usageMetadata: no usage, counted by the gateway");
});

Deno.test("gemini response: every finish reason", () => {
  const table: [string | undefined, boolean, string][] = [
    ["STOP", false, "stop"],
    ["STOP", true, "tool_calls"],
    [undefined, false, "stop"],
    ["MAX_TOKENS", false, "length"],
    ["SAFETY", false, "content_filter"],
    ["RECITATION", false, "content_filter"],
    ["BLOCKLIST", false, "content_filter"],
    ["PROHIBITED_CONTENT", false, "content_filter"],
    ["SPII", false, "content_filter"],
    ["LANGUAGE", false, "content_filter"],
    ["IMAGE_SAFETY", false, "content_filter"],
    ["IMAGE_OTHER", false, "content_filter"],
    ["NO_IMAGE", false, "content_filter"],
    // Every reason but STOP and MAX_TOKENS ended the candidate before the model finished, calls or not.
    ["OTHER", false, "content_filter"],
    ["OTHER", true, "content_filter"],
    ["FINISH_REASON_UNSPECIFIED", false, "content_filter"],
    ["SOMETHING_NEW", false, "content_filter"],
  ];
  for (const [reason, tools, expected] of table) {
    assert.equal(finishReasonFor("gem", reason, tools), expected, String(reason));
  }
  for (const reason of ["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"]) {
    assert.throws(() => finishReasonFor("gem", reason, false, "bad args"), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 502);
      assert.equal(err.code, "upstream_malformed_function_call");
      assert.match(err.message, /bad args/);
      return true;
    });
  }
});

Deno.test("gemini response: a blocked prompt (no candidates) → content_filter completion", () => {
  const body = {
    promptFeedback: { blockReason: "SAFETY", safetyRatings: [] },
    usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
  };
  const completion = toChatCompletion(body, ctx);
  assert.deepEqual(completion.choices, [{
    index: 0,
    message: { role: "assistant", content: null, refusal: null },
    logprobs: null,
    finish_reason: "content_filter",
  }]);
  assert.equal(completion.usage?.prompt_tokens, 9);
  // No candidates and no block reason is not a valid answer.
  assert.throws(
    () => toChatCompletion({ usageMetadata: {} }, ctx),
    (e: unknown) => (e as GatewayError).status === 502,
  );
  assert.throws(() => toChatCompletion([], ctx), (e: unknown) => (e as GatewayError).status === 502);
});

Deno.test("gemini usage: no metadata, or metadata without its prompt count, is no usage (not zero tokens)", () => {
  for (const meta of [undefined, null, {}, { candidatesTokenCount: 7, totalTokenCount: 7 }]) {
    assert.equal(usageFrom(meta), undefined, JSON.stringify(meta));
    const completion = toChatCompletion({ candidates: TEXT_RESPONSE.candidates, usageMetadata: meta }, ctx);
    assert.equal(completion.usage, undefined, JSON.stringify(meta));
  }
  // Gemini leaves out a zero output count (a blocked prompt): the prompt count alone is usage.
  assert.deepEqual(usageFrom({ promptTokenCount: 9 }), {
    prompt_tokens: 9,
    completion_tokens: 0,
    total_tokens: 9,
  });
});

Deno.test("gemini usage: a count that is not a count (negative, fractional, huge, string) is no usage", () => {
  const fields = [
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "toolUsePromptTokenCount",
    "cachedContentTokenCount",
  ];
  for (const bad of [-5000, 2.5, 1e19, 1e308, "100", true]) {
    for (const field of fields) {
      const meta = { promptTokenCount: 10, candidatesTokenCount: 5, [field]: bad };
      assert.equal(usageFrom(meta), undefined, `${field}: ${bad}`);
      assert.equal(toChatCompletion({ ...TEXT_RESPONSE, usageMetadata: meta }, ctx).usage, undefined);
    }
  }
});

Deno.test("gemini usage: tool-use prompt tokens count as prompt", () => {
  assert.deepEqual(usageFrom({ promptTokenCount: 10, toolUsePromptTokenCount: 5, candidatesTokenCount: 2 }), {
    prompt_tokens: 15,
    completion_tokens: 2,
    total_tokens: 17,
  });
});

// ---------------------------------------------------------------------------------------------------------
// Errors (bodies as Google sends them: https://ai.google.dev/gemini-api/docs/troubleshooting)

const KEY = "AIzaSyFAKE-key-0123456789";

const API_KEY_INVALID = {
  error: {
    code: 400,
    message: "API key not valid. Please pass a valid API key.",
    status: "INVALID_ARGUMENT",
    details: [{
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: "API_KEY_INVALID",
      domain: "googleapis.com",
      metadata: { service: "generativelanguage.googleapis.com" },
    }],
  },
};
const RESOURCE_EXHAUSTED = {
  error: {
    code: 429,
    message: "You exceeded your current quota, please check your plan and billing details.",
    status: "RESOURCE_EXHAUSTED",
    details: [
      {
        "@type": "type.googleapis.com/google.rpc.Help",
        links: [{ url: "https://ai.google.dev/gemini-api/docs/rate-limits" }],
      },
      { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "32.5s" },
    ],
  },
};
const UNAVAILABLE = {
  error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" },
};
const INTERNAL = { error: { code: 500, message: "An internal error has occurred.", status: "INTERNAL" } };
const PERMISSION_DENIED = {
  error: {
    code: 403,
    message: `Method doesn't allow unregistered callers (key ${KEY}).`,
    status: "PERMISSION_DENIED",
  },
};
const INVALID_ARGUMENT = {
  error: {
    code: 400,
    message: `* GenerateContentRequest.contents: contents is not specified (${KEY})`,
    status: "INVALID_ARGUMENT",
  },
};

const TOO_LONG = {
  error: {
    code: 400,
    message: "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
    status: "INVALID_ARGUMENT",
  },
};
/** As some reports show it, without the count. */
const TOO_LONG_UNCOUNTED = {
  error: {
    code: 400,
    message: "The input token count exceeds the maximum number of tokens allowed (1048576).",
    status: "INVALID_ARGUMENT",
  },
};

const ERROR_CASES: [string, number, unknown, Record<string, string>, number, string | null][] = [
  [
    "400 INVALID_ARGUMENT, input too long → context_length_exceeded",
    400,
    TOO_LONG,
    {},
    400,
    "context_length_exceeded",
  ],
  ["400 too long without the count", 400, TOO_LONG_UNCOUNTED, {}, 400, "context_length_exceeded"],
  ["API_KEY_INVALID → 401", 400, API_KEY_INVALID, {}, 401, "upstream_auth_error"],
  ["429 RESOURCE_EXHAUSTED → 429", 429, RESOURCE_EXHAUSTED, {}, 429, "rate_limit_exceeded"],
  ["503 UNAVAILABLE → 503", 503, UNAVAILABLE, {}, 503, "upstream_overloaded"],
  ["500 INTERNAL → 502", 500, INTERNAL, {}, 502, "internal"],
  ["403 PERMISSION_DENIED → 403", 403, PERMISSION_DENIED, {}, 403, "upstream_auth_error"],
  ["400 INVALID_ARGUMENT → 400", 400, INVALID_ARGUMENT, {}, 400, "invalid_argument"],
  [
    "array-wrapped 429 with retry-after header",
    429,
    [RESOURCE_EXHAUSTED],
    { "retry-after": "3" },
    429,
    "rate_limit_exceeded",
  ],
  ["HTML 502 from a proxy", 502, "<html>bad gateway</html>", {}, 502, "upstream_error"],
];

for (const [name, status, body, headers, expected, code] of ERROR_CASES) {
  Deno.test(`gemini error: ${name}`, () => {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    const err = geminiHttpError("gem", status, text, new Headers(headers), [KEY]);
    assert.equal(err.status, expected);
    assert.equal(err.code, code);
    assert.equal(err.message.includes(KEY), false, "the key never reaches the client");
    assert.equal(JSON.stringify(err.toBody()).includes(KEY), false);
    if (expected === 429) {
      const h = new Headers(err.headers);
      assert.equal(h.get("retry-after"), headers["retry-after"] ?? "33");
    }
    if (expected === 401) assert.equal(err.type, "authentication_error");
  });
}

Deno.test("gemini error: a too-long prompt keeps Google's words, and mid-stream is the same 400", () => {
  const err = geminiHttpError("gem", 400, JSON.stringify(TOO_LONG), new Headers(), [KEY]);
  assert.equal(err.message, TOO_LONG.error.message);
  assert.equal(err.type, "invalid_request_error");
  assert.equal(err.param, "messages");
  const streamed = geminiStreamError("gem", TOO_LONG, [KEY]);
  assert.equal(streamed.status, 400);
  assert.equal(streamed.code, "context_length_exceeded");
});

Deno.test("gemini error: parse reads status, reason and retry delay", () => {
  assert.deepEqual(parseGoogleErrorBody(JSON.stringify(API_KEY_INVALID)), {
    message: "API key not valid. Please pass a valid API key.",
    status: "INVALID_ARGUMENT",
    reason: "API_KEY_INVALID",
    retryDelay: null,
    code: 400,
    details: API_KEY_INVALID.error.details,
  });
  assert.deepEqual(parseGoogleErrorBody("not json"), {
    message: null,
    status: null,
    reason: null,
    retryDelay: null,
    code: null,
    details: [],
  });
});

Deno.test("gemini error: an error event mid-stream → 502 GatewayError with the key scrubbed", () => {
  const err = geminiStreamError("gem", { error: { ...INTERNAL.error, message: `boom ${KEY}` } }, [KEY]);
  assert.equal(err.status, 502);
  assert.equal(err.code, "internal");
  assert.equal(err.message, "boom ***");
  // Without a code or a status Google names: the upstream's words, a 502.
  const bare = geminiStreamError("gem", { error: { message: "odd" } }, [KEY]);
  assert.deepEqual([bare.status, bare.message], [502, "odd"]);
});

Deno.test("gemini error: an error event is mapped as its HTTP answer would be (a rate limit is the client's 429)", () => {
  const limited = geminiStreamError("gem", RESOURCE_EXHAUSTED, [KEY]);
  assert.deepEqual([limited.status, limited.type, limited.code], [
    429,
    "rate_limit_error",
    "rate_limit_exceeded",
  ]);
  assert.equal(new Headers(limited.headers).get("retry-after"), "33", "RetryInfo's delay, as over HTTP");
  // By the status name alone, as some events carry it.
  const named = geminiStreamError("gem", { error: { message: "busy", status: "RESOURCE_EXHAUSTED" } }, []);
  assert.equal(named.status, 429);
  assert.equal(geminiStreamError("gem", UNAVAILABLE, []).status, 503);
  assert.equal(geminiStreamError("gem", INVALID_ARGUMENT, [KEY]).status, 400);
});
