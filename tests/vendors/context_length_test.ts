/**
 * A prompt over the model's context window, refused by each vendor in its documented words, reaches every client
 * API as that API's own too-long error, over real sockets: OpenAI's `context_length_exceeded` on chat completions
 * and Responses (`response.failed` with that code on a stream that had started), Anthropic's "prompt is too long"
 * on the Messages API (the text Claude Code compacts on), Google's 400 INVALID_ARGUMENT on the Gemini API. The
 * vendor's own message is kept. SDK apps and agents (Codex, opencode, Claude Code) compact the conversation on
 * these and only these; a `code: null` left them with a dead-end error.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { eventFrame, exceptionFrame } from "../helpers/fake_bedrock.ts";
import { GEMINI_OK, json, withMixedVendors } from "../helpers/mixed_vendors.ts";
import type { RawStep } from "../helpers/raw_upstream.ts";

const CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

function configFor(url: string): string {
  const target = (provider: string, model: string) =>
    `{ type: chat, targets: [ { provider: ${provider}, model: "${model}", retries: 0 } ] }`;
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms }
providers:
  openai: { type: openai, base_url: "${url}/oai/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  anthropic: { type: anthropic, base_url: "${url}", api_key: "sk-ant-key-abcdef0123456789" }
  gemini: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
  bedrock:
    type: bedrock
    region: us-east-1
    base_url: "${url}"
    access_key_id: AKIAQ7EXAMPLEW3RT6YU
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY
models:
  chat-ctx-openai: ${target("openai", "gpt-4o")}
  chat-ctx-anthropic: ${target("anthropic", "claude-sonnet-4-5")}
  chat-ctx-gemini: ${target("gemini", "gemini-2.5-pro")}
  chat-ctx-bedrock: ${target("bedrock", "meta.llama3-3-70b-instruct-v1:0")}
  chat-ctx-bedrock-claude: ${target("bedrock", CLAUDE)}
${TEST_TOKENS_YAML}`;
}

const jsonError = (status: number, body: unknown, headers: Record<string, string> = {}): RawStep => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  chunks: [JSON.stringify(body)],
});

const BEDROCK_VALIDATION = {
  "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
};

/** One vendor's too-long error, as its documentation and its users' reports show it. */
interface Vendor {
  alias: string;
  step: RawStep;
  /** What of the vendor's message the client must still read. */
  says: RegExp;
  /** The Messages API's message for it (Claude Code's "prompt is too long", with the counts when there are some). */
  messages: RegExp;
}

const VENDORS: Record<string, Vendor> = {
  openai: {
    alias: "chat-ctx-openai",
    step: jsonError(400, {
      error: {
        message: "This model's maximum context length is 128000 tokens. However, your messages resulted in " +
          "130021 tokens. Please reduce the length of the messages.",
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      },
    }),
    says: /maximum context length is 128000 tokens/,
    messages: /^prompt is too long: 130021 tokens > 128000 maximum \(This model's maximum context length/,
  },
  "vllm (OpenAI-compatible, no code)": {
    alias: "chat-ctx-openai",
    step: jsonError(400, {
      object: "error",
      message:
        "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. " +
        "Please reduce the length of the input messages.",
      type: "BadRequestError",
      param: null,
      code: 400,
    }),
    says: /maximum context length is 4096 tokens/,
    messages: /^prompt is too long: 5000 tokens > 4096 maximum \(/,
  },
  anthropic: {
    alias: "chat-ctx-anthropic",
    step: jsonError(400, {
      type: "error",
      error: { type: "invalid_request_error", message: "prompt is too long: 208310 tokens > 200000 maximum" },
      request_id: "req_011CVQe1dLrGNMJyE1ghG1av",
    }),
    says: /prompt is too long: 208310 tokens > 200000 maximum/,
    messages: /^prompt is too long: 208310 tokens > 200000 maximum$/,
  },
  gemini: {
    alias: "chat-ctx-gemini",
    step: jsonError(400, {
      error: {
        code: 400,
        message: "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
        status: "INVALID_ARGUMENT",
      },
    }),
    says: /The input token count \(1200293\) exceeds the maximum number of tokens allowed \(1048576\)/,
    messages: /^prompt is too long: 1200293 tokens > 1048576 maximum \(The input token count/,
  },
  "bedrock (Converse)": {
    alias: "chat-ctx-bedrock",
    step: jsonError(400, {
      message: "The model returned the following errors: Input is too long for requested model.",
    }, BEDROCK_VALIDATION),
    says: /Input is too long for requested model/,
    messages: /^prompt is too long: The model returned the following errors: Input is too long/,
  },
  "bedrock (Titan's words)": {
    alias: "chat-ctx-bedrock",
    step: jsonError(400, {
      message:
        "400 Bad Request: Too many input tokens. Max input tokens: 8192, request input token count: 9279 ",
    }, BEDROCK_VALIDATION),
    says: /Too many input tokens/,
    messages: /^prompt is too long: 9279 tokens > 8192 maximum \(/,
  },
};

const headers = {
  authorization: `Bearer ${TEST_TOKEN}`,
  "anthropic-version": "2023-06-01",
  "content-type": "application/json",
};

async function post(gw: TestGateway, path: string, body: Record<string, unknown>) {
  const response = await fetch(`${gw.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  // The Gemini API cuts the connection after a stream's error event (`cutAfterFail`): what arrived is the answer.
  let text = "";
  const decoder = new TextDecoder();
  try {
    for await (const bytes of response.body!) text += decoder.decode(bytes, { stream: true });
  } catch { /* cut */ }
  return { status: response.status, text, body: text.startsWith("{") ? JSON.parse(text) : null };
}

/** Each client API: how it asks, and what its too-long error must be. */
const CLIENT_APIS: Record<string, (gw: TestGateway, vendor: Vendor) => Promise<void>> = {
  "chat completions": async (gw, vendor) => {
    const answer = await post(gw, "/v1/chat/completions", {
      model: vendor.alias,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.body.error.code, "context_length_exceeded", answer.text);
    assert.equal(answer.body.error.type, "invalid_request_error");
    assert.equal(answer.body.error.param, "messages");
    assert.match(answer.body.error.message, vendor.says);
  },
  responses: async (gw, vendor) => {
    for (const stream of [false, true]) {
      const answer = await post(gw, "/v1/responses", { model: vendor.alias, input: "hi", stream });
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.error.code, "context_length_exceeded", answer.text);
      assert.equal(answer.body.error.type, "invalid_request_error");
      assert.equal(answer.body.error.param, "input");
      assert.match(answer.body.error.message, vendor.says);
    }
  },
  messages: async (gw, vendor) => {
    for (const stream of [false, true]) {
      const answer = await post(gw, "/v1/messages", {
        model: vendor.alias,
        max_tokens: 100,
        messages: [{ role: "user", content: "hi" }],
        stream,
      });
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.type, "error");
      assert.equal(answer.body.error.type, "invalid_request_error", answer.text);
      assert.match(answer.body.error.message, vendor.messages);
      assert.match(answer.body.error.message, vendor.says);
    }
  },
  gemini: async (gw, vendor) => {
    const answer = await post(gw, `/v1beta/models/${vendor.alias}:generateContent`, {
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
    });
    assert.equal(answer.status, 400, answer.text);
    assert.equal(answer.body.error.code, 400);
    assert.equal(answer.body.error.status, "INVALID_ARGUMENT", answer.text);
    assert.match(answer.body.error.message, vendor.says);
  },
};

Deno.test("context length: each vendor's too-long error is each client API's own", async () => {
  await withMixedVendors(async (gw, up) => {
    for (const [vendorName, vendor] of Object.entries(VENDORS)) {
      up.next = vendor.step;
      for (const [api, check] of Object.entries(CLIENT_APIS)) {
        await check(gw, vendor).catch((err: Error) => {
          err.message = `${vendorName} → ${api}: ${err.message}`;
          throw err;
        });
      }
    }
    // The record says why the request failed.
    const line = await waitForLog(
      gw,
      (l) => l.msg === "request" && l.alias === "chat-ctx-gemini" && l.status === 400,
    );
    assert.equal(line.error_code, "context_length_exceeded");
  }, configFor);
});

Deno.test("context length: Claude on Bedrock through the Messages API says it in Claude Code's words", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = jsonError(400, { message: "Input is too long for requested model." }, BEDROCK_VALIDATION);
    for (const stream of [false, true]) {
      const answer = await post(gw, "/v1/messages", {
        model: "chat-ctx-bedrock-claude",
        max_tokens: 100,
        messages: [{ role: "user", content: "hi" }],
        stream,
      });
      assert.equal(answer.status, 400, answer.text);
      assert.ok(up.requests.at(-1)!.path.includes("/invoke"), "passed through to InvokeModel");
      assert.equal(answer.body.error.type, "invalid_request_error");
      assert.equal(answer.body.error.message, "prompt is too long: Input is too long for requested model.");
    }
    // Claude's own words on Bedrock are kept as they are.
    up.next = jsonError(
      400,
      { message: "prompt is too long: 208310 tokens > 200000 maximum" },
      BEDROCK_VALIDATION,
    );
    const own = await post(gw, "/v1/messages", {
      model: "chat-ctx-bedrock-claude",
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(own.body.error.message, "prompt is too long: 208310 tokens > 200000 maximum");
  }, configFor);
});

/** Bedrock's stream: it started, then a `validationException` frame says the input is too long. */
const BEDROCK_STREAM_TOO_LONG: RawStep = {
  status: 200,
  headers: { "content-type": "application/vnd.amazon.eventstream" },
  chunks: [
    eventFrame("messageStart", { role: "assistant" }),
    eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hel" } }),
    exceptionFrame("validationException", "Input is too long for requested model."),
  ],
};

/** The SSE events of a stream body, each `data:` line's JSON. */
function events(text: string): Record<string, unknown>[] {
  return text.split("\n").filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)));
}

Deno.test("context length: a stream that had started ends with each client API's too-long error", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = BEDROCK_STREAM_TOO_LONG;
    const chat = await post(gw, "/v1/chat/completions", {
      model: "chat-ctx-bedrock",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    assert.equal(chat.status, 200);
    const chatError = events(chat.text).find((e) => e.error !== undefined)?.error as Record<string, unknown>;
    assert.equal(chatError?.code, "context_length_exceeded", chat.text);

    const responses = await post(gw, "/v1/responses", {
      model: "chat-ctx-bedrock",
      input: "hi",
      stream: true,
    });
    assert.equal(responses.status, 200);
    const failed = events(responses.text).find((e) => e.type === "response.failed");
    const failure = (failed?.response as Record<string, Record<string, unknown>>)?.error;
    assert.equal(failure?.code, "context_length_exceeded", responses.text);
    assert.match(String(failure?.message), /Input is too long for requested model/);
    const error = events(responses.text).find((e) => e.type === "error");
    assert.equal(error?.code, "context_length_exceeded");

    const messages = await post(gw, "/v1/messages", {
      model: "chat-ctx-bedrock",
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    assert.equal(messages.status, 200);
    const messagesError = events(messages.text).find((e) => e.type === "error")?.error as Record<
      string,
      unknown
    >;
    assert.equal(messagesError?.type, "invalid_request_error", messages.text);
    assert.equal(messagesError?.message, "prompt is too long: Input is too long for requested model.");

    const gemini = await post(gw, "/v1beta/models/chat-ctx-bedrock:streamGenerateContent?alt=sse", {
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
    });
    assert.equal(gemini.status, 200);
    const geminiError = events(gemini.text).find((e) => e.error !== undefined)?.error as Record<
      string,
      unknown
    >;
    assert.equal(geminiError?.status, "INVALID_ARGUMENT", gemini.text);
    assert.equal(geminiError?.code, 400);
  }, configFor);
});

/** An alias of a small-window target, then a larger one; one failure would eject a target that failed. */
function fallbackConfig(url: string): string {
  return configFor(url).replace("routing: {", "routing: { eject_after: 1,").replace(
    "models:\n",
    `models:
  chat-ctx-fallback:
    type: chat
    targets:
      - { provider: anthropic, model: claude-small-window, retries: 2 }
      - { provider: gemini, model: gemini-2.5-pro, retries: 0 }
`,
  );
}

Deno.test("context length: a prompt too long for one target falls back to the alias's next, with a larger window", async () => {
  await withMixedVendors(async (gw, up) => {
    const tooLong = VENDORS.anthropic.step;
    // The alias's first target (Claude, a small window) refuses the prompt; Gemini, next, takes it.
    up.stepFor = (request) => request.path.includes("/v1/messages") ? tooLong : json(GEMINI_OK);
    for (let i = 0; i < 3; i++) {
      const answer = await post(gw, "/v1/chat/completions", {
        model: "chat-ctx-fallback",
        messages: [{ role: "user", content: "a long conversation" }],
      });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.choices[0].message.content, "hi");
    }
    const paths = up.requests.map((r) => r.path.includes("/v1/messages") ? "claude" : "gemini");
    // Claude is asked each time (not retried: the prompt would not shrink), and is never ejected for it.
    assert.deepEqual(paths, ["claude", "gemini", "claude", "gemini", "claude", "gemini"]);
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "chat-ctx-fallback");
    assert.deepEqual(
      (line.attempt_log as { outcome: string }[]).map((a) => a.outcome),
      ["context_length_exceeded", "ok"],
    );
    // Too long for every target: the client gets the too-long error (its last target's), to compact on.
    up.stepFor = (request) => request.path.includes("/v1/messages") ? tooLong : VENDORS.gemini.step;
    const refused = await post(gw, "/v1/chat/completions", {
      model: "chat-ctx-fallback",
      messages: [{ role: "user", content: "a longer conversation" }],
    });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.error.code, "context_length_exceeded");
    assert.match(refused.body.error.message, VENDORS.gemini.says);
  }, fallbackConfig);
});
