import assert from "node:assert/strict";
import fc from "fast-check";
import type { ChatCompletion, ChatCompletionChunk, JsonObject } from "../openai/types.ts";
import { completionChunks, normaliseCompletion, splitText } from "./chunks.ts";
import { ChunkAccumulator } from "./chunk_accumulator.ts";

const USAGE = { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 };

function completion(choices: JsonObject[], extra: Partial<ChatCompletion> = {}): ChatCompletion {
  return {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "gpt-test",
    system_fingerprint: "fp_1",
    choices,
    usage: USAGE,
    ...extra,
  };
}

function choice(message: JsonObject, finish = "stop", index = 0): JsonObject {
  return { index, message: { role: "assistant", ...message }, logprobs: null, finish_reason: finish };
}

function accumulate(chunks: ChatCompletionChunk[]): ChatCompletion | undefined {
  const acc = new ChunkAccumulator();
  for (const chunk of chunks) acc.add(structuredClone(chunk));
  return acc.completion();
}

/** The chunks of `c` under its own id, added up again: must be `c` in the normal form. */
function assertRoundTrip(c: ChatCompletion): ChatCompletionChunk[] {
  const chunks = completionChunks(c, { id: c.id, created: c.created });
  assert.deepEqual(accumulate(chunks), normaliseCompletion(c));
  return chunks;
}

function deltas(chunks: ChatCompletionChunk[]): JsonObject[] {
  return chunks.flatMap((c) => c.choices.map((ch) => ch.delta as JsonObject));
}

const LONG = "The quick brown fox jumps over the lazy dog. ".repeat(8);

Deno.test("cache chunks: plain text round trips, in several pieces, with OpenAI's frame on every chunk", () => {
  const c = completion([choice({ content: LONG, refusal: null, annotations: [] })]);
  const chunks = assertRoundTrip(c);
  const texts = deltas(chunks).filter((d) => typeof d.content === "string" && d.content !== "");
  assert.ok(texts.length >= 8, `${texts.length} content pieces`);
  assert.ok(texts.every((d) => (d.content as string).length <= 16));
  for (const chunk of chunks) {
    assert.equal(chunk.id, c.id);
    assert.equal(chunk.object, "chat.completion.chunk");
    assert.equal(chunk.created, c.created);
    assert.equal(chunk.model, "gpt-test");
    assert.equal(chunk.system_fingerprint, "fp_1");
    for (const ch of chunk.choices) assert.equal(ch.logprobs, null);
  }
  const back = accumulate(chunks)!;
  assert.deepEqual(back.choices[0].message, { role: "assistant", content: LONG });
  assert.equal(back.system_fingerprint, "fp_1");
});

Deno.test("cache chunks: a hit's own id and created go on every chunk", () => {
  const chunks = completionChunks(completion([choice({ content: "Hi" })]), {
    id: "chatcmpl-new",
    created: 5,
  });
  assert.ok(chunks.every((c) => c.id === "chatcmpl-new" && c.created === 5));
  const back = accumulate(chunks)!;
  assert.equal(back.id, "chatcmpl-new");
  assert.equal(back.created, 5);
});

Deno.test("cache chunks: replay order: role first, pieces, the finish chunk, the usage chunk last", () => {
  const chunks = completionChunks(completion([choice({ content: LONG })]), { id: "x", created: 1 });
  assert.deepEqual(chunks[0].choices, [{
    index: 0,
    delta: { role: "assistant", content: "" },
    logprobs: null,
    finish_reason: null,
  }]);
  const finish = chunks.at(-2)!;
  assert.deepEqual(finish.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }]);
  assert.equal(finish.usage, null);
  const last = chunks.at(-1)!;
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, USAGE);
  // Only the finish chunk ends the choice; only the last chunk has usage.
  assert.equal(chunks.filter((c) => c.choices.some((ch) => ch.finish_reason !== null)).length, 1);
  assert.equal(chunks.filter((c) => c.usage).length, 1);
  assert.equal(chunks.slice(1, -2).map((c) => (c.choices[0].delta as JsonObject).content).join(""), LONG);
});

Deno.test("cache chunks: emoji and other multi-unit text is never split inside a surrogate pair", () => {
  const text = "😀".repeat(40) + " naïve café 日本語テキスト " + "👩‍👩‍👧‍👦🏳️‍🌈".repeat(6) + "a😀".repeat(30);
  const chunks = assertRoundTrip(completion([choice({ content: text })]));
  const pieces = deltas(chunks).map((d) => d.content).filter((p): p is string =>
    typeof p === "string" && p !== ""
  );
  assert.ok(pieces.length > 5);
  for (const piece of pieces) {
    assert.ok(!/^[\udc00-\udfff]/.test(piece), `piece starts with a low surrogate: ${JSON.stringify(piece)}`);
    assert.ok(!/[\ud800-\udbff]$/.test(piece), `piece ends with a high surrogate: ${JSON.stringify(piece)}`);
  }
});

Deno.test("cache chunks: any text splits into well-formed pieces that join to it (property)", () => {
  fc.assert(
    fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), (text) => {
      const pieces = splitText(text);
      assert.equal(pieces.join(""), text);
      assert.ok(pieces.every((p) => p.length > 0 && p.length <= 16 && p.isWellFormed()));
      assert.equal(pieces.length === 0, text === "");
    }),
  );
});

Deno.test("cache chunks: reasoning comes before content and both round trip", () => {
  const c = completion([choice({ reasoning_content: "Let me think about it. ".repeat(4), content: "Yes." })]);
  const chunks = assertRoundTrip(c);
  const kinds = deltas(chunks).map((d) => Object.keys(d).join(","));
  assert.equal(kinds[0], "role,content");
  assert.ok(kinds.filter((k) => k === "reasoning_content").length >= 4, "the reasoning in several pieces");
  assert.deepEqual(kinds.slice(kinds.lastIndexOf("reasoning_content") + 1), ["content", ""]);
  const message = accumulate(chunks)!.choices[0].message as JsonObject;
  assert.equal(message.reasoning_content, "Let me think about it. ".repeat(4));
  assert.equal(message.content, "Yes.");
});

Deno.test("cache chunks: two tool calls with long arguments round trip; content is null beside them", () => {
  const args = JSON.stringify({ query: "weather in Paris and the next five days, hourly", units: "metric" });
  const c = completion([choice({
    content: null,
    refusal: null,
    tool_calls: [
      { id: "call_a", type: "function", function: { name: "search", arguments: args } },
      { id: "call_b", type: "function", function: { name: "clock", arguments: "{}" } },
    ],
  }, "tool_calls")]);
  const chunks = assertRoundTrip(c);
  const calls = deltas(chunks).flatMap((d) => (d.tool_calls ?? []) as JsonObject[]);
  assert.deepEqual(calls[0], {
    index: 0,
    id: "call_a",
    type: "function",
    function: { name: "search", arguments: "" },
  });
  const first = calls.filter((call) => call.index === 0).slice(1);
  assert.ok(first.length >= 3);
  assert.ok(first.every((call) => Object.keys(call).join() === "index,function"));
  assert.equal(first.map((call) => (call.function as JsonObject).arguments).join(""), args);
  assert.deepEqual(calls.at(-2), {
    index: 1,
    id: "call_b",
    type: "function",
    function: { name: "clock", arguments: "" },
  });
  assert.deepEqual(calls.at(-1), { index: 1, function: { arguments: "{}" } });
  assert.deepEqual(accumulate(chunks)!.choices[0], {
    index: 0,
    message: {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_a", type: "function", function: { name: "search", arguments: args } },
        { id: "call_b", type: "function", function: { name: "clock", arguments: "{}" } },
      ],
    },
    logprobs: null,
    finish_reason: "tool_calls",
  });
});

Deno.test("cache chunks: n=2 choices round trip, one after the other, sorted by index", () => {
  const c = completion([choice({ content: "Second answer." }, "length", 1), choice({ content: "First." })]);
  const chunks = assertRoundTrip(c);
  const indexes = chunks.flatMap((ch) => ch.choices.map((x) => x.index));
  assert.deepEqual(indexes, [0, 0, 0, 1, 1, 1]);
  const back = accumulate(chunks)!;
  assert.deepEqual(back.choices.map((x) => [x.index, (x.message as JsonObject).content, x.finish_reason]), [
    [0, "First.", "stop"],
    [1, "Second answer.", "length"],
  ]);
});

Deno.test("cache chunks: a refusal round trips as refusal deltas, content null", () => {
  const c = completion([
    choice({ content: null, refusal: "I'm sorry, but I can't help with that request." }),
  ]);
  const chunks = assertRoundTrip(c);
  assert.ok(deltas(chunks).filter((d) => typeof d.refusal === "string").length >= 2);
  assert.deepEqual(accumulate(chunks)!.choices[0].message, {
    role: "assistant",
    content: null,
    refusal: "I'm sorry, but I can't help with that request.",
  });
});

Deno.test("cache chunks: a completion without usage has no usage chunk and no usage fields", () => {
  const c = completion([choice({ content: "Hello" })], { usage: undefined });
  delete c.usage;
  const chunks = assertRoundTrip(c);
  assert.ok(chunks.every((ch) => !("usage" in ch) && ch.choices.length === 1));
  assert.equal(chunks.at(-1)!.choices[0].finish_reason, "stop");
  assert.ok(!("usage" in accumulate(chunks)!));
  // usage: null counts as none too.
  assert.deepEqual(assertRoundTrip(completion([choice({ content: "Hi" })], { usage: null })).length, 3);
});

Deno.test("cache chunks: normal form keeps service_tier and vLLM's stop_reason, drops what a stream does not carry", () => {
  const c = completion([{
    ...choice({ content: "ok", refusal: null, annotations: [], audio: null }),
    stop_reason: "END",
    logprobs: { content: [] },
  }], { service_tier: "default" });
  const chunks = assertRoundTrip(c);
  assert.ok(chunks.every((ch) => ch.service_tier === "default"));
  assert.equal(chunks.at(-2)!.choices[0].stop_reason, "END");
  assert.deepEqual(normaliseCompletion(c).choices[0], {
    index: 0,
    message: { role: "assistant", content: "ok" },
    logprobs: null,
    finish_reason: "stop",
    stop_reason: "END",
  });
});

Deno.test("cache chunks: annotations and Perplexity's citations round trip, JSON and streamed", () => {
  const annotation = {
    type: "url_citation",
    url_citation: { url: "https://a.example", start_index: 0, end_index: 2 },
  };
  const sources = { citations: ["https://a.example"], search_results: [{ url: "https://a.example" }] };
  const c = completion([choice({ content: "ok", annotations: [annotation] })], sources);
  const normal = normaliseCompletion(c);
  assert.deepEqual(normal.choices[0].message, {
    role: "assistant",
    content: "ok",
    annotations: [annotation],
  });
  assert.deepEqual([normal.citations, normal.search_results], [sources.citations, sources.search_results]);
  const chunks = assertRoundTrip(c);
  assert.deepEqual(deltas(chunks).filter((d) => "annotations" in d), [{ annotations: [annotation] }]);
  assert.ok(chunks.every((ch) => JSON.stringify(ch.citations) === JSON.stringify(sources.citations)));
  // Annotations split over several deltas are joined in order; a vendor's other top-level fields are not kept.
  const acc = new ChunkAccumulator();
  const frame = {
    id: "c",
    object: "chat.completion.chunk" as const,
    created: 1,
    model: "m",
    obfuscation: "xyz",
  };
  const at = (delta: JsonObject, finish: string | null = null) => ({
    ...frame,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  acc.add(at({ role: "assistant", content: "ok", annotations: [annotation] }));
  acc.add(at({ annotations: [{ ...annotation, type: "second" }] }));
  acc.add(at({}, "stop"));
  const added = acc.completion()!;
  assert.equal(
    (added.choices[0].message as JsonObject & { annotations: JsonObject[] }).annotations.length,
    2,
  );
  assert.ok(!("obfuscation" in added));
});

Deno.test("cache chunks: a legacy function_call round trips as OpenAI streams it, content null", () => {
  const args = JSON.stringify({ query: "weather in Paris tomorrow", units: "metric" });
  const c = completion([
    choice({ content: null, function_call: { name: "lookup", arguments: args } }, "function_call"),
  ]);
  assert.deepEqual(normaliseCompletion(c).choices[0].message, {
    role: "assistant",
    content: null,
    function_call: { name: "lookup", arguments: args },
  });
  const calls = deltas(assertRoundTrip(c)).filter((d) => "function_call" in d);
  assert.deepEqual(calls[0], { function_call: { name: "lookup", arguments: "" } });
  assert.ok(calls.length > 2, "the arguments in several pieces");
  assert.equal(calls.map((d) => (d.function_call as JsonObject).arguments).join(""), args);
});

Deno.test('cache chunks: an empty answer is one role chunk and one finish chunk; content stays ""', () => {
  const c = completion([choice({ content: "" }, "length")]);
  const chunks = assertRoundTrip(c);
  assert.equal(chunks.length, 3);
  assert.equal((accumulate(chunks)!.choices[0].message as JsonObject).content, "");
});

Deno.test("cache chunks: the accumulator gives nothing for a stream without its finish_reason or choices", () => {
  const chunks = completionChunks(completion([choice({ content: LONG })]), { id: "x", created: 1 });
  const cut = chunks.filter((c) => c.choices.every((ch) => ch.finish_reason === null));
  assert.equal(accumulate(cut), undefined);
  assert.equal(accumulate([]), undefined);
  assert.equal(accumulate([chunks.at(-1)!]), undefined);
  // Of two choices, one unfinished is enough to refuse.
  const two = completionChunks(completion([choice({ content: "a" }), choice({ content: "b" }, "stop", 1)]), {
    id: "x",
    created: 1,
  });
  assert.equal(
    accumulate(two.filter((c) => c.choices[0]?.index !== 1 || !c.choices[0].finish_reason)),
    undefined,
  );
});

Deno.test("cache chunks: the accumulator adds up a realistic OpenAI stream", () => {
  const base = {
    id: "chatcmpl-real",
    object: "chat.completion.chunk" as const,
    created: 1_700_000_001,
    model: "gpt-4o-2024-08-06",
    service_tier: "default",
    system_fingerprint: "fp_abc",
    usage: null,
  };
  const at = (delta: JsonObject, finish: string | null = null): ChatCompletionChunk => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  const words = ["Hello", "!", " How", " can", " I", " help", " you", " today", "?"];
  const stream: ChatCompletionChunk[] = [
    at({ role: "assistant", content: "", refusal: null }),
    ...words.map((w) => at({ content: w })),
    at({
      tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "" } }],
    }),
    at({
      tool_calls: [{ index: 1, id: "call_2", type: "function", function: { name: "g", arguments: "" } }],
    }),
    at({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }),
    at({ tool_calls: [{ index: 1, function: { arguments: '{"b":2}' } }] }),
    at({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] }),
    at({}, "tool_calls"),
    {
      ...base,
      choices: [],
      usage: {
        prompt_tokens: 19,
        completion_tokens: 10,
        total_tokens: 29,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 },
      },
    },
  ];
  const back = accumulate(stream)!;
  assert.deepEqual(back, {
    id: "chatcmpl-real",
    object: "chat.completion",
    created: 1_700_000_001,
    model: "gpt-4o-2024-08-06",
    system_fingerprint: "fp_abc",
    service_tier: "default",
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: "Hello! How can I help you today?",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "f", arguments: '{"a":1}' } },
          { id: "call_2", type: "function", function: { name: "g", arguments: '{"b":2}' } },
        ],
      },
      logprobs: null,
      finish_reason: "tool_calls",
    }],
    usage: stream.at(-1)!.usage,
  });
  // Its normal form is itself, and replaying it gives it back.
  assert.deepEqual(normaliseCompletion(back), back);
  assertRoundTrip(back);
});
