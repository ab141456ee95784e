/**
 * The pure parts of the Azure provider, from Azure's documented and observed examples: addressing for both
 * forms, the request body, error normalisation, and the stream stage (split at every byte offset).
 */
import assert from "node:assert/strict";
import type { AzureProviderConfig } from "../config/schema.ts";
import { SseParseStream } from "../sse/parse.ts";
import {
  azureAddressing,
  AzureChunkStream,
  azureErrorFields,
  azureHeaders,
  azureUrl,
  createAzureProvider,
} from "./azure.ts";
import { OpenAIChunkStream, toUpstreamChatBody } from "./openai.ts";
import type { ChatCompletionChunk, ChatRequest } from "../openai/types.ts";
import { upstreamHttpError } from "./upstream_error.ts";

const RES = "https://contoso.openai.azure.com";

Deno.test("azure addressing: classic and v1 URLs", () => {
  const cases: [
    base: string,
    version: string | undefined,
    deployment: string,
    op: "chat/completions" | "embeddings",
    url: string,
  ][] = [
    // learn.microsoft.com Azure OpenAI REST reference: {endpoint}/openai/deployments/{deployment-id}/chat/completions?api-version=
    [
      RES,
      "2024-10-21",
      "gpt-4o",
      "chat/completions",
      `${RES}/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21`,
    ],
    [
      `${RES}/`,
      "2024-10-21",
      "emb",
      "embeddings",
      `${RES}/openai/deployments/emb/embeddings?api-version=2024-10-21`,
    ],
    // A base that already ends in /openai (some SDK configs) is not doubled.
    [
      `${RES}/openai/`,
      "2024-06-01",
      "gpt-4o",
      "chat/completions",
      `${RES}/openai/deployments/gpt-4o/chat/completions?api-version=2024-06-01`,
    ],
    // Proxies (APIM) put the resource under a path prefix.
    [
      "https://apim.example.com/aoai",
      "2025-04-01-preview",
      "gpt-4o",
      "embeddings",
      "https://apim.example.com/aoai/openai/deployments/gpt-4o/embeddings?api-version=2025-04-01-preview",
    ],
    // The deployment is one path segment, percent-encoded.
    [
      RES,
      "2024-10-21",
      "my dep/1?x",
      "chat/completions",
      `${RES}/openai/deployments/my%20dep%2F1%3Fx/chat/completions?api-version=2024-10-21`,
    ],
    // api-version-lifecycle: v1 base_url https://{resource}.openai.azure.com/openai/v1/, no api-version needed.
    [`${RES}/openai/v1`, undefined, "gpt-4o", "chat/completions", `${RES}/openai/v1/chat/completions`],
    [`${RES}/openai/v1/`, undefined, "gpt-4o", "embeddings", `${RES}/openai/v1/embeddings`],
    // …and `?api-version=preview` opts the v1 API into preview features.
    [
      `${RES}/openai/v1`,
      "preview",
      "gpt-4o",
      "chat/completions",
      `${RES}/openai/v1/chat/completions?api-version=preview`,
    ],
  ];
  for (const [base, version, deployment, op, url] of cases) {
    assert.equal(azureUrl(azureAddressing(base, version), deployment, op), url, `${base} ${version} ${op}`);
  }
  assert.equal(azureAddressing(`${RES}/openai/v1`).form, "v1");
  assert.equal(azureAddressing(RES, "2024-10-21").form, "classic");
});

Deno.test("azure addressing: unusable config is an Error naming the fix", () => {
  assert.throws(() => azureAddressing(RES), /set api_version .*\/openai\/v1/);
  assert.throws(() => azureAddressing(`${RES}/openai`), /set api_version/);
  assert.throws(
    () => azureAddressing(`${RES}/openai/deployments/gpt-4o`, "2024-10-21"),
    /not a deployment URL/,
  );
  assert.throws(() => azureAddressing(`${RES}?api-version=2024-10-21`), /query string/);
  const config = { type: "azure", base_url: RES, api_key: "k" } as AzureProviderConfig;
  assert.throws(() => createAzureProvider(config), Error);
});

Deno.test("azure request: api-key header, deployment as model, stream usage asked when configured", () => {
  const headers = azureHeaders(
    { api_key: "azure-key", headers: { "api-key": "x", "X-Extra": "1" } },
    "req_1",
    true,
  );
  assert.equal(headers["api-key"], "azure-key", "operator headers cannot replace the key");
  assert.equal(headers["X-Extra"], "1");
  assert.equal(headers.accept, "text/event-stream");
  assert.equal("authorization" in headers, false);

  const request: ChatRequest = {
    model: "chat-alias",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
  };
  assert.deepEqual(toUpstreamChatBody(request, "gpt-4o", true), {
    model: "gpt-4o",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  assert.equal(toUpstreamChatBody(request, "gpt-4o", false).stream_options, undefined);
});

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
const CF_SAFE =
  '{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}';
const ID =
  '"created":1736407895,"id":"chatcmpl-AnhIt2rw8vL8czymkCwEOKKTg7HPc","model":"gpt-4o-mini-2024-07-18"';
const TAIL = `${ID},"object":"chat.completion.chunk","system_fingerprint":"fp_5154047bf2","usage":null}`;
const RECORDED_STREAM = [
  `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}}],"usage":null}`,
  `data: {"choices":[{"content_filter_results":{},"delta":{"content":"","refusal":null,"role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}],${TAIL}`,
  `data: {"choices":[{"content_filter_results":${CF_SAFE},"delta":{"content":"Grüße"},"finish_reason":null,"index":0,"logprobs":null}],${TAIL}`,
  `data: {"choices":[{"content_filter_results":${CF_SAFE},"delta":{"content":" aus Köln 🌧"},"finish_reason":null,"index":0,"logprobs":null}],${TAIL}`,
  `data: {"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],${TAIL}`,
  `data: {"id":"","object":"","created":0,"model":"","choices":[{"index":0,"finish_reason":null,"content_filter_results":${CF_SAFE},"content_filter_offsets":{"check_offset":30,"start_offset":0,"end_offset":30}}],"usage":null}`,
  `data: {"choices":[],${ID},"object":"chat.completion.chunk","system_fingerprint":"fp_5154047bf2","usage":{"completion_tokens":6,"prompt_tokens":14,"total_tokens":20}}`,
  "data: [DONE]",
  "",
].join("\n\n");

async function runStages(parts: Uint8Array[]): Promise<ChatCompletionChunk[]> {
  const source = ReadableStream.from(parts);
  const out: ChatCompletionChunk[] = [];
  const chunks = source
    .pipeThrough(new SseParseStream())
    .pipeThrough(new OpenAIChunkStream("az"))
    .pipeThrough(new AzureChunkStream());
  for await (const chunk of chunks) out.push(chunk);
  return out;
}

Deno.test("azure stream: the recorded stream becomes OpenAI-shaped chunks with annotations kept", async () => {
  const chunks = await runStages([new TextEncoder().encode(RECORDED_STREAM)]);
  assert.equal(chunks.length, 6, "the annotation-only first chunk is folded into the role chunk");
  for (const chunk of chunks) {
    assert.equal(chunk.object, "chat.completion.chunk");
    assert.equal(chunk.id, "chatcmpl-AnhIt2rw8vL8czymkCwEOKKTg7HPc");
    assert.equal(chunk.created, 1736407895);
  }
  const [role, c1, c2, finish, annotation, usage] = chunks;
  const prompt = role.prompt_filter_results as { content_filter_results: { jailbreak: unknown } }[];
  assert.deepEqual(prompt[0].content_filter_results.jailbreak, { filtered: false, detected: false });
  assert.deepEqual(role.choices[0].delta, { content: "", refusal: null, role: "assistant" });
  assert.equal("prompt_filter_results" in c1, false, "annotations are added once");
  assert.equal(
    `${(c1.choices[0].delta as { content: string }).content}${
      (c2.choices[0].delta as { content: string }).content
    }`,
    "Grüße aus Köln 🌧",
  );
  assert.deepEqual(c1.choices[0].content_filter_results, JSON.parse(CF_SAFE));
  assert.equal(finish.choices[0].finish_reason, "stop");
  assert.deepEqual(annotation.choices[0].delta, {}, "a choice without delta gets an empty one");
  assert.deepEqual(annotation.choices[0].content_filter_offsets, {
    check_offset: 30,
    start_offset: 0,
    end_offset: 30,
  });
  assert.deepEqual(usage.choices, []);
  assert.deepEqual(usage.usage, { completion_tokens: 6, prompt_tokens: 14, total_tokens: 20 });
});

Deno.test("azure stream: the same chunks wherever the recorded stream is split", async () => {
  const bytes = new TextEncoder().encode(RECORDED_STREAM);
  const whole = await runStages([bytes]);
  for (let i = 1; i < bytes.length; i++) {
    const split = await runStages([bytes.slice(0, i), bytes.slice(i)]);
    assert.deepEqual(split, whole, `split at byte ${i}`);
  }
});

Deno.test("azure stream: a content-filter finish in an annotation chunk passes through", async () => {
  // content-streaming docs, "Sample response stream (blocked by filters)".
  const text = [
    `data: {"id":"","object":"","created":0,"model":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":${CF_SAFE}}],"choices":[],"usage":null}`,
    `data: {"id":"chatcmpl-8JCbt5d4luUIhYCI7YH4dQK7hnHx2","object":"chat.completion.chunk","created":1699587397,"model":"gpt-35-turbo","choices":[{"index":0,"finish_reason":null,"delta":{"role":"assistant"}}],"usage":null}`,
    `data: {"id":"chatcmpl-8JCbt5d4luUIhYCI7YH4dQK7hnHx2","object":"chat.completion.chunk","created":1699587397,"model":"gpt-35-turbo","choices":[{"index":0,"finish_reason":null,"delta":{"content":"Hey"}}],"usage":null}`,
    `data: {"id":"","object":"","created":0,"model":"","choices":[{"index":0,"finish_reason":"content_filter","content_filter_results":{"protected_material_text":{"detected":true,"filtered":true}},"content_filter_offsets":{"check_offset":65,"start_offset":65,"end_offset":1056}}],"usage":null}`,
    "data: [DONE]",
    "",
  ].join("\n\n");
  const chunks = await runStages([new TextEncoder().encode(text)]);
  assert.equal(chunks.length, 3);
  const last = chunks[2];
  assert.equal(last.id, "chatcmpl-8JCbt5d4luUIhYCI7YH4dQK7hnHx2");
  assert.equal(last.choices[0].finish_reason, "content_filter");
  assert.deepEqual(last.choices[0].delta, {});
  assert.deepEqual(last.choices[0].content_filter_results, {
    protected_material_text: { detected: true, filtered: true },
  });
});
