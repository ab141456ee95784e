/**
 * A fake Anthropic Messages API (`POST /v1/messages`) speaking the documented wire format, with behaviour
 * picked by the request's `model` so one server covers every scenario:
 *
 * - `claude-ok`: a text answer ({@linkcode FAKE_CLAUDE_ANSWER}), streamed word by word with a `ping`.
 * - `claude-tools`: a text block then a `get_weather` tool_use block; streamed as in Anthropic's streaming
 *   guide (input in JSON fragments).
 * - `claude-midstream-error`: streams some text, then an `overloaded_error` event.
 * - `claude-length`: `claude-ok`'s answer cut by the token limit (`stop_reason: "max_tokens"`).
 * - `claude-429` (with `retry-after: 7`), `claude-529`, `claude-500`, `claude-400`: error answers.
 *
 * Every request must carry `x-api-key: FAKE_ANTHROPIC_KEY` (else 401 `authentication_error`) and
 * `anthropic-version: 2023-06-01` (else 400); every request is recorded.
 *
 * @module
 */

/** The key the fake accepts. */
export const FAKE_ANTHROPIC_KEY = "sk-ant-fake-key-0123456789abcdef";
/** The text `claude-ok` answers with. */
export const FAKE_CLAUDE_ANSWER = "Hello from the fake Claude!";

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

function message(model: string, content: unknown[], stopReason: string, usage: Record<string, number>) {
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

function streamEvents(model: string): Uint8Array[] {
  const start = event("message_start", {
    message: { ...message(model, [], "", { input_tokens: 25, output_tokens: 1 }), stop_reason: null },
  });
  const out = [start, event("ping", {})];
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
    out.push(...text(0, ["Okay, let's check", " the weather:"]));
    out.push(event("content_block_start", {
      index: 1,
      content_block: {
        type: "tool_use",
        id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        name: "get_weather",
        input: {},
      },
    }));
    for (const p of TOOL_INPUT_FRAGMENTS) {
      out.push(
        event("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: p } }),
      );
    }
    out.push(event("content_block_stop", { index: 1 }), ...end("tool_use", 89));
  } else if (model === "claude-midstream-error") {
    out.push(event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
    out.push(event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Partial" } }));
    out.push(event("error", { error: { type: "overloaded_error", message: "Overloaded" } }));
  } else {
    const reason = model === "claude-length" ? "max_tokens" : "end_turn";
    out.push(...text(0, FAKE_CLAUDE_ANSWER.split(/(?<= )/)), ...end(reason, 15));
  }
  return out;
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
    if (request.headers.get("anthropic-version") !== "2023-06-01") {
      return errorResponse(400, "invalid_request_error", "anthropic-version: header is required");
    }
    if (url.pathname !== "/v1/messages" || request.method !== "POST") {
      return errorResponse(404, "not_found_error", "Not found");
    }
    if (typeof body.max_tokens !== "number") {
      return errorResponse(400, "invalid_request_error", "max_tokens: Field required");
    }
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
    if (body.stream === true) {
      const events = streamEvents(model);
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
    return Response.json(
      message(
        model,
        [{ type: "text", text: FAKE_CLAUDE_ANSWER }],
        model === "claude-length" ? "max_tokens" : "end_turn",
        {
          input_tokens: 20,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 100,
          output_tokens: 7,
        },
      ),
    );
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  return { baseURL: `http://127.0.0.1:${server.addr.port}`, requests, stop: () => server.shutdown() };
}
