/**
 * An OpenAI-compatible upstream for the response-cache tests whose every answer is different: it counts its
 * calls and answers call n with `answer n: <the last user turn>`, so a replayed answer can be told from a fresh
 * one, and the count says how many requests reached it. The target model picks a behaviour:
 *
 * - `echo`: the answer above, finish `stop`; `slow`: the same after `delayMs` (single-flight tests);
 * - `length`, `filter`: cut by length or a content filter; `tools`: one tool call for the client;
 * - `fail`: a 500; `cut`: a stream that breaks after two chunks.
 *
 * `/v1/embeddings` embeds text as a normalised bag of its lower-case words (each word hashed into 256
 * dimensions), so two texts with the same words are identical and similarity falls with the words they do not
 * share: enough to script semantic hits and misses.
 *
 * @module
 */

/** A running upstream. */
export interface CacheUpstream {
  baseURL: string;
  /** Chat calls so far, and the bodies received. */
  calls: Record<string, unknown>[];
  embeddings: number;
  /** `slow`'s delay. */
  delayMs: number;
  stop(): Promise<void>;
}

const encoder = new TextEncoder();

function lastUserText(body: Record<string, unknown>): string {
  const messages = body.messages as { role: string; content: unknown }[];
  const last = messages.findLast((m) => m.role === "user");
  const content = last?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p as { text?: string }).text ?? "").join("");
  return "";
}

/** A bag-of-words embedding (see the module doc). */
export function embed(text: string): number[] {
  const vector = new Array(256).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9']+/g) ?? []) {
    let h = 2166136261;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619) >>> 0;
    vector[h % 256] += 1;
  }
  const norm = Math.hypot(...vector) || 1;
  return vector.map((v) => v / norm);
}

/** Starts the upstream on a free loopback port. */
export function startCacheUpstream(): CacheUpstream {
  const upstream: CacheUpstream = {
    baseURL: "",
    calls: [],
    embeddings: 0,
    delayMs: 300,
    stop: async () => {},
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    const body = await request.json() as Record<string, unknown>;
    if (url.pathname === "/v1/embeddings") {
      upstream.embeddings++;
      const inputs = Array.isArray(body.input) ? body.input as string[] : [body.input as string];
      return Response.json({
        object: "list",
        model: body.model,
        data: inputs.map((text, index) => ({ object: "embedding", index, embedding: embed(text) })),
        usage: { prompt_tokens: 3, total_tokens: 3 },
      });
    }
    upstream.calls.push(body);
    const n = upstream.calls.length;
    const model = String(body.model);
    if (model === "fail") {
      return Response.json({ error: { message: "upstream broke", type: "server_error" } }, { status: 500 });
    }
    if (model === "slow") await new Promise((r) => setTimeout(r, upstream.delayMs));
    const text = `answer ${n}: ${lastUserText(body)}`;
    const finish = model === "length"
      ? "length"
      : model === "filter"
      ? "content_filter"
      : model === "tools"
      ? "tool_calls"
      : "stop";
    const toolCalls = model === "tools"
      ? [{ id: `call_${n}`, type: "function", function: { name: "lookup", arguments: `{"n":${n}}` } }]
      : undefined;
    const usage = { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 };
    const frame = { id: `chatcmpl-up${n}`, created: 1_700_000_000, model };
    if (body.stream !== true) {
      return Response.json({
        ...frame,
        object: "chat.completion",
        choices: [{
          index: 0,
          message: { role: "assistant", content: toolCalls ? null : text, tool_calls: toolCalls },
          logprobs: null,
          finish_reason: finish,
        }],
        usage,
      });
    }
    const chunk = (delta: Record<string, unknown>, finishReason: string | null) => ({
      ...frame,
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });
    const events: unknown[] = [chunk({ role: "assistant", content: "" }, null)];
    if (toolCalls) events.push(chunk({ tool_calls: [{ index: 0, ...toolCalls[0] }] }, null));
    else for (const piece of text.match(/.{1,6}/gs) ?? []) events.push(chunk({ content: piece }, null));
    events.push(chunk({}, finish));
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage;
    if (includeUsage) events.push({ ...frame, object: "chat.completion.chunk", choices: [], usage });
    const cut = model === "cut";
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        for (const [i, event] of events.entries()) {
          if (cut && i === 2) {
            controller.error(new Error("cut"));
            return;
          }
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(event)}\n\n`));
          await new Promise((r) => setTimeout(r, 1));
        }
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        controller.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  });
  upstream.baseURL = `http://127.0.0.1:${server.addr.port}/v1`;
  upstream.stop = () => server.shutdown();
  return upstream;
}
