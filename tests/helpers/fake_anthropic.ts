/**
 * A fake Anthropic Messages API (`POST /v1/messages`) speaking the documented wire format, with behaviour
 * picked by the request's `model` so one server covers every scenario:
 *
 * - `claude-ok`: a text answer ({@linkcode FAKE_CLAUDE_ANSWER}), streamed word by word with a `ping`.
 * - `claude-tools`: a text block then a `get_weather` tool_use block; streamed as in Anthropic's streaming
 *   guide (input in JSON fragments).
 * - `claude-midstream-error`: streams some text, then an `overloaded_error` event.
 * - `claude-length`: `claude-ok`'s answer cut by the token limit (`stop_reason: "max_tokens"`).
 * - `claude-pause`: a turn Anthropic's server-side tool loop paused (`stop_reason: "pause_turn"`): a text
 *   block, a web search and its results ({@linkcode PAUSED_BLOCKS}), and no answer yet; the client is to send
 *   it back to continue. Streamed with each block whole in its `content_block_start`.
 * - `claude-429` (with `retry-after: 7`), `claude-529`, `claude-500`, `claude-400`: error answers.
 * - any answering model, asked for `thinking: {type: "enabled", budget_tokens}`: a thinking block
 *   ({@linkcode FAKE_CLAUDE_THINKING}, signed) and a redacted_thinking block come first, streamed as
 *   `thinking_delta`s and a `signature_delta`. Like Anthropic, it refuses a budget under 1,024 or not below
 *   `max_tokens`, and a final assistant turn with tool_use that does not start with a thinking block.
 *   Like Anthropic, it checks signatures: a thinking block sent back whose signature is not the one it gave is
 *   refused (400).
 * - a request with `cache_control` anywhere: usage reports cache writes and reads
 *   ({@linkcode FAKE_CACHE_USAGE}), in the Message and in `message_start`, the writes split by lifetime in
 *   `cache_creation` (an hour when a `cache_control` asks `ttl: "1h"`). Like Anthropic, it refuses more than four
 *   blocks with `cache_control` (tools, system and message content, tool results' content included), a
 *   `ttl: "1h"` one after a shorter-lived one (in that order), and `cache_control` on a message itself (a
 *   field of content blocks only).
 * - a forced tool (`tool_choice` `{type: "tool", name}`, or `{type: "any"}` on a model other than `claude-tools`,
 *   which then calls its last tool): a `tool_use` of that tool whose input matches its `input_schema`
 *   (`valueForSchema`, every string {@linkcode FAKE_CLAUDE_ANSWER}), streamed as `input_json_delta` fragments.
 *   Like Anthropic, it refuses a forced tool with thinking enabled, and a `tool_choice` naming no declared tool.
 * - a request whose shape Anthropic refuses (`vendor_refusals.ts`: tool blocks without tools, …): its 400.
 * - `POST /v1/messages/count_tokens`: a deterministic count (see `countTokens`); `claude-500` fails it.
 *
 * Every request must carry `x-api-key: FAKE_ANTHROPIC_KEY` (else 401 `authentication_error`) and an
 * `anthropic-version` date from 2023-06-01 on (else 400); every request is recorded (headers included, so a test
 * reads the `anthropic-beta` it got).
 *
 * @module
 */

import { fragments, valueForSchema } from "./fake_json_schema.ts";
import { anthropicRefusal } from "./vendor_refusals.ts";

/** The key the fake accepts. */
export const FAKE_ANTHROPIC_KEY = "sk-ant-fake-key-0123456789abcdef";
/** The text `claude-ok` answers with. */
export const FAKE_CLAUDE_ANSWER = "Hello from the fake Claude!";
/** The thinking every answer starts with when the request enables thinking. */
export const FAKE_CLAUDE_THINKING = "The user greets me. I should greet back, café ☕ style.";
/** The signature of the fake's thinking block, which must never reach a client. */
export const FAKE_CLAUDE_SIGNATURE = "EqQBCgIYAhIMfakeSignatureNeverShown";

/** The cache counts a request with `cache_control` gets in its usage. */
export const FAKE_CACHE_USAGE = { cache_creation_input_tokens: 40, cache_read_input_tokens: 300 } as const;

/** Whether the request's body asks for prompt caching anywhere (system, messages or tools). */
function cached(body: Record<string, unknown>): boolean {
  return JSON.stringify(body).includes('"cache_control"');
}

/**
 * The cache counts of a request with `cache_control`, and Anthropic's split of the writes by lifetime: all of
 * them kept an hour when a `cache_control` asks `ttl: "1h"`, else five minutes.
 */
function cacheUsage(body: Record<string, unknown>) {
  const oneHour = JSON.stringify(body).includes('"ttl":"1h"');
  const written = FAKE_CACHE_USAGE.cache_creation_input_tokens;
  return {
    ...FAKE_CACHE_USAGE,
    cache_creation: {
      ephemeral_5m_input_tokens: oneHour ? 0 : written,
      ephemeral_1h_input_tokens: oneHour ? written : 0,
    },
  };
}

/** The blocks of a Messages body that may carry `cache_control`, in the order Anthropic reads them. */
function cacheableBlocks(body: Record<string, unknown>): Record<string, unknown>[] {
  const list = (v: unknown) => Array.isArray(v) ? v as Record<string, unknown>[] : [];
  const blocks = [...list(body.tools), ...list(body.system)];
  for (const message of list(body.messages)) {
    for (const block of list(message.content)) blocks.push(block, ...list(block.content));
  }
  return blocks;
}

/** Anthropic's checks on a request's `cache_control` markers; the error answer, or null when they are fine. */
function cacheControlError(body: Record<string, unknown>): Response | null {
  const messages = Array.isArray(body.messages) ? body.messages as Record<string, unknown>[] : [];
  const at = messages.findIndex((m) => "cache_control" in m);
  if (at >= 0) {
    return errorResponse(
      400,
      "invalid_request_error",
      `messages.${at}.cache_control: Extra inputs are not permitted`,
    );
  }
  const marked = cacheableBlocks(body).map((b) => b.cache_control as { ttl?: unknown } | undefined)
    .filter((c) => c !== undefined);
  if (marked.length > 4) {
    return errorResponse(
      400,
      "invalid_request_error",
      `A maximum of 4 blocks with cache_control may be provided. Found ${marked.length}.`,
    );
  }
  const shorter = marked.findIndex((c) => c.ttl !== "1h");
  if (shorter >= 0 && marked.slice(shorter).some((c) => c.ttl === "1h")) {
    return errorResponse(
      400,
      "invalid_request_error",
      "A cache_control block with ttl='1h' must not come after one with a shorter ttl.",
    );
  }
  return null;
}

/** One request the fake received. */
export interface RecordedAnthropicRequest {
  path: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A running fake. */
export interface FakeAnthropic {
  /** `http://127.0.0.1:<port>`: the API root, as `base_url` expects it. */
  baseURL: string;
  requests: RecordedAnthropicRequest[];
  stop(): Promise<void>;
}

const encoder = new TextEncoder();

function event(type: string, data: Record<string, unknown>): Uint8Array {
  return encoder.encode(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
}

function errorResponse(status: number, type: string, message: string, headers: Record<string, string> = {}) {
  return new Response(
    JSON.stringify({ type: "error", error: { type, message }, request_id: "req_fake0123456789" }),
    {
      status,
      headers: { "content-type": "application/json", "request-id": "req_fake0123456789", ...headers },
    },
  );
}

const TOOL_INPUT_FRAGMENTS = [
  "",
  '{"location":',
  ' "San',
  " Francisc",
  "o,",
  ' CA"',
  ",",
  ' "unit": "fah',
  'renheit"}',
];

function message(model: string, content: unknown[], stopReason: string, usage: Record<string, unknown>) {
  return {
    id: "msg_fake01",
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage,
  };
}

/** The content of `claude-pause`'s paused turn: it said it would search, searched, and paused there. */
export const PAUSED_BLOCKS = [
  { type: "text", text: "Let me search for that." },
  { type: "server_tool_use", id: "srvtoolu_fake01", name: "web_search", input: { query: "fake news" } },
  {
    type: "web_search_tool_result",
    tool_use_id: "srvtoolu_fake01",
    content: [{ type: "web_search_result", url: "https://example.com/", title: "Example", page_age: null }],
  },
] as const;

/** The thinking and redacted_thinking blocks that open an answer with thinking on. */
const THINKING_BLOCKS = [
  { type: "thinking", thinking: FAKE_CLAUDE_THINKING, signature: FAKE_CLAUDE_SIGNATURE },
  { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP" },
];

/** Anthropic's checks on a request with thinking enabled; the error answer, or null when it is fine. */
function thinkingError(body: Record<string, unknown>): Response | null {
  const thinking = body.thinking as { budget_tokens?: unknown } | undefined;
  const budget = thinking?.budget_tokens;
  if (typeof budget !== "number" || budget < 1024) {
    return errorResponse(
      400,
      "invalid_request_error",
      "thinking.enabled.budget_tokens: Input should be >= 1024",
    );
  }
  if (budget >= Number(body.max_tokens)) {
    return errorResponse(
      400,
      "invalid_request_error",
      "`max_tokens` must be greater than `thinking.budget_tokens`.",
    );
  }
  const messages = Array.isArray(body.messages) ? body.messages as { role: string; content: unknown }[] : [];
  const last = messages.findLast((m) => m.role === "assistant");
  const blocks = Array.isArray(last?.content) ? last.content as { type: string }[] : [];
  const signed = blocks.find((b) => b.type === "thinking") as { signature?: unknown } | undefined;
  if (signed !== undefined && signed.signature !== FAKE_CLAUDE_SIGNATURE) {
    return errorResponse(
      400,
      "invalid_request_error",
      "messages.1.content.0: Invalid `signature` in `thinking` block",
    );
  }
  if (blocks.some((b) => b.type === "tool_use") && blocks[0]?.type !== "thinking") {
    return errorResponse(
      400,
      "invalid_request_error",
      "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` " +
        "is enabled, a final `assistant` message must start with a thinking block.",
    );
  }
  return null;
}

function streamEvents(model: string, thinking = false, cache?: ReturnType<typeof cacheUsage>): Uint8Array[] {
  const usage = { input_tokens: 25, output_tokens: 1, ...cache };
  const start = event("message_start", {
    message: { ...message(model, [], "", usage), stop_reason: null },
  });
  const out = [start, event("ping", {})];
  if (thinking) {
    out.push(
      event("content_block_start", {
        index: 0,
        content_block: { type: "thinking", thinking: "", signature: "" },
      }),
      ...FAKE_CLAUDE_THINKING.split(/(?<= )/).map((t) =>
        event("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: t } })
      ),
      event("content_block_delta", {
        index: 0,
        delta: { type: "signature_delta", signature: FAKE_CLAUDE_SIGNATURE },
      }),
      event("content_block_stop", { index: 0 }),
      event("content_block_start", { index: 1, content_block: THINKING_BLOCKS[1] }),
      event("content_block_stop", { index: 1 }),
    );
  }
  // Later blocks follow the thinking blocks.
  const ix = (i: number) => thinking ? i + 2 : i;
  const text = (index: number, parts: string[]) => [
    event("content_block_start", { index, content_block: { type: "text", text: "" } }),
    ...parts.map((t) => event("content_block_delta", { index, delta: { type: "text_delta", text: t } })),
    event("content_block_stop", { index }),
  ];
  const end = (reason: string, output: number) => [
    event("message_delta", {
      delta: { stop_reason: reason, stop_sequence: null },
      usage: { output_tokens: output },
    }),
    event("message_stop", {}),
  ];
  if (model === "claude-tools") {
    out.push(...text(ix(0), ["Okay, let's check", " the weather:"]));
    out.push(event("content_block_start", {
      index: ix(1),
      content_block: {
        type: "tool_use",
        id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        name: "get_weather",
        input: {},
      },
    }));
    for (const p of TOOL_INPUT_FRAGMENTS) {
      out.push(
        event("content_block_delta", { index: ix(1), delta: { type: "input_json_delta", partial_json: p } }),
      );
    }
    out.push(event("content_block_stop", { index: ix(1) }), ...end("tool_use", 89));
  } else if (model === "claude-pause") {
    PAUSED_BLOCKS.forEach((block, index) => {
      out.push(
        event("content_block_start", { index: ix(index), content_block: block }),
        event("content_block_stop", { index: ix(index) }),
      );
    });
    out.push(...end("pause_turn", 40));
  } else if (model === "claude-midstream-error") {
    out.push(event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
    out.push(event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Partial" } }));
    out.push(event("error", { error: { type: "overloaded_error", message: "Overloaded" } }));
  } else {
    const reason = model === "claude-length" ? "max_tokens" : "end_turn";
    out.push(...text(ix(0), FAKE_CLAUDE_ANSWER.split(/(?<= )/)), ...end(reason, 15));
  }
  return out;
}

/** The tool call a forced `tool_choice` gets, an error answer for a choice Anthropic refuses, or null. */
function forcedToolCall(
  model: string,
  body: Record<string, unknown>,
  thinking: boolean,
): { name: string; input: unknown } | Response | null {
  const choice = body.tool_choice as { type?: unknown; name?: unknown } | undefined;
  const tools = Array.isArray(body.tools) ? body.tools as { name?: unknown; input_schema?: unknown }[] : [];
  if (choice?.type !== "tool" && choice?.type !== "any") return null;
  if (thinking) {
    return errorResponse(
      400,
      "invalid_request_error",
      "Thinking may not be enabled when tool_choice forces tool use.",
    );
  }
  if (choice.type === "any" && model === "claude-tools") return null;
  const tool = choice.type === "tool" ? tools.find((t) => t.name === choice.name) : tools.at(-1);
  if (tool === undefined) {
    return errorResponse(400, "invalid_request_error", "tool_choice: the named tool is not in tools");
  }
  return { name: String(tool.name), input: valueForSchema(tool.input_schema, FAKE_CLAUDE_ANSWER) };
}

/** The events of a forced tool call: the input streamed as JSON fragments. */
function forcedToolEvents(model: string, call: { name: string; input: unknown }): Uint8Array[] {
  const usage = { input_tokens: 25, output_tokens: 1 };
  return [
    event("message_start", { message: { ...message(model, [], "", usage), stop_reason: null } }),
    event("content_block_start", {
      index: 0,
      content_block: { type: "tool_use", id: "toolu_fakeForced01", name: call.name, input: {} },
    }),
    ...fragments(JSON.stringify(call.input)).map((partial_json) =>
      event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json } })
    ),
    event("content_block_stop", { index: 0 }),
    event("message_delta", {
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { output_tokens: 30 },
    }),
    event("message_stop", {}),
  ];
}

/** What the fake's `count_tokens` adds to the text's length, so a test can tell its count from an estimate. */
export const FAKE_ANTHROPIC_COUNT_BASE = 1000;

/** The characters of every text in a Messages body's `system` or `messages` (strings and `text` blocks). */
function textLength(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + textLength(v), 0);
  if (value === null || typeof value !== "object") return 0;
  const o = value as Record<string, unknown>;
  return typeof o.text === "string" ? o.text.length : textLength(o.content);
}

/**
 * `POST /v1/messages/count_tokens`: {@linkcode FAKE_ANTHROPIC_COUNT_BASE} plus the characters of the system
 * prompt and messages. Like Anthropic, it refuses the Messages fields it does not take; `claude-500` fails.
 */
function countTokens(body: Record<string, unknown>): Response {
  for (const key of ["max_tokens", "stream", "temperature", "top_p", "stop_sequences", "metadata"]) {
    if (key in body) {
      return errorResponse(400, "invalid_request_error", `${key}: Extra inputs are not permitted`);
    }
  }
  if (!Array.isArray(body.messages)) {
    return errorResponse(400, "invalid_request_error", "messages: Field required");
  }
  if (body.model === "claude-500") return errorResponse(500, "api_error", "Internal server error");
  return Response.json({
    input_tokens: FAKE_ANTHROPIC_COUNT_BASE + textLength(body.system) + textLength(body.messages),
  });
}

/** Starts the fake on a free loopback port. */
export function startFakeAnthropic(): FakeAnthropic {
  const requests: RecordedAnthropicRequest[] = [];
  const handler = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const body = await request.json().catch(() => ({}));
    requests.push({ path: url.pathname, headers: request.headers, body });
    if (request.headers.get("x-api-key") !== FAKE_ANTHROPIC_KEY) {
      return errorResponse(
        401,
        "authentication_error",
        `invalid x-api-key ${request.headers.get("x-api-key")}`,
      );
    }
    const version = request.headers.get("anthropic-version") ?? "";
    if (!/^\d{4}-\d{2}-\d{2}$/.test(version) || version < "2023-06-01") {
      return errorResponse(400, "invalid_request_error", "anthropic-version: header is required");
    }
    if (url.pathname === "/v1/messages/count_tokens" && request.method === "POST") return countTokens(body);
    if (url.pathname !== "/v1/messages" || request.method !== "POST") {
      return errorResponse(404, "not_found_error", "Not found");
    }
    if (typeof body.max_tokens !== "number") {
      return errorResponse(400, "invalid_request_error", "max_tokens: Field required");
    }
    const cacheRefusal = cacheControlError(body);
    if (cacheRefusal !== null) return cacheRefusal;
    const refusal = anthropicRefusal(body);
    if (refusal !== null) return errorResponse(400, "invalid_request_error", refusal);
    const model = String(body.model);
    switch (model) {
      case "claude-400":
        return errorResponse(400, "invalid_request_error", "messages: roles must alternate");
      case "claude-429":
        return errorResponse(429, "rate_limit_error", "Number of requests has exceeded your rate limit.", {
          "retry-after": "7",
        });
      case "claude-500":
        return errorResponse(500, "api_error", "Internal server error");
      case "claude-529":
        return errorResponse(529, "overloaded_error", "Overloaded");
    }
    const thinking = (body.thinking as { type?: unknown } | undefined)?.type === "enabled";
    const refused = thinking ? thinkingError(body) : null;
    if (refused !== null) return refused;
    const forced = forcedToolCall(model, body, thinking);
    if (forced instanceof Response) return forced;
    if (forced !== null && body.stream !== true) {
      return Response.json(message(
        model,
        [{ type: "tool_use", id: "toolu_fakeForced01", name: forced.name, input: forced.input }],
        "tool_use",
        { input_tokens: 480, output_tokens: 30 },
      ));
    }
    if (body.stream === true) {
      const events = forced !== null
        ? forcedToolEvents(model, forced)
        : streamEvents(model, thinking, cached(body) ? cacheUsage(body) : undefined);
      let i = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (i < events.length) controller.enqueue(events[i++]);
          else controller.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    }
    if (model === "claude-tools") {
      return Response.json(message(
        model,
        [
          ...(thinking ? THINKING_BLOCKS : []),
          { type: "text", text: "Okay, let's check the weather:" },
          {
            type: "tool_use",
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            name: "get_weather",
            input: { location: "San Francisco, CA", unit: "fahrenheit" },
          },
        ],
        "tool_use",
        { input_tokens: 472, output_tokens: 89 },
      ));
    }
    if (model === "claude-pause") {
      return Response.json(
        message(model, [...PAUSED_BLOCKS], "pause_turn", { input_tokens: 20, output_tokens: 40 }),
      );
    }
    return Response.json(
      message(
        model,
        [...(thinking ? THINKING_BLOCKS : []), { type: "text", text: FAKE_CLAUDE_ANSWER }],
        model === "claude-length" ? "max_tokens" : "end_turn",
        {
          input_tokens: 20,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 100,
          output_tokens: 7,
          ...(cached(body) ? cacheUsage(body) : {}),
        },
      ),
    );
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  return { baseURL: `http://127.0.0.1:${server.addr.port}`, requests, stop: () => server.shutdown() };
}
