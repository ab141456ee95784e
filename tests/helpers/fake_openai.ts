/**
 * A fake OpenAI-compatible upstream speaking the documented wire format, with behaviour picked by the
 * upstream `model` name so one server covers every scenario:
 *
 * - `gpt-ok`: a completion / word-by-word stream of {@linkcode FAKE_ANSWER}, usage when asked.
 * - `gpt-tools`: a tool call (`get_weather`), streamed in argument fragments.
 * - `gpt-gated`: streams {@linkcode FakeUpstream.gateChunks} chunks, each only after the test opens its gate.
 * - `gpt-cut`: two chunks, then the connection is torn down.
 * - `gpt-refuse`: a refusal ({@linkcode FAKE_REFUSAL}) instead of content, streamed in fragments.
 * - `gpt-length` / `gpt-filter`: `gpt-ok`'s answer with `finish_reason` `length` / `content_filter`.
 * - `gpt-json`: answers {@linkcode FAKE_JSON} (a JSON document, as under a `json_schema` format), whole or streamed.
 * - `gpt-reasoning`: reasoning as `reasoning_content` ({@linkcode FAKE_REASONING}, streamed in fragments before
 *   the answer), then {@linkcode FAKE_ANSWER}; usage counts {@linkcode FAKE_REASONING_TOKENS} reasoning tokens.
 * - `gpt-hang`: one chunk, then silence until the client aborts (noted in `aborted`), or the fake stops: a
 *   gateway that never aborts it (the regression its tests look for) fails its test, not the fake's stop.
 * - `gpt-slow-headers`: answers after 0.6 s.  `gpt-400` / `gpt-401` / `gpt-429` / `gpt-500` / `vllm-400`: errors.
 * - `emb-ok`: embeddings of `dimensions` (default 8) deterministic floats, as base64 float32s when asked (like
 *   OpenAI).
 * - `emb-fixed`: `emb-ok`'s 8 floats; a request giving `dimensions` is refused with a 400 naming it.
 *
 * @module
 */
import { encodeFloat32Base64 } from "../../lib/encoding/float32_base64.ts";

/** The refusal `gpt-refuse` answers with. */
export const FAKE_REFUSAL = "I'm sorry, I cannot help with that.";
/** The reasoning `gpt-reasoning` gives before its answer, as DeepSeek and vLLM do (`reasoning_content`). */
export const FAKE_REASONING = "The user says hi. A short greeting back will do.";
/** The reasoning tokens `gpt-reasoning` reports in `usage.completion_tokens_details`. */
export const FAKE_REASONING_TOKENS = 12;
/** The JSON document `gpt-json` answers with. */
export const FAKE_JSON = '{"greeting": "hello from the fake upstream"}';
/** The text `gpt-ok` answers with. */
export const FAKE_ANSWER = "Hello from the fake upstream!";
/** The key the fake expects; a request with another key gets 401. */
export const FAKE_KEY = "sk-fake-upstream-key-1234567890";

/** One request the fake received. */
export interface RecordedRequest {
  path: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A running fake upstream. */
export interface FakeUpstream {
  /** Base URL including `/v1`. */
  baseURL: string;
  requests: RecordedRequest[];
  /** `gpt-gated`: how many chunks to send. */
  gateChunks: number;
  /** `gpt-gated`: resolves when chunk i has been written to the socket. */
  chunkSent: PromiseWithResolvers<void>[];
  /** `gpt-gated`: the test resolves gate i to let chunk i go. */
  gates: PromiseWithResolvers<void>[];
  /** Resolves when a streaming request's client (the gateway) aborted. */
  aborted: PromiseWithResolvers<void>;
  stop(): Promise<void>;
}

const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function chunk(model: string, delta: Record<string, unknown>, finish: string | null, extra = {}) {
  return {
    id: "chatcmpl-fake123",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model,
    system_fingerprint: "fp_fake",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...extra,
  };
}

function sse(data: unknown): Uint8Array {
  return encoder.encode(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
}

function errorJson(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function usage(prompt: number, completion: number) {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** `gpt-reasoning`'s usage: its completion tokens include the reasoning ones. */
function reasoningUsage() {
  return { ...usage(11, 30), completion_tokens_details: { reasoning_tokens: FAKE_REASONING_TOKENS } };
}

/** Starts the fake on a free loopback port. */
export function startFakeOpenAI(): FakeUpstream {
  const stopping = Promise.withResolvers<void>();
  const fake: FakeUpstream = {
    baseURL: "",
    requests: [],
    gateChunks: 0,
    chunkSent: [],
    gates: [],
    aborted: Promise.withResolvers<void>(),
    stop: () => {
      stopping.resolve();
      return server.shutdown();
    },
  };
  const streamOf = (request: Request, producer: (push: (b: Uint8Array) => void) => Promise<void>) => {
    request.signal.addEventListener("abort", () => fake.aborted.resolve(), { once: true });
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        try {
          await producer((bytes) => controller.enqueue(bytes));
          controller.close();
        } catch (err) {
          controller.error(err);
        }
      },
      cancel() {
        fake.aborted.resolve();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  };

  const handler = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const body = await request.json().catch(() => ({}));
    fake.requests.push({ path: url.pathname, headers: request.headers, body });
    if (request.headers.get("authorization") !== `Bearer ${FAKE_KEY}`) {
      return errorJson(401, {
        error: {
          message: `Incorrect API key provided: ${request.headers.get("authorization")?.slice(7, 14)}***.`,
          type: "invalid_request_error",
          param: null,
          code: "invalid_api_key",
        },
      });
    }
    const model = String(body.model);
    const includeUsage = body.stream_options?.include_usage === true;
    if (url.pathname === "/v1/embeddings") {
      const inputs = Array.isArray(body.input) && typeof body.input[0] !== "number"
        ? body.input
        : [body.input];
      if (model === "emb-fixed" && body.dimensions !== undefined) {
        return errorJson(400, {
          error: {
            message: "This model does not support specifying dimensions.",
            type: "invalid_request_error",
            param: "dimensions",
            code: null,
          },
        });
      }
      const dims = typeof body.dimensions === "number" ? body.dimensions : 8;
      const data = inputs.map((_: unknown, index: number) => {
        const vector = Array.from({ length: dims }, (_, i) => (index + 1) * 0.125 + i * 0.0625);
        const embedding = body.encoding_format === "base64" ? encodeFloat32Base64(vector) : vector;
        return { object: "embedding", index, embedding };
      });
      return Response.json({ object: "list", data, model, usage: { prompt_tokens: 5, total_tokens: 5 } });
    }
    if (url.pathname !== "/v1/chat/completions") {
      return errorJson(404, { error: { message: "no such path" } });
    }

    switch (model) {
      case "gpt-400":
        return errorJson(400, {
          error: {
            message: "Invalid 'temperature'.",
            type: "invalid_request_error",
            param: "temperature",
            code: null,
          },
        });
      case "gpt-401":
        return errorJson(401, {
          error: {
            message: `Incorrect API key provided: ${FAKE_KEY}.`,
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        });
      case "gpt-429":
        return errorJson(429, {
          error: {
            message: "Rate limit reached.",
            type: "requests",
            param: null,
            code: "rate_limit_exceeded",
          },
        }, { "retry-after": "7" });
      case "gpt-500":
        return errorJson(500, { error: { message: "The server had an error.", type: "server_error" } });
      case "vllm-400":
        return errorJson(400, {
          object: "error",
          message: "max_tokens too large",
          type: "BadRequestError",
          param: null,
          code: 400,
        });
      case "gpt-slow-headers":
        await sleep(600);
        break;
    }

    if (body.stream !== true) {
      const message = model === "gpt-tools"
        ? {
          role: "assistant",
          content: null,
          refusal: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          }],
        }
        : model === "gpt-refuse"
        ? { role: "assistant", content: null, refusal: FAKE_REFUSAL, annotations: [] }
        : model === "gpt-reasoning"
        ? { role: "assistant", content: FAKE_ANSWER, reasoning_content: FAKE_REASONING, refusal: null }
        : model === "gpt-json"
        ? { role: "assistant", content: FAKE_JSON, refusal: null, annotations: [] }
        : { role: "assistant", content: FAKE_ANSWER, refusal: null, annotations: [] };
      return Response.json({
        id: "chatcmpl-fake123",
        object: "chat.completion",
        created: 1_700_000_000,
        model,
        choices: [{
          index: 0,
          message,
          logprobs: null,
          finish_reason: model === "gpt-tools" ? "tool_calls" : stopOf(model),
        }],
        usage: model === "gpt-reasoning" ? reasoningUsage() : usage(11, 7),
        service_tier: "default",
      });
    }

    const usageExtra = includeUsage ? { usage: null } : {};
    return streamOf(request, async (push) => {
      push(sse(chunk(model, { role: "assistant", content: "", refusal: null }, null, usageExtra)));
      if (model === "gpt-gated") {
        for (let i = 0; i < fake.gateChunks; i++) {
          await fake.gates[i].promise;
          push(sse(chunk(model, { content: `c${i} ` }, null, usageExtra)));
          fake.chunkSent[i].resolve();
        }
      } else if (model === "gpt-cut") {
        push(sse(chunk(model, { content: "partial " }, null, usageExtra)));
        push(sse(chunk(model, { content: "answer" }, null, usageExtra)));
        await sleep(20);
        throw new Error("connection torn down by the fake");
      } else if (model === "gpt-hang") {
        push(sse(chunk(model, { content: "waiting" }, null, usageExtra)));
        const aborted = new Promise<void>((resolve) =>
          request.signal.addEventListener("abort", () => resolve())
        );
        await Promise.race([aborted, stopping.promise]);
        return;
      } else if (model === "gpt-tools") {
        push(sse(chunk(
          model,
          {
            tool_calls: [{
              index: 0,
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: "" },
            }],
          },
          null,
          usageExtra,
        )));
        for (const part of ['{"ci', 'ty":', '"Paris"}']) {
          push(
            sse(
              chunk(model, { tool_calls: [{ index: 0, function: { arguments: part } }] }, null, usageExtra),
            ),
          );
        }
        push(sse(chunk(model, {}, "tool_calls", usageExtra)));
        if (includeUsage) push(sse({ ...chunk(model, {}, null), choices: [], usage: usage(20, 9) }));
        push(sse("[DONE]"));
        return;
      } else if (model === "gpt-refuse") {
        for (const word of FAKE_REFUSAL.split(/(?<= )/)) {
          push(sse(chunk(model, { refusal: word }, null, usageExtra)));
        }
      } else if (model === "gpt-reasoning") {
        for (const word of FAKE_REASONING.split(/(?<= )/)) {
          push(sse(chunk(model, { reasoning_content: word }, null, usageExtra)));
        }
        for (const word of FAKE_ANSWER.split(/(?<= )/)) {
          push(sse(chunk(model, { content: word }, null, usageExtra)));
        }
        push(sse(chunk(model, {}, "stop", usageExtra)));
        if (includeUsage) push(sse({ ...chunk(model, {}, null), choices: [], usage: reasoningUsage() }));
        push(sse("[DONE]"));
        return;
      } else {
        for (const word of (model === "gpt-json" ? FAKE_JSON : FAKE_ANSWER).split(/(?<= )/)) {
          push(sse(chunk(model, { content: word }, null, usageExtra)));
        }
      }
      push(sse(chunk(model, {}, stopOf(model), usageExtra)));
      if (includeUsage) push(sse({ ...chunk(model, {}, null), choices: [], usage: usage(11, 7) }));
      push(sse("[DONE]"));
    });
  };

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  fake.baseURL = `http://127.0.0.1:${server.addr.port}/v1`;
  return fake;
}

/** The finish reason of a text answer from `model`. */
function stopOf(model: string): string {
  return model === "gpt-length" ? "length" : model === "gpt-filter" ? "content_filter" : "stop";
}

/** Arms `gpt-gated` for `n` chunks. */
export function armGates(fake: FakeUpstream, n: number) {
  fake.gateChunks = n;
  fake.gates = Array.from({ length: n }, () => Promise.withResolvers<void>());
  fake.chunkSent = Array.from({ length: n }, () => Promise.withResolvers<void>());
  fake.aborted = Promise.withResolvers<void>();
}
