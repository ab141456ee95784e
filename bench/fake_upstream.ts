/**
 * A fast fake OpenAI-compatible upstream for the benchmark, self-contained so it runs unchanged on Bun
 * (`Bun.serve`, the faster choice) and on Deno (`Deno.serve`):
 *
 * - `POST /v1/chat/completions`: a fixed completion (with usage); with `"stream": true`, SSE: a role chunk at
 *   once, then `bench_chunks` content chunks every `bench_interval_ms` (request fields the gateway passes
 *   through; the `--chunks`/`--interval` flags are the defaults), a finish chunk, a usage chunk when
 *   `stream_options.include_usage` is set, and `[DONE]`. Content chunk `i` reads `c<i>|<ms>`, where `<ms>` is
 *   the upstream's monotonic time since the stream started when the chunk was sent, so a client can tell the
 *   gateway's added delay from the upstream's own schedule and count every chunk.
 * - `POST /v1/embeddings`: a fixed 16-dimension embedding.
 * - `GET /healthz`: 200.
 *
 * `--delay-ms N` (default 0) holds every chat completion and embedding answer N ms before it starts (a stream's
 * headers and first event included), like a model's time to first token; bench/cross_gateway.ts uses 20.
 *
 * Usage: `bun bench/fake_upstream.ts --port 9000 [--chunks 20] [--interval 10] [--delay-ms 0]` (or
 * `deno run -A …`).
 * Prints `{"listening":port,"runtime":…}` once ready.
 *
 * @module
 */

/** What the fake needs from `Bun.serve`. */
interface BunServeLike {
  serve(options: {
    hostname: string;
    port: number;
    idleTimeout?: number;
    reusePort?: boolean;
    fetch: (request: Request) => Response | Promise<Response>;
  }): { port: number };
  version: string;
}

/** The streaming fields a bench client may send. */
interface ChatRequestFields {
  stream?: unknown;
  stream_options?: { include_usage?: unknown };
  bench_chunks?: unknown;
  bench_interval_ms?: unknown;
}

const bun = (globalThis as unknown as { Bun?: BunServeLike }).Bun;
const args: string[] = bun
  ? (globalThis as unknown as { process: { argv: string[] } }).process.argv.slice(2)
  : Deno.args;

function flag(name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const value = i >= 0 ? Number(args[i + 1]) : NaN;
  return Number.isFinite(value) ? value : fallback;
}

const PORT = flag("port", 9000);
const DEFAULT_CHUNKS = flag("chunks", 20);
const DEFAULT_INTERVAL = flag("interval", 10);
const DELAY_MS = flag("delay-ms", 0);
const delay = () => new Promise((resolve) => setTimeout(resolve, DELAY_MS));

const encoder = new TextEncoder();
const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

const CHAT_BODY = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "bench-model",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "Hello from the bench upstream!", refusal: null },
    logprobs: null,
    finish_reason: "stop",
  }],
  usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
  system_fingerprint: "fp_bench",
});
const EMBEDDING_BODY = JSON.stringify({
  object: "list",
  data: [{ object: "embedding", index: 0, embedding: Array.from({ length: 16 }, (_, i) => i / 16) }],
  model: "bench-embed",
  usage: { prompt_tokens: 3, total_tokens: 3 },
});
const NOT_FOUND = JSON.stringify({ error: { message: "no such path", type: "invalid_request_error" } });

const CHUNK_HEAD = 'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,' +
  '"model":"bench-model","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":';
const ROLE_EVENT = encoder.encode(
  `${CHUNK_HEAD}{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`,
);
const FINISH_EVENT = encoder.encode(`${CHUNK_HEAD}{},"logprobs":null,"finish_reason":"stop"}]}\n\n`);
const USAGE_EVENT = encoder.encode(
  'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,' +
    '"model":"bench-model","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":20,' +
    '"total_tokens":32}}\n\n',
);
const DONE_EVENT = encoder.encode("data: [DONE]\n\n");

function contentEvent(i: number, at: number): Uint8Array {
  return encoder.encode(
    `${CHUNK_HEAD}{"content":"c${i}|${at.toFixed(3)}"},"logprobs":null,"finish_reason":null}]}\n\n`,
  );
}

function positiveInt(value: unknown, fallback: number, max: number): number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= max
    ? value
    : fallback;
}

/** An SSE body on the schedule the request asked for; cancelling it stops the timer. */
function streamBody(fields: ChatRequestFields): Response {
  const chunks = positiveInt(fields.bench_chunks, DEFAULT_CHUNKS, 1_000_000);
  const interval = positiveInt(fields.bench_interval_ms, DEFAULT_INTERVAL, 3_600_000);
  const includeUsage = fields.stream_options?.include_usage === true;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let done = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const t0 = performance.now();
      controller.enqueue(ROLE_EVENT);
      let i = 0;
      const tick = () => {
        if (done) return;
        if (i < chunks) {
          controller.enqueue(contentEvent(i, performance.now() - t0));
          i++;
        }
        if (i >= chunks) {
          controller.enqueue(FINISH_EVENT);
          if (includeUsage) controller.enqueue(USAGE_EVENT);
          controller.enqueue(DONE_EVENT);
          done = true;
          controller.close();
          return;
        }
        // Drift-free schedule: chunk i is due at t0 + (i + 1) * interval.
        timer = setTimeout(tick, Math.max(0, t0 + (i + 1) * interval - performance.now()));
      };
      if (chunks === 0) tick();
      else timer = setTimeout(tick, interval);
    },
    cancel() {
      done = true;
      clearTimeout(timer);
    },
  });
  return new Response(body, { headers: SSE_HEADERS });
}

async function handler(request: Request): Promise<Response> {
  const url = request.url;
  const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
  if (path === "/v1/chat/completions") {
    const text = await request.text();
    if (DELAY_MS > 0) await delay();
    // Parse only what may stream: a plain completion is answered from the fixed body.
    if (text.includes('"stream"')) {
      const fields = JSON.parse(text) as ChatRequestFields;
      if (fields.stream === true) return streamBody(fields);
    }
    return new Response(CHAT_BODY, { headers: JSON_HEADERS });
  }
  if (path === "/v1/embeddings") {
    await request.arrayBuffer();
    if (DELAY_MS > 0) await delay();
    return new Response(EMBEDDING_BODY, { headers: JSON_HEADERS });
  }
  if (path === "/healthz") return new Response("ok");
  return new Response(NOT_FOUND, { status: 404, headers: JSON_HEADERS });
}

if (bun) {
  const server = bun.serve({ hostname: "127.0.0.1", port: PORT, idleTimeout: 0, fetch: handler });
  console.log(JSON.stringify({ listening: server.port, runtime: `bun ${bun.version}` }));
} else {
  Deno.serve({
    hostname: "127.0.0.1",
    port: PORT,
    onListen: (addr) =>
      console.log(JSON.stringify({ listening: addr.port, runtime: `deno ${Deno.version.deno}` })),
  }, handler);
}
