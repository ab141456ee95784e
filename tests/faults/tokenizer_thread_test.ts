/**
 * The gateway's own token counts (an upstream that reports no usage) are made off the serving thread. The
 * tokenizer's first load evaluated its tables synchronously on the thread that counted (~0.3 s on Deno, ~0.8 s on
 * Bun, seconds on a busy machine), and every other request there stalled meanwhile: other clients' `/v1/models`
 * took a second instead of milliseconds, probes failed, connection timers fired late together. The counts stay
 * exactly the tokenizer's.
 *
 * Whether the tokenizer ran on this thread is seen without timing: its module builds a `TextDecoder` when it is
 * evaluated, and a spy on the constructor notes every one built from the `gpt-tokenizer` package's code (the
 * test then imports the tokenizer here itself, to show that the spy sees it). With `GATEWAY_BIN` the gateway is
 * the single binary, in a process of its own: the counts are still checked, and `serve --workers 2` has each
 * serving worker count through a worker of its own (a nested worker) on Deno and in the Bun binary alike.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { spawnReplica } from "../helpers/replica.ts";

const WORDS = ["Counting", " happens", " in", " a", " worker", " thread", " now", "."];
const EMBEDDED = ["How many tokens is this sentence?", "word ".repeat(3_000)];
const PROMPT = "Tell me where the tokens are counted.";

/** Notes each `TextDecoder` built by the `gpt-tokenizer` package's code on this thread, until restored. */
function spyOnTokenizer(): { seen: string[]; restore(): void } {
  const seen: string[] = [];
  const Real = globalThis.TextDecoder;
  globalThis.TextDecoder = class extends Real {
    constructor(...args: ConstructorParameters<typeof TextDecoder>) {
      super(...args);
      const stack = new Error().stack ?? "";
      if (stack.includes("gpt-tokenizer")) seen.push(stack);
    }
  };
  return { seen, restore: () => globalThis.TextDecoder = Real };
}

/** An OpenAI-compatible upstream that never reports usage: embeddings, and chat streamed as {@linkcode WORDS}. */
function startUsagelessUpstream() {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const body = await request.json();
    if (new URL(request.url).pathname.endsWith("/embeddings")) {
      const inputs: string[] = typeof body.input === "string" ? [body.input] : body.input;
      return Response.json({
        object: "list",
        model: body.model,
        data: inputs.map((_, index) => ({ object: "embedding", index, embedding: [0.5, -0.25] })),
      });
    }
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${
        JSON.stringify({
          id: "chatcmpl-usageless",
          object: "chat.completion.chunk",
          created: 1_700_000_000,
          model: body.model,
          choices: [{ index: 0, delta, finish_reason: finish }],
        })
      }\n\n`;
    const events = [
      chunk({ role: "assistant", content: "" }),
      ...WORDS.map((word) => chunk({ content: word })),
      chunk({}, "stop"),
      "data: [DONE]\n\n",
    ];
    return new Response(events.join(""), { headers: { "content-type": "text/event-stream" } });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/v1`, stop: () => server.shutdown() };
}

function config(upstreamUrl: string, dir: string): string {
  return `
providers:
  up: { type: openai, base_url: "${upstreamUrl}", api_key: sk-test-usageless-upstream }
models:
  chat-usageless: { type: chat, targets: [{ provider: up, model: usageless }] }
  emb-usageless: { type: embedding, targets: [{ provider: up, model: usageless-emb }] }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
${TEST_TOKENS_YAML}`;
}

async function post(url: string, path: string, body: unknown, id: string): Promise<Response> {
  return await fetch(`${url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      "x-request-id": id,
      connection: "close",
    },
    body: JSON.stringify(body),
  });
}

async function embed(url: string, id: string): Promise<number> {
  const answer = await post(url, "/v1/embeddings", { model: "emb-usageless", input: EMBEDDED }, id);
  assert.equal(answer.status, 200);
  return (await answer.json()).usage.prompt_tokens;
}

async function records(dir: string): Promise<Record<string, unknown>[]> {
  return (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n").map((l) => JSON.parse(l));
}

/** This thread's tokenizer, loaded here only once the gateway's counts are checked. */
async function tokenizerHere(): Promise<(texts: readonly string[]) => number> {
  const { countTokens } = await import("gpt-tokenizer/encoding/o200k_base");
  return (texts) => texts.reduce((sum, text) => sum + countTokens(text), 0);
}

Deno.test("tokenizer thread: the serving thread never runs the tokenizer, and the counts stay exact", async () => {
  const spy = spyOnTokenizer();
  const upstream = startUsagelessUpstream();
  const dir = await Deno.makeTempDir();
  try {
    const gw = await startGateway(config(upstream.url, dir));
    let stopped = false;
    try {
      const embedded = await embed(gw.url, "embed-1");
      const streamed = await post(gw.url, "/v1/chat/completions", {
        model: "chat-usageless",
        stream: true,
        messages: [{ role: "user", content: PROMPT }],
      }, "stream-1");
      assert.equal(streamed.status, 200);
      const text = await streamed.text();
      assert.ok(text.includes(" worker"), text);
      await gw.stop();
      stopped = true;
      assert.deepEqual(spy.seen, [], "the gateway's counts ran the tokenizer on the serving thread");
      const fallbacks = gw.logs.filter((line) => String(line.msg).startsWith("token_count"));
      assert.deepEqual(fallbacks, [], "the count worker ran (the binary's too), and nothing fell back");

      const count = await tokenizerHere();
      assert.ok(spy.seen.length > 0, "the spy sees the tokenizer when it does run on this thread");
      assert.equal(embedded, count(EMBEDDED));
      const all = await records(dir);
      const stream = all.find((r) => r.request_id === "stream-1")!;
      assert.equal(stream.tokens_estimated, true);
      // The gateway's own prompt count (estimateInputTokens): the texts, and the chat format's 3 tokens around
      // each message and before the answer.
      assert.equal(stream.prompt_tokens, count([PROMPT]) + 3 * 2);
      assert.equal(stream.completion_tokens, count(["", ...WORDS]));
      assert.equal(all.find((r) => r.request_id === "embed-1")!.prompt_tokens, embedded);
    } finally {
      if (!stopped) await gw.stop();
    }
  } finally {
    spy.restore();
    await upstream.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tokenizer thread: with serve --workers 2 each serving worker counts exactly, in a worker of its own", async () => {
  const upstream = startUsagelessUpstream();
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/gateway.yaml`, config(upstream.url, dir));
    const replica = await spawnReplica(`${dir}/gateway.yaml`, ["--workers", "2"]);
    let counted: number[];
    try {
      // One connection each: the kernel spreads them over both workers.
      counted = await Promise.all(Array.from({ length: 8 }, (_, i) => embed(replica.url, `embed-${i}`)));
    } finally {
      assert.equal(await replica.stop(), 0);
    }
    const expected = (await tokenizerHere())(EMBEDDED);
    assert.deepEqual(counted, counted.map(() => expected));
    const fallbacks = replica.logs.filter((line) => line.includes("token_count"));
    assert.deepEqual(fallbacks, [], "no worker fell back to counting on its serving thread");
    const ids = new Set((await records(dir)).map((r) => String(r.request_id)));
    assert.equal(ids.size, 8);
  } finally {
    await upstream.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
