/** Azure error normalisation, from Azure's documented and observed examples. */
import assert from "node:assert/strict";
import { azureErrorFields } from "./error.ts";
import { upstreamHttpError } from "../shared/upstream_error.ts";

/** Error bodies: the content filter from the content-filter docs, the rest observed in GitHub issues. */
const ERRORS = {
  contentFilter: {
    error: {
      message: "The response was filtered due to the prompt triggering Azure OpenAI's content management " +
        "policy. Please modify your prompt and retry.",
      type: null,
      param: "prompt",
      code: "content_filter",
      status: 400,
      innererror: {
        code: "ResponsibleAIPolicyViolation",
        content_filter_result: {
          hate: { filtered: false, severity: "safe" },
          jailbreak: { filtered: true, detected: true },
          self_harm: { filtered: false, severity: "safe" },
          sexual: { filtered: false, severity: "safe" },
          violence: { filtered: true, severity: "medium" },
        },
      },
    },
  },
  unauthorized: {
    error: {
      code: "401",
      message:
        "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a " +
        "valid key for an active subscription and use a correct regional API endpoint for your resource.",
    },
  },
  rateLimit: {
    error: {
      code: "429",
      message: "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 " +
        "have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds.",
    },
  },
  deploymentNotFound: {
    error: {
      code: "DeploymentNotFound",
      message: "The API deployment for this resource does not exist. If you created the deployment within " +
        "the last 5 minutes, please wait a moment and try again.",
    },
  },
};

Deno.test("azure errors: normalised to OpenAI's fields and statuses", () => {
  const cases: {
    status: number;
    body: unknown;
    headers?: Record<string, string>;
    expect: { status: number; type: string; code: string | null; param: string | null; message: RegExp };
    retryAfter?: string;
  }[] = [
    {
      status: 400,
      body: ERRORS.contentFilter,
      expect: {
        status: 400,
        type: "invalid_request_error",
        code: "content_filter",
        param: "prompt",
        message: /^The response was filtered .*\(filtered: jailbreak, violence \(medium\)\)$/,
      },
    },
    {
      status: 401,
      body: ERRORS.unauthorized,
      expect: {
        status: 401,
        type: "authentication_error",
        code: "upstream_auth_error",
        param: null,
        message: /rejected the gateway's credentials/,
      },
    },
    {
      status: 429,
      body: ERRORS.rateLimit,
      headers: { "retry-after": "6" },
      retryAfter: "6",
      expect: {
        status: 429,
        type: "rate_limit_error",
        code: "rate_limit_exceeded",
        param: null,
        message: /Please retry after 6 seconds/,
      },
    },
    {
      status: 404,
      body: ERRORS.deploymentNotFound,
      expect: {
        status: 404,
        type: "invalid_request_error",
        code: "DeploymentNotFound",
        param: null,
        message: /deployment for this resource does not exist/,
      },
    },
    {
      status: 503,
      body: { error: { code: "503", message: "The service is temporarily unavailable." } },
      expect: {
        status: 503,
        type: "server_error",
        code: "upstream_overloaded",
        param: null,
        message: /overloaded \(HTTP 503\)/,
      },
    },
    {
      status: 500,
      body: "<html>Internal Server Error</html>",
      expect: {
        status: 502,
        type: "server_error",
        code: "upstream_error",
        param: null,
        message: /HTTP 500$/,
      },
    },
  ];
  for (const { status, body, headers, expect, retryAfter } of cases) {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    const err = upstreamHttpError("az", status, azureErrorFields(status, text), new Headers(headers), ["k"]);
    const { error } = err.toBody();
    assert.equal(err.status, expect.status, `${status}`);
    assert.equal(error.type, expect.type, `${status}`);
    assert.equal(error.code, expect.code, `${status}`);
    assert.equal(error.param, expect.param, `${status}`);
    assert.match(error.message, expect.message);
    if (retryAfter) assert.equal(new Headers(err.headers).get("retry-after"), retryAfter);
  }
  // The documented plural `content_filter_results` works too.
  const plural = JSON.stringify({
    error: {
      message: "The response was filtered",
      param: "prompt",
      code: "content_filter",
      innererror: { content_filter_results: { hate: { filtered: true, severity: "high" } } },
    },
  });
  assert.equal(azureErrorFields(400, plural).message, "The response was filtered (filtered: hate (high))");
});

Deno.test("azure errors: the provider key never reaches the client", () => {
  const key = "0123456789abcdef0123456789abcdef";
  const text = JSON.stringify({ error: { code: "400", message: `Key ${key} is not valid here.` } });
  const err = upstreamHttpError("az", 400, azureErrorFields(400, text), new Headers(), [key]);
  assert.equal(err.message, "Key *** is not valid here.");
  assert.equal(err.code, null);
});

/**
 * A recorded-shape Azure stream (default content filter, `stream_options.include_usage`): the prompt
 * annotation chunk with empty `choices`, role and content chunks carrying `content_filter_results`, the
 * finish, an asynchronous-filter annotation after the finish (no `delta`, empty id; content-streaming docs),
 * the usage chunk, `[DONE]`. Field order and shapes as Azure sends them (GitHub issue captures).
 */
