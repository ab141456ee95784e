import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { countTokens, createBuiltinProvider, hashEmbedding } from "./provider.ts";
import type { UpstreamCall } from "../types.ts";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatMessage,
  ChatRequest,
  EmbeddingRequest,
  JsonObject,
} from "../../openai/types.ts";
import type { ChunkSource } from "../../streams/pull_through.ts";

/** Every value of a provider's stream, to its end. */
async function readAll<T>(source: ChunkSource<T>): Promise<T[]> {
  const values: T[] = [];
  for (let next = await source.read(); !next.done; next = await source.read()) values.push(next.value);
  return values;
}

const provider = createBuiltinProvider();

function callFor(model: string, signal = new AbortController().signal): UpstreamCall {
  return {
    target: {
      provider: "builtin",
      providerConfig: { type: "builtin" },
      model,
      timeouts: { firstByteMs: 1000, idleMs: 1000, totalMs: 1000 },
    },
    signal,
    requestId: "req_test",
  };
}

function chatRequest(messages: ChatMessage[], extra: JsonObject = {}): ChatRequest {
  return { model: "alias", messages, ...extra };
}

async function complete(request: ChatRequest): Promise<ChatCompletion> {
  const result = await provider.chat({ ...request, stream: false }, callFor("echo"));
  assert.equal(result.kind, "json");
  return result.body;
}

async function streamChunks(request: ChatRequest): Promise<ChatCompletionChunk[]> {
  const result = await provider.chat({ ...request, stream: true }, callFor("echo"));
  assert.equal(result.kind, "stream");
  return await readAll(result.chunks);
}

function contentOf(body: ChatCompletion): unknown {
  return (body.choices[0].message as JsonObject).content;
}

function streamedText(chunks: ChatCompletionChunk[]): string {
  return chunks.flatMap((c) => c.choices.map((ch) => (ch.delta as JsonObject).content ?? "")).join("");
}

const CONVERSATION: ChatMessage[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "first question" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: '{"q":"x"}' } }],
  },
  { role: "tool", tool_call_id: "call_1", content: "tool says hi" },
  { role: "user", content: "Hello,  wörld! 😀 Ça va?\n  fine " },
];

Deno.test("countTokens counts words and single punctuation marks", () => {
  assert.equal(countTokens(""), 0);
  assert.equal(countTokens("   \n"), 0);
  assert.equal(countTokens("Hello, world!"), 4);
  assert.equal(countTokens("snake_case 42 ça"), 3);
  assert.equal(countTokens('{"q":"x"}'), 9);
  assert.equal(countTokens("😀..."), 4);
});

Deno.test("echo answers with the last user message", async () => {
  const body = await complete(chatRequest(CONVERSATION));
  assert.equal(contentOf(body), "Hello,  wörld! 😀 Ça va?\n  fine ");
  assert.equal(body.choices[0].finish_reason, "stop");
});

Deno.test("echo joins the text parts of an array content and skips other parts", async () => {
  const body = await complete(chatRequest([{
    role: "user",
    content: [
      { type: "text", text: "one" },
      { type: "image_url", image_url: { url: "https://example.com/a.png" } },
      { type: "text", text: "two" },
    ],
  }]));
  assert.equal(contentOf(body), "one\ntwo");
});

Deno.test("echo answers with an empty string when there is no user message", async () => {
  const body = await complete(chatRequest([{ role: "system", content: "only a system prompt" }]));
  assert.equal(contentOf(body), "");
  assert.equal(body.usage?.completion_tokens, 0);
  assert.equal(body.usage?.prompt_tokens, 4);
  const chunks = await streamChunks(chatRequest([{ role: "system", content: "only a system prompt" }]));
  assert.equal(chunks.length, 3); // role, finish, usage
});

Deno.test("echo returns an exact chat.completion", async () => {
  const body = await complete(chatRequest(CONVERSATION));
  assert.match(body.id, /^chatcmpl-[0-9a-f]{24}$/);
  assert.equal(body.object, "chat.completion");
  assert.ok(Number.isInteger(body.created) && Math.abs(body.created - Date.now() / 1000) < 5);
  assert.equal(body.model, "echo");
  assert.equal(body.service_tier, "default");
  assert.deepEqual(body.choices, [{
    index: 0,
    message: {
      role: "assistant",
      content: "Hello,  wörld! 😀 Ça va?\n  fine ",
      refusal: null,
      annotations: [],
    },
    logprobs: null,
    finish_reason: "stop",
  }]);
  // system 4 ("You are terse.") + user 2 + tool-call arguments 9 + tool 3 + last user 9.
  assert.deepEqual(body.usage, {
    prompt_tokens: 27,
    completion_tokens: 9,
    total_tokens: 36,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  });
});

Deno.test("echo stream deltas concatenate to the non-stream content and usage is identical", async () => {
  for (const extra of [{}, { max_tokens: 3 }, { max_completion_tokens: 1 }]) {
    const request = chatRequest(CONVERSATION, extra);
    const body = await complete(request);
    const chunks = await streamChunks(request);
    assert.equal(streamedText(chunks), contentOf(body));
    assert.deepEqual(chunks.at(-1)?.usage, body.usage);
    assert.equal(chunks.at(-2)?.choices[0].finish_reason, body.choices[0].finish_reason);
  }
});

Deno.test("echo streams real chunk shapes: role first, one token per delta, finish, then usage", async () => {
  const chunks = await streamChunks(chatRequest([{ role: "user", content: " Hi, you.\n" }]));
  const { id, created } = chunks[0];
  assert.match(id, /^chatcmpl-[0-9a-f]{24}$/);
  for (const chunk of chunks) {
    assert.equal(chunk.id, id);
    assert.equal(chunk.created, created);
    assert.equal(chunk.object, "chat.completion.chunk");
    assert.equal(chunk.model, "echo");
    assert.ok("usage" in chunk);
  }
  const choices = chunks.slice(0, -1).map((c) => c.choices);
  assert.deepEqual(choices, [
    [{
      index: 0,
      delta: { role: "assistant", content: "", refusal: null },
      logprobs: null,
      finish_reason: null,
    }],
    [{ index: 0, delta: { content: " Hi" }, logprobs: null, finish_reason: null }],
    [{ index: 0, delta: { content: "," }, logprobs: null, finish_reason: null }],
    [{ index: 0, delta: { content: " you" }, logprobs: null, finish_reason: null }],
    [{ index: 0, delta: { content: ".\n" }, logprobs: null, finish_reason: null }],
    [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }],
  ]);
  assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));
  const last = chunks.at(-1);
  assert.deepEqual(last?.choices, []);
  assert.equal(last?.usage?.prompt_tokens, 4);
  assert.equal(last?.usage?.completion_tokens, 4);
  assert.equal(last?.usage?.total_tokens, 8);
});

Deno.test("max_tokens stops after exactly that many tokens with finish_reason length", async () => {
  const message = [{ role: "user", content: "one, two three four" }];
  for (
    const [extra, expected, finish] of [
      [{ max_tokens: 1 }, "one", "length"],
      [{ max_tokens: 3 }, "one, two", "length"],
      [{ max_completion_tokens: 4, max_tokens: 10 }, "one, two three", "length"],
      [{ max_tokens: 5 }, "one, two three four", "stop"],
      [{ max_tokens: 50 }, "one, two three four", "stop"],
      [{ max_tokens: null }, "one, two three four", "stop"],
    ] as const
  ) {
    const body = await complete(chatRequest(message, extra));
    assert.equal(contentOf(body), expected);
    assert.equal(body.choices[0].finish_reason, finish);
    assert.equal(body.usage?.completion_tokens, countTokens(expected));
  }
  const body = await complete(chatRequest(message, { max_tokens: 2 }));
  assert.equal(body.usage?.completion_tokens, 2);
});

Deno.test("invalid n and max_tokens are refused with the parameter named", async () => {
  const message = [{ role: "user", content: "hi" }];
  for (
    const [extra, param] of [
      [{ n: 2 }, "n"],
      [{ max_tokens: 0 }, "max_tokens"],
      [{ max_completion_tokens: 1.5 }, "max_completion_tokens"],
      [{ max_tokens: "3" }, "max_tokens"],
    ] as const
  ) {
    await assert.rejects(provider.chat(chatRequest(message, extra), callFor("echo")), (err) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 400);
      assert.equal(err.param, param);
      return true;
    });
  }
  await complete(chatRequest(message, { n: 1 }));
});

Deno.test("an unknown builtin model is a 404 model_not_found", async () => {
  const isNotFound = (err: unknown) =>
    err instanceof GatewayError && err.status === 404 && err.code === "model_not_found";
  await assert.rejects(
    provider.chat(chatRequest([{ role: "user", content: "x" }]), callFor("nope")),
    isNotFound,
  );
  await assert.rejects(provider.embed({ model: "a", input: "x" }, callFor("echo")), isNotFound);
});

Deno.test("cancelling the stream after two chunks stops production without an error", async () => {
  const content = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(" ");
  const result = await provider.chat(
    chatRequest([{ role: "user", content }], { stream: true }),
    callFor("echo"),
  );
  assert.equal(result.kind, "stream");
  const reader = result.chunks;
  assert.equal((await reader.read()).done, false);
  assert.equal((await reader.read()).done, false);
  await reader.cancel();
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
});

Deno.test("an aborted call errors the stream", async () => {
  const controller = new AbortController();
  const result = await provider.chat(
    chatRequest([{ role: "user", content: "a b c" }], { stream: true }),
    callFor("echo", controller.signal),
  );
  assert.equal(result.kind, "stream");
  const reader = result.chunks;
  await reader.read();
  controller.abort(new Error("client went away"));
  await assert.rejects(reader.read(), /client went away/);
});

// ---------------------------------------------------------------------------------------------------------
// hash embeddings

function cosine(a: number[], b: number[]): number {
  return a.reduce((sum, x, i) => sum + x * b[i], 0);
}

function norm(v: number[]): number {
  return Math.sqrt(cosine(v, v));
}

async function embed(input: EmbeddingRequest["input"], extra: JsonObject = {}) {
  return await provider.embed({ model: "alias", input, ...extra }, callFor("hash"));
}

Deno.test("hash embeddings are deterministic, unit length and 256-dimensional by default", async () => {
  const a = hashEmbedding("The cat sat on the mat.", 256);
  assert.deepEqual(hashEmbedding("The cat sat on the mat.", 256), a);
  assert.equal(a.length, 256);
  assert.ok(Math.abs(norm(a) - 1) < 1e-6);
  const result = await embed("The cat sat on the mat.");
  assert.deepEqual(result.data, [{ index: 0, embedding: a }]);
});

Deno.test("hash embeddings honour dimensions and refuse out-of-range values", async () => {
  for (const dimensions of [1, 3, 64, 1536, 4096]) {
    const [{ embedding }] = (await embed("hello world", { dimensions })).data;
    assert.ok(Array.isArray(embedding));
    assert.equal(embedding.length, dimensions);
    assert.ok(Math.abs(norm(embedding) - 1) < 1e-6);
  }
  for (const dimensions of [0, -1, 4097, 1.5]) {
    await assert.rejects(
      embed("x", { dimensions }),
      (err) => err instanceof GatewayError && err.status === 400 && err.param === "dimensions",
    );
  }
});

Deno.test("similar texts are closer than unrelated ones", () => {
  const a = hashEmbedding("the cat sat on the mat", 256);
  const b = hashEmbedding("a cat sat on a mat", 256);
  const c = hashEmbedding("quantum chromodynamics", 256);
  const d = hashEmbedding("The Cats sat on the mats!", 256);
  assert.ok(cosine(a, b) > cosine(a, c) + 0.3, `${cosine(a, b)} vs ${cosine(a, c)}`);
  assert.ok(cosine(a, b) > cosine(b, c) + 0.3);
  assert.ok(cosine(a, d) > cosine(a, c) + 0.3);
});

Deno.test("texts without tokens give a zero vector, never NaN", async () => {
  for (const text of ["", "   ", "\n\t"]) {
    const v = hashEmbedding(text, 8);
    assert.deepEqual(v, new Array(8).fill(0));
  }
  const [{ embedding }] = (await embed(" ")).data;
  assert.ok(Array.isArray(embedding) && embedding.every((x) => x === 0));
  const punct = hashEmbedding("?", 16);
  assert.ok(punct.every((x) => Number.isFinite(x)) && Math.abs(norm(punct) - 1) < 1e-6);
});

Deno.test("every input shape is embedded in order with usage counted", async () => {
  const texts = await embed(["Hello, world!", "cat", "Hello, world!"]);
  assert.deepEqual(texts.data.map((d) => d.index), [0, 1, 2]);
  assert.deepEqual(texts.data[0].embedding, texts.data[2].embedding);
  assert.notDeepEqual(texts.data[0].embedding, texts.data[1].embedding);
  assert.deepEqual(texts.usage, { prompt_tokens: 9, total_tokens: 9 });

  const ids = await embed([1, 2, 3]);
  assert.equal(ids.data.length, 1);
  assert.deepEqual(ids.usage, { prompt_tokens: 3, total_tokens: 3 });

  const idLists = await embed([[1, 2, 3], [4], [1, 2, 3]]);
  assert.deepEqual(idLists.data.map((d) => d.index), [0, 1, 2]);
  assert.deepEqual(idLists.data[0].embedding, ids.data[0].embedding);
  assert.deepEqual(idLists.data[2].embedding, ids.data[0].embedding);
  const single = idLists.data[1].embedding;
  assert.ok(Array.isArray(single) && Math.abs(norm(single) - 1) < 1e-6);
  assert.deepEqual(idLists.usage, { prompt_tokens: 7, total_tokens: 7 });
});
