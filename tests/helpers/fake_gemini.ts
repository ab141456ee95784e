/**
 * A fake Gemini (Generative Language API v1beta) upstream on a loopback port, speaking Gemini's wire format:
 * `POST /v1beta/models/{model}:{generateContent|streamGenerateContent|embedContent|batchEmbedContents}`,
 * the key in `x-goog-api-key` (a wrong or missing key gets Google's 400 `API_KEY_INVALID`), SSE with CRLF
 * line ends and no `[DONE]` for `?alt=sse`. Behaviour is picked by the model in the path:
 *
 * - `gem-ok`: {@linkcode GEMINI_ANSWER}, streamed in three events, usage on the last.
 * - `gem-tools`: a `get_weather` functionCall carrying {@linkcode FAKE_SIGNATURE}; once the request holds a
 *   functionResponse, a text answer instead.
 * - `gem-length` / `gem-safety`: `gem-ok`'s answer ending with `finishReason` `MAX_TOKENS` / `SAFETY`.
 * - `gem-finish-<REASON>`: `gem-ok`'s answer ending with `finishReason` `<REASON>` (`gem-finish-OTHER`, …).
 * - `gem-json`: answers {@linkcode GEMINI_JSON} (a JSON document, as under `responseMimeType: application/json`).
 * - `gem-429` / `gem-503` / `gem-500`: Google error bodies (429 with `RetryInfo.retryDelay` "7s").
 * - `gem-midstream-error`: one text event (with the prompt's usage only, as early chunks have), then an
 *   `{"error":…}` event.
 * - `gem-hang`: one text event, then silence until the client aborts (noted in `aborted`).
 * - any model for `embedContent` / `batchEmbedContents`: `outputDimensionality` (default 8) exact floats.
 * - any answering model asked for `generationConfig.thinkingConfig.includeThoughts`: the answer starts with a
 *   thought-summary part ({@linkcode FAKE_GEMINI_THOUGHT}, `thought: true`; its own event when streamed) and
 *   usage has `thoughtsTokenCount` {@linkcode FAKE_GEMINI_THOUGHT_TOKENS}, as Gemini 2.5 answers.
 * - `gem-3…`: as `gem-ok`, and like Gemini 3 it refuses what `vendor_refusals.ts` says (a replayed function call
 *   without a thought signature).
 * - `countTokens`: a deterministic count (see `countTokens`); `gem-429` / `gem-503` / `gem-500` fail it.
 *
 * @module
 */
import { geminiRefusal } from "./vendor_refusals.ts";

/** The key the fake expects. */
export const FAKE_GEMINI_KEY = "AIzaSyFAKE-gemini-key-0123456789abcdef";
/** What `gem-ok` answers. */
export const GEMINI_ANSWER = "Hello from Gemini, café ☕!";
/** What `gem-json` answers. */
export const GEMINI_JSON = '{"greeting": "hello from Gemini ☕"}';
/** The thought signature `gem-tools` attaches to its function call. */
export const FAKE_SIGNATURE = "AY89a18iOcFus5wr5bW5xN6zZ4aUiCyhgmg6HE2YjtYDV/dwZ5oZlZHeTmiUKv34qq0=";

/** One request the fake received. */
export interface RecordedGeminiRequest {
  model: string;
  method: string;
  /** The full URL as received, to prove no key travels in it. */
  url: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A running fake. */
export interface FakeGemini {
  /** Base URL including `/v1beta`. */
  baseURL: string;
  requests: RecordedGeminiRequest[];
  /** Resolves when a `gem-hang` stream's client went away. */
  aborted: PromiseWithResolvers<void>;
  stop(): Promise<void>;
}

const encoder = new TextEncoder();
const event = (data: unknown) => encoder.encode(`data: ${JSON.stringify(data)}\r\n\r\n`);

function googleError(code: number, status: string, message: string, details: unknown[] = []): Response {
  return Response.json({ error: { code, message, status, details } }, { status: code });
}

function textEvent(text: string, finishReason?: string, usage?: Record<string, number>) {
  return {
    candidates: [{
      content: { role: "model", parts: [{ text }] },
      ...(finishReason ? { finishReason, index: 0 } : {}),
    }],
    ...(usage ? { usageMetadata: usage } : {}),
    modelVersion: "gemini-fake-001",
    responseId: "fakeResponseId",
  };
}

const TOOL_CALL_EVENT = {
  candidates: [{
    content: {
      role: "model",
      parts: [{
        functionCall: { name: "get_weather", args: { city: "Paris" } },
        thoughtSignature: FAKE_SIGNATURE,
      }],
    },
    finishReason: "STOP",
    index: 0,
  }],
  usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 6, totalTokenCount: 36 },
};

/** The thought summary that opens answers to requests with `includeThoughts`. */
export const FAKE_GEMINI_THOUGHT = "**Planning the reply** I will greet back warmly, café ☕.";
/** The `thoughtsTokenCount` of those answers. */
export const FAKE_GEMINI_THOUGHT_TOKENS = 42;

/** `answer` (a GenerateContentResponse) with the thought part first and the thought tokens counted. */
function withThought(answer: Record<string, unknown>): Record<string, unknown> {
  const [candidate] = answer.candidates as { content: { parts: unknown[] } }[];
  const usage = answer.usageMetadata as Record<string, number> | undefined;
  return {
    ...answer,
    candidates: [{
      ...candidate,
      content: {
        ...candidate.content,
        parts: [{ text: FAKE_GEMINI_THOUGHT, thought: true }, ...candidate.content.parts],
      },
    }],
    ...(usage
      ? {
        usageMetadata: {
          ...usage,
          thoughtsTokenCount: FAKE_GEMINI_THOUGHT_TOKENS,
          totalTokenCount: usage.totalTokenCount + FAKE_GEMINI_THOUGHT_TOKENS,
        },
      }
      : {}),
  };
}

function hasFunctionResponse(body: Record<string, unknown>): boolean {
  return JSON.stringify(body.contents ?? []).includes('"functionResponse"');
}

/** What the fake's `countTokens` adds to the text's length, so a test can tell its count from an estimate. */
export const FAKE_GEMINI_COUNT_BASE = 2000;

/** The characters of every `text` part under `value` (contents, a system instruction). */
function textLength(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + textLength(v), 0);
  if (value === null || typeof value !== "object") return 0;
  const o = value as Record<string, unknown>;
  return typeof o.text === "string" ? o.text.length : textLength(o.parts);
}

/**
 * `models/{model}:countTokens` with a `generateContentRequest` (which must name the same model, as Google
 * requires): {@linkcode FAKE_GEMINI_COUNT_BASE} plus the characters of its contents and system instruction.
 */
function countTokens(model: string, body: Record<string, unknown>): Response {
  const request = body.generateContentRequest as Record<string, unknown> | undefined;
  if (request === undefined || !Array.isArray(request.contents)) {
    return googleError(400, "INVALID_ARGUMENT", "generateContentRequest.contents is required by this fake");
  }
  if (request.model !== `models/${model}`) {
    return googleError(400, "INVALID_ARGUMENT", `generateContentRequest.model must be models/${model}`);
  }
  const total = FAKE_GEMINI_COUNT_BASE + textLength(request.contents) + textLength(request.systemInstruction);
  return Response.json({
    totalTokens: total,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: total }],
  });
}

/** Starts the fake on a free loopback port. */
export function startFakeGemini(): FakeGemini {
  const fake: FakeGemini = {
    baseURL: "",
    requests: [],
    aborted: Promise.withResolvers<void>(),
    stop: () => server.shutdown(),
  };

  const sse = (request: Request, events: unknown[], then?: "error" | "hang") => {
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        for (const e of events) controller.enqueue(event(e));
        if (then === "error") {
          controller.enqueue(
            event({ error: { code: 500, message: "Internal error encountered.", status: "INTERNAL" } }),
          );
        }
        if (then === "hang") {
          await new Promise<void>((resolve) => request.signal.addEventListener("abort", () => resolve()));
          fake.aborted.resolve();
          return;
        }
        controller.close();
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
    const match = /^\/v1beta\/models\/([^/:]+):(\w+)$/.exec(url.pathname);
    if (!match) return googleError(404, "NOT_FOUND", `Invalid path ${url.pathname}`);
    const [, model, method] = match;
    fake.requests.push({ model, method, url: request.url, headers: request.headers, body });
    if (request.headers.get("x-goog-api-key") !== FAKE_GEMINI_KEY) {
      return googleError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", [{
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "API_KEY_INVALID",
        domain: "googleapis.com",
        metadata: { service: "generativelanguage.googleapis.com" },
      }]);
    }

    if (method === "embedContent" || method === "batchEmbedContents") {
      const requests = method === "embedContent" ? [body] : body.requests ?? [];
      const embeddings = requests.map((r: { outputDimensionality?: number }, index: number) => ({
        values: Array.from(
          { length: r.outputDimensionality ?? 8 },
          (_, i) => (index + 1) * 0.125 + i * 0.0625,
        ),
      }));
      return Response.json(method === "embedContent" ? { embedding: embeddings[0] } : { embeddings });
    }

    switch (model) {
      case "gem-429":
        return googleError(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", [
          { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" },
        ]);
      case "gem-503":
        return googleError(503, "UNAVAILABLE", "The model is overloaded. Please try again later.");
      case "gem-500":
        return googleError(500, "INTERNAL", "An internal error has occurred.");
    }

    if (method === "countTokens") return countTokens(model, body);
    const stream = method === "streamGenerateContent";
    if (stream && url.searchParams.get("alt") !== "sse") {
      return googleError(400, "INVALID_ARGUMENT", "the fake only streams SSE (alt=sse)");
    }
    if (!stream && method !== "generateContent") return googleError(404, "NOT_FOUND", `no method ${method}`);
    const refusal = geminiRefusal(model, body);
    if (refusal !== null) return googleError(400, "INVALID_ARGUMENT", refusal);

    const toolTurn = model === "gem-tools" && !hasFunctionResponse(body);
    const final = model === "gem-tools"
      ? "It is sunny in Paris."
      : model === "gem-json"
      ? GEMINI_JSON
      : GEMINI_ANSWER;
    const usage = { promptTokenCount: 11, candidatesTokenCount: 7, totalTokenCount: 18 };
    const stop = model === "gem-length"
      ? "MAX_TOKENS"
      : model === "gem-safety"
      ? "SAFETY"
      : model.startsWith("gem-finish-")
      ? model.slice("gem-finish-".length)
      : "STOP";
    const config = body.generationConfig as { thinkingConfig?: { includeThoughts?: unknown } } | undefined;
    const thoughts = config?.thinkingConfig?.includeThoughts === true;
    if (!stream) {
      const answer = toolTurn ? TOOL_CALL_EVENT : textEvent(final, stop, usage);
      return Response.json(thoughts ? withThought(answer) : answer);
    }
    if (thoughts) {
      // The thought summary streams first, in an event of its own; the last event counts the thought tokens.
      const thought = {
        candidates: [{ content: { role: "model", parts: [{ text: FAKE_GEMINI_THOUGHT, thought: true }] } }],
      };
      const last = withThought(toolTurn ? TOOL_CALL_EVENT : textEvent(final, "STOP", usage));
      (last.candidates as { content: { parts: unknown[] } }[])[0].content.parts.shift();
      return sse(request, [thought, last]);
    }

    if (toolTurn) return sse(request, [TOOL_CALL_EVENT]);
    if (model === "gem-midstream-error") {
      // As Google's early chunks do, the first carries the usage so far: the prompt only.
      return sse(request, [
        textEvent("partial answer ", undefined, { promptTokenCount: 30, totalTokenCount: 30 }),
      ], "error");
    }
    if (model === "gem-hang") return sse(request, [textEvent("waiting")], "hang");
    const words = final.split(/(?<= )/);
    const third = Math.ceil(words.length / 3);
    return sse(request, [
      textEvent(words.slice(0, third).join(""), undefined, { promptTokenCount: 11, totalTokenCount: 11 }),
      textEvent(words.slice(third, 2 * third).join("")),
      textEvent(words.slice(2 * third).join(""), stop, usage),
    ]);
  };

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  fake.baseURL = `http://127.0.0.1:${server.addr.port}/v1beta`;
  return fake;
}
