import assert from "node:assert/strict";
import { createScrubber, MASK, type Scrubber } from "../../secrets/scrubber.ts";
import { MAX_UPSTREAM_MESSAGE, scrubClip, upstreamHttpError, upstreamStreamError } from "./upstream_error.ts";

const KEY = "sk-proj-Xq7vB2mN9pL4kR8tW1zY6cJ3hG5d";

Deno.test("upstream errors: the provider's key is masked in every field, whole and quoted in part", () => {
  const body = JSON.stringify({
    error: {
      message: `bad ${KEY.slice(0, 14)}…`,
      type: "invalid_request_error",
      param: KEY,
      code: `x_${KEY}`,
    },
  });
  const err = upstreamHttpError("p", 400, body, new Headers(), [KEY]);
  assert.equal(err.message, "bad sk-***…");
  assert.equal(err.param, "***");
  assert.equal(err.code, "x_***");
  const streamed = upstreamStreamError("p", { error: { message: KEY, code: KEY.slice(4, 20) } }, [KEY]);
  assert.equal(streamed.message, "***");
  assert.equal(streamed.code, "***");
});

Deno.test("upstream errors: only well-formed retry headers pass, and huge messages are cut", () => {
  const headers = new Headers({ "retry-after": `3 ${KEY}`, "retry-after-ms": "1500" });
  const err = upstreamHttpError(
    "p",
    429,
    JSON.stringify({ error: { message: "x".repeat(100_000) } }),
    headers,
  );
  assert.deepEqual(new Headers(err.headers).get("retry-after"), null);
  assert.equal(new Headers(err.headers).get("retry-after-ms"), "1500");
  assert.equal(err.message.length, MAX_UPSTREAM_MESSAGE + 1);
  const dated = upstreamHttpError(
    "p",
    503,
    "",
    new Headers({ "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" }),
  );
  assert.equal(new Headers(dated.headers).get("retry-after"), "Wed, 21 Oct 2015 07:28:00 GMT");
});

Deno.test("upstream errors: a well-formed x-should-retry passes with the error, anything else does not", () => {
  const shouldRetry = (status: number, value: string) =>
    new Headers(upstreamHttpError("p", status, "", new Headers({ "x-should-retry": value })).headers)
      .get("x-should-retry");
  // The SDKs obey it before the status: a 429 the upstream says not to retry is not retried, and the reverse.
  assert.equal(shouldRetry(429, "false"), "false");
  assert.equal(shouldRetry(400, "true"), "true");
  assert.equal(shouldRetry(529, "false"), "false");
  assert.equal(shouldRetry(500, " true "), "true");
  for (const value of ["False", "0", "no", `false ${KEY}`]) {
    assert.equal(shouldRetry(429, value), null, value);
  }
});

Deno.test("upstream errors: a stream's error event that says which HTTP error it is maps as that answer", () => {
  const cases: [unknown, number, string | null][] = [
    // OpenAI's chat stream, and a Responses `error` event's fields as the native stage passes them.
    [
      { error: { message: "Rate limit reached", type: "tokens", code: "rate_limit_exceeded" } },
      429,
      "rate_limit_exceeded",
    ],
    [{ error: { message: "slow", type: "rate_limit_error", code: null } }, 429, "rate_limit_exceeded"],
    [
      { error: { message: "no money", type: "insufficient_quota", code: "insufficient_quota" } },
      429,
      "insufficient_quota",
    ],
    // Azure's numeric-string code, vLLM's integer one.
    [{ error: { message: "call rate limit", code: "429" } }, 429, "rate_limit_exceeded"],
    [{ error: { object: "error", message: "bad", type: "BadRequestError", code: 400 } }, 400, null],
    [{ error: { message: "busy", code: 503 } }, 503, "upstream_overloaded"],
    // A server error, or nothing said of a status: a 502 in the upstream's words, as before.
    [{ error: { message: "boom", code: 500 } }, 502, "upstream_error"],
    [{ error: { message: "boom", type: "server_error", code: "server_error" } }, 502, "server_error"],
    [{ error: { message: "odd", code: 200 } }, 502, "upstream_error"],
  ];
  for (const [data, status, code] of cases) {
    const err = upstreamStreamError("p", data);
    assert.deepEqual([err.status, err.code], [status, code], JSON.stringify(data));
    if (status === 429) {
      // OpenAI's own `tokens` type (which limit was reached) and `insufficient_quota` pass; others say rate limit.
      const sent = (data as { error: { type?: string } }).error.type;
      assert.equal(err.type, sent === "tokens" || sent === "insufficient_quota" ? sent : "rate_limit_error");
    }
  }
  // The key is still masked on the mapped path.
  const masked = upstreamStreamError("p", {
    error: { message: `limit for ${KEY}`, code: "rate_limit_exceeded" },
  }, [
    KEY,
  ]);
  assert.equal(masked.message, "limit for ***");
});

Deno.test("upstream errors: a 400 in OpenAI's words for a too-long prompt is context_length_exceeded, even without the code", () => {
  const openai = JSON.stringify({
    error: {
      message:
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130021 tokens.",
      type: "invalid_request_error",
      param: "messages",
      code: "context_length_exceeded",
    },
  });
  const vllm = JSON.stringify({
    object: "error",
    message:
      "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens.",
    type: "BadRequestError",
    param: null,
    code: 400,
  });
  const llamaCpp = JSON.stringify({
    error: {
      code: 400,
      message: "the request exceeds the available context size",
      type: "exceed_context_size_error",
    },
  });
  for (const body of [openai, vllm, llamaCpp]) {
    const err = upstreamHttpError("p", 400, body, new Headers());
    assert.equal(err.status, 400, body);
    assert.equal(err.code, "context_length_exceeded", body);
    assert.equal(err.type, "invalid_request_error", body);
    assert.equal(err.param, "messages", body);
    assert.equal(err.message, JSON.parse(body).message ?? JSON.parse(body).error.message);
  }
  // Another code, or another status, is left as it is.
  const other = JSON.stringify({
    error: { message: "This model's maximum context length is 4096 tokens.", code: "x" },
  });
  assert.equal(upstreamHttpError("p", 400, other, new Headers()).code, "x");
  assert.equal(
    upstreamHttpError("p", 400, JSON.stringify({ error: { message: "bad" } }), new Headers()).code,
    null,
  );
  // Inside a stream, the code alone says it is the 400.
  const streamed = upstreamStreamError("p", JSON.parse(openai));
  assert.equal(streamed.status, 400);
  assert.equal(streamed.code, "context_length_exceeded");
});

/** A scrubber that records the length of every text it is handed. */
function spyOn(scrubber: Scrubber, seen: number[]): Scrubber {
  return {
    size: scrubber.size,
    longest: scrubber.longest,
    scrub: (text) => (seen.push(text.length), scrubber.scrub(text)),
    scrubHead: (text, max) => (seen.push(text.length), scrubber.scrubHead(text, max)),
    test: (text) => (seen.push(text.length), scrubber.test(text)),
  };
}

Deno.test("upstream errors: a huge message is cut before it is scrubbed, with a margin for a secret on the cut", () => {
  // An error body may be megabytes (max_body_size; a stream's error event up to its limit): scrubbing all of it
  // to keep 2,000 characters stalled the event loop for seconds. The scrubber sees the kept part and a margin.
  const seen: number[] = [];
  const spy = spyOn(createScrubber([KEY]), seen);
  const huge = KEY.repeat(Math.ceil(1_000_000 / KEY.length));
  const clipped = scrubClip(huge, spy);
  assert.ok(seen.length > 0 && seen.every((n) => n <= MAX_UPSTREAM_MESSAGE + spy.longest), `${seen}`);
  // `…` says it was cut, though the mask left it short.
  assert.equal(clipped, `${MASK}…`);
  // A secret that straddles the cut is still masked whole; what is after the cut is not kept.
  const before = "x".repeat(MAX_UPSTREAM_MESSAGE - 10);
  assert.equal(scrubClip(`${before}${KEY}${"y".repeat(5_000)}`, spy), `${before}${MASK}…`);
  const short = createScrubber(["hunter22x"]);
  assert.equal(
    scrubClip(`${"x".repeat(MAX_UPSTREAM_MESSAGE - 4)}hunter22x zz`, short),
    `${"x".repeat(MAX_UPSTREAM_MESSAGE - 4)}${MASK}…`,
  );
  // A message within the limit is only scrubbed.
  assert.equal(scrubClip(`bad ${KEY}`, spy), `bad ${MASK}`);
});

Deno.test("upstream errors: a megabyte body or stream event of the key is one mask, its fields cut", () => {
  const message = KEY.repeat(Math.ceil(1_000_000 / KEY.length));
  const http = upstreamHttpError(
    "p",
    400,
    JSON.stringify({ error: { message, param: message } }),
    new Headers(),
    [
      KEY,
    ],
  );
  assert.equal(http.message, `${MASK}…`);
  assert.equal(http.param, `${MASK}…`);
  const streamed = upstreamStreamError("p", { error: { message, code: message } }, [KEY]);
  assert.equal(streamed.message, `${MASK}…`);
  assert.equal(streamed.code, `${MASK}…`);
});

Deno.test("upstream errors: OpenAI's 429 types, tokens and requests, pass as sent; on another status they do not", () => {
  const body = (type: string) =>
    JSON.stringify({
      error: {
        message: "Rate limit reached for gpt-4o on tokens per min (TPM)",
        type,
        param: null,
        code: "rate_limit_exceeded",
      },
    });
  for (const type of ["tokens", "requests"]) {
    const err = upstreamHttpError("p", 429, body(type), new Headers());
    assert.deepEqual([err.status, err.type, err.code], [429, type, "rate_limit_exceeded"]);
    assert.equal(upstreamHttpError("p", 400, body(type), new Headers()).type, "invalid_request_error");
  }
  assert.equal(upstreamHttpError("p", 429, body("Throttled"), new Headers()).type, "rate_limit_error");
});
