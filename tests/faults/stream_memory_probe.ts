/**
 * Run by stream_bounds_test.ts in a process of its own with `--v8-flags=--expose-gc`: streams a long answer
 * (`Deno.args[0]` MiB) through an in-process gateway from a raw upstream, once per client API whose body keeps
 * what the client received (chat completions, and the native Messages, Responses and Gemini streams), and
 * prints, as JSON, the most heap retained (after a full collection, sampled while the answer streams) above
 * the heap before it. A last chat stream without usage shows the gateway's own count of it, with the exact
 * count expected.
 */
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { countTokens } from "../../lib/usage/estimate.ts";
import { tokenCounter } from "../../lib/usage/token_counter.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc");
const MIB = Number(Deno.args[0] ?? "32");

const sse = (data: unknown, event?: string) =>
  `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;
const words = "the quick brown fox jumps over a lazy dog while seven wizards quietly hex ";
const PIECE = words.repeat(Math.ceil(16_000 / words.length)).slice(0, 16_000);

/** The upstream's answer: `start`, then `delta` (one text event) repeated to about MIB MiB, then `end`. */
function streamOf(start: string[], delta: string, end: string[]): { step: RawStep; deltas: number } {
  const batch = delta.repeat(8);
  const batches = Math.ceil(MIB * 2 ** 20 / batch.length);
  return {
    step: {
      headers: { "content-type": "text/event-stream" },
      // No empty chunk: its zero length would end the chunked body.
      chunks: [start.join(""), ...Array.from({ length: batches }, () => batch), end.join("")].filter((c) =>
        c
      ),
    },
    deltas: batches * 8,
  };
}

const chunk = (delta: unknown, finish: string | null = null) =>
  sse({
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "g",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
const usage = { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 };
const response = (status: string) => ({
  id: "resp_1",
  object: "response",
  created_at: 1,
  status,
  model: "g",
  output: [],
});

const APIS: Record<
  string,
  { path: string; body: unknown; stream: (withUsage: boolean) => ReturnType<typeof streamOf> }
> = {
  chat: {
    path: "/v1/chat/completions",
    body: { model: "chat-oai", stream: true, messages: [{ role: "user", content: "hi" }] },
    stream: (withUsage) =>
      streamOf(
        [chunk({ role: "assistant", content: "" })],
        chunk({ content: PIECE }),
        [
          chunk({}, "stop"),
          withUsage
            ? sse({ id: "c", object: "chat.completion.chunk", created: 1, model: "g", choices: [], usage })
            : "",
          "data: [DONE]\n\n",
        ],
      ),
  },
  messages: {
    path: "/v1/messages",
    body: { model: "chat-anth", stream: true, max_tokens: 100, messages: [{ role: "user", content: "hi" }] },
    stream: () =>
      streamOf(
        [
          sse({
            type: "message_start",
            message: {
              id: "msg_1",
              type: "message",
              role: "assistant",
              model: "c",
              content: [],
              usage: { input_tokens: 3, output_tokens: 1 },
            },
          }, "message_start"),
          sse(
            { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
            "content_block_start",
          ),
        ],
        sse(
          { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: PIECE } },
          "content_block_delta",
        ),
        [
          sse({ type: "content_block_stop", index: 0 }, "content_block_stop"),
          sse(
            { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 5 } },
            "message_delta",
          ),
          sse({ type: "message_stop" }, "message_stop"),
        ],
      ),
  },
  responses: {
    path: "/v1/responses",
    body: { model: "chat-oai", stream: true, input: "hi" },
    stream: () =>
      streamOf(
        [sse(
          { type: "response.created", sequence_number: 0, response: response("in_progress") },
          "response.created",
        )],
        sse({
          type: "response.output_text.delta",
          sequence_number: 1,
          item_id: "m",
          output_index: 0,
          content_index: 0,
          delta: PIECE,
        }, "response.output_text.delta"),
        [sse({
          type: "response.completed",
          sequence_number: 2,
          response: {
            ...response("completed"),
            usage: { input_tokens: 3, output_tokens: 5, total_tokens: 8 },
          },
        }, "response.completed")],
      ),
  },
  gemini: {
    path: "/v1beta/models/chat-gem:streamGenerateContent?alt=sse",
    body: { contents: [{ role: "user", parts: [{ text: "hi" }] }] },
    stream: () =>
      streamOf(
        [],
        sse({ candidates: [{ content: { role: "model", parts: [{ text: PIECE }] }, index: 0 }] }),
        [sse({
          candidates: [{ content: { role: "model", parts: [{ text: "" }] }, finishReason: "STOP", index: 0 }],
          usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 5, totalTokenCount: 8 },
        })],
      ),
  },
};

const raw = startRawUpstream();
const dir = await Deno.makeTempDir();
const gw = await startGateway(`
server: { timeouts: { first_byte: 10s, idle: 10s, total: 5m } }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  oai: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-up", native_responses: true }
  anth: { type: anthropic, base_url: "${raw.url}", api_key: "sk-up" }
  gem: { type: gemini, base_url: "${raw.url}/v1beta", api_key: "up-key" }
models:
  chat-oai: { type: chat, targets: [{ provider: oai, model: g, retries: 0 }] }
  chat-anth: { type: chat, targets: [{ provider: anth, model: c, retries: 0 }] }
  chat-gem: { type: chat, targets: [{ provider: gem, model: g, retries: 0 }] }
${TEST_TOKENS_YAML}`);

function heap(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}

/** Streams `api`'s answer to the client, reading and dropping it; the most heap retained meanwhile. */
async function run(api: string, withUsage: boolean, id: string) {
  const { path, body, stream } = APIS[api];
  const { step, deltas } = stream(withUsage);
  raw.next = step;
  const base = heap();
  let most = 0;
  const sampler = setInterval(() => most = Math.max(most, heap() - base), 100);
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      "x-request-id": id,
    },
    body: JSON.stringify(body),
  });
  let bytes = 0;
  for await (const part of res.body!) bytes += part.length;
  clearInterval(sampler);
  most = Math.max(most, heap() - base);
  return { api, withUsage, status: res.status, bytes, deltas, retainedMiB: most / 2 ** 20 };
}

// The token-count worker and its tables, started on first use, are not a stream's memory.
await countTokens(["warm up"]);
const out = [];
try {
  for (const api of Object.keys(APIS)) out.push(await run(api, true, `mem-${api}`));
  const counted = await run("chat", false, "mem-count");
  await gw.stop();
  const records = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n").map((l) =>
    JSON.parse(l)
  );
  const record = records.find((r) => r.request_id === "mem-count");
  out.push({
    ...counted,
    completionTokens: record?.completion_tokens,
    estimated: record?.tokens_estimated,
    expected: counted.deltas * await countTokens([PIECE]),
  });
} finally {
  await raw.stop();
  await Deno.remove(dir, { recursive: true });
  // The counts made here, outside the gateway, started a token-count worker of their own: a Deno worker keeps
  // the process alive until it is ended.
  tokenCounter.stop();
}
console.log(JSON.stringify(out));
