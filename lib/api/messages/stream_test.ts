import assert from "node:assert/strict";
import { badGateway, GatewayError } from "../../errors.ts";
import type { ChatCompletionChunk, JsonObject } from "../../openai/types.ts";
import { openAIChunkTransformer } from "../../providers/openai/stream.ts";
import { sseParseTransformer } from "../../sse/parse.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import type { MessageFrame } from "./response.ts";
import { HELD_LIMIT, MessageEvents, messagesStreamBody, type MessagesStreamOutcome } from "./stream.ts";

const FRAME: MessageFrame = { id: "msg_test", alias: "coder", stopSequences: ["END"], provider: "up" };

function chunk(delta: JsonObject, finish: string | null = null, extra: JsonObject = {}): ChatCompletionChunk {
  return {
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish, ...extra }],
  };
}

const USAGE_CHUNK: ChatCompletionChunk = {
  id: "c",
  object: "chat.completion.chunk",
  created: 1,
  model: "m",
  choices: [],
  usage: {
    prompt_tokens: 30,
    completion_tokens: 12,
    total_tokens: 42,
    prompt_tokens_details: { cached_tokens: 10 },
  },
};

/** Reasoning, text, then two parallel tool calls whose argument deltas interleave. */
const CHUNKS: ChatCompletionChunk[] = [
  chunk({ role: "assistant", content: "" }),
  chunk({ reasoning_content: "Think " }),
  chunk({ reasoning_content: "first." }),
  chunk({ content: "Calling " }),
  chunk({ content: "tools." }),
  chunk({
    tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "a", arguments: "" } }],
  }),
  chunk({
    tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "b", arguments: '{"y"' } }],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":1}' } }] }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: ":2}" } }] }),
  chunk({}, "tool_calls"),
  USAGE_CHUNK,
];

function translate(chunks: ChatCompletionChunk[]): JsonObject[] {
  const events = new MessageEvents(FRAME);
  const out: JsonObject[] = [...events.start(25)];
  for (const c of chunks) out.push(...events.chunk(structuredClone(c)));
  out.push(...events.finish(events.usage!));
  return out;
}

/** What an Anthropic client builds from the events: the content blocks by index, deltas applied. */
function accumulate(events: JsonObject[]): JsonObject[] {
  const blocks: JsonObject[] = [];
  for (const e of events) {
    if (e.type === "content_block_start") blocks[e.index as number] = { ...(e.content_block as JsonObject) };
    if (e.type === "content_block_delta") {
      const block = blocks[e.index as number];
      const d = e.delta as JsonObject;
      if (d.type === "text_delta") block.text += d.text as string;
      if (d.type === "thinking_delta") block.thinking += d.thinking as string;
      if (d.type === "input_json_delta") block.json = ((block.json as string) ?? "") + d.partial_json;
    }
  }
  return blocks;
}

Deno.test("messages stream: Anthropic's event order, blocks in order, usage at the end", () => {
  const events = translate(CHUNKS);
  assert.deepEqual(events.map((e) => e.type), [
    "message_start",
    "content_block_start", // thinking
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "content_block_start", // text
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "content_block_start", // tool a: b's start and first delta are held back until a's arguments are whole
    "content_block_delta",
    "content_block_stop",
    "content_block_start", // tool b
    "content_block_delta",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  const start = events[0].message as JsonObject;
  assert.equal(start.id, "msg_test");
  assert.equal(start.model, "coder");
  assert.deepEqual(start.content, []);
  assert.equal((start.usage as JsonObject).input_tokens, 25);
  assert.deepEqual(accumulate(events), [
    { type: "thinking", thinking: "Think first.", signature: "" },
    { type: "text", text: "Calling tools." },
    { type: "tool_use", id: "call_a", name: "a", input: {}, json: '{"x":1}' },
    { type: "tool_use", id: "call_b", name: "b", input: {}, json: '{"y":2}' },
  ]);
  assert.deepEqual(events.at(-2), {
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: {
      input_tokens: 20,
      output_tokens: 12,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 10,
    },
  });
});

/** Each block's start, deltas and stop come before the next block starts, its index the next one. */
function assertOneBlockAtATime(events: JsonObject[]): void {
  let open: number | undefined;
  let next = 0;
  for (const e of events) {
    if (e.type === "content_block_start") {
      assert.equal(open, undefined, `block ${e.index} starts while ${open} is open`);
      assert.equal(e.index, next++);
      open = e.index as number;
    } else if (e.type === "content_block_delta" || e.type === "content_block_stop") {
      assert.equal(e.index, open, `${e.type} of ${e.index} while ${open} is open`);
      if (e.type === "content_block_stop") open = undefined;
    }
  }
  assert.equal(open, undefined);
}

const call = (index: number, args: string, id?: string, name?: string) =>
  chunk({
    tool_calls: [{ index, ...(id ? { id, type: "function" } : {}), function: { name, arguments: args } }],
  });

Deno.test("messages stream: blocks come one at a time, each stopped before the next starts", () => {
  assertOneBlockAtATime(translate(CHUNKS));

  // Calls one after another, as OpenAI sends them: the first stops as the second starts, nothing waits.
  const events = new MessageEvents(FRAME);
  events.start(1);
  const seq = [
    call(0, "", "call_a", "get_weather"),
    call(0, '{"city":"Paris"}'),
    call(1, "", "call_b", "get_time"),
    call(1, '{"tz":"CET"}'),
  ].map((c) => events.chunk(c).map((e) => `${e.type}[${e.index}]`));
  assert.deepEqual(seq, [
    ["content_block_start[0]"],
    ["content_block_delta[0]"],
    ["content_block_stop[0]", "content_block_start[1]"],
    ["content_block_delta[1]"],
  ]);

  // Text after a tool call stops the call; a call interleaved with another and text after both keep the order
  // the upstream began them in.
  const mixed = translate([
    call(0, '{"a":1}', "call_a", "a"),
    chunk({ content: "Then " }),
    call(1, '{"b":', "call_b", "b"),
    call(2, '{"c":3}', "call_c", "c"),
    chunk({ content: "done." }),
    call(1, "2}"),
    chunk({}, "tool_calls"),
    USAGE_CHUNK,
  ]);
  assertOneBlockAtATime(mixed);
  assert.deepEqual(accumulate(mixed), [
    { type: "tool_use", id: "call_a", name: "a", input: {}, json: '{"a":1}' },
    { type: "text", text: "Then " },
    { type: "tool_use", id: "call_b", name: "b", input: {}, json: '{"b":2}' },
    { type: "tool_use", id: "call_c", name: "c", input: {}, json: '{"c":3}' },
    { type: "text", text: "done." },
  ]);

  // A call whose arguments never become whole (cut off by the output limit) holds the rest until the end, and
  // gives it then, in order.
  const unfinished = translate([
    call(0, '{"q":"', "call_a", "a"),
    call(1, "{}", "call_b", "b"),
    chunk({}, "length"),
    USAGE_CHUNK,
  ]);
  assertOneBlockAtATime(unfinished);
  assert.deepEqual(accumulate(unfinished).map((b) => b.json), ['{"q":"', "{}"]);
});

Deno.test("messages stream: a call's arguments split anywhere, braces and quotes in strings, close it where they end", () => {
  const args = '{"s":"a}\\"b{]","n":[1,{"m":"}"}]}';
  assert.deepEqual(JSON.parse(args), { s: 'a}"b{]', n: [1, { m: "}" }] });
  for (let at = 0; at <= args.length; at++) {
    const events = translate([
      call(0, args.slice(0, at), "call_a", "a"),
      call(1, '{"y":', "call_b", "b"),
      call(0, args.slice(at)),
      call(1, "2}"),
      chunk({}, "tool_calls"),
      USAGE_CHUNK,
    ]);
    assertOneBlockAtATime(events);
    assert.deepEqual(accumulate(events).map((b) => b.json), [args, '{"y":2}'], `split at ${at}`);
  }
});

Deno.test("messages stream: what is held back behind an unfinished call is bounded", () => {
  const events = new MessageEvents(FRAME);
  events.start(1);
  events.chunk(call(0, '{"q":"', "call_a", "a"));
  const big = "x".repeat(HELD_LIMIT / 2);
  assert.deepEqual(events.chunk(call(1, `{"big":"${big}`, "call_b", "b")), []);
  // Past the limit, the unfinished call stops and what was held goes out.
  const flushed = events.chunk(call(1, `${big}"}`));
  assert.deepEqual(flushed.map((e) => `${e.type}[${e.index}]`), [
    "content_block_stop[0]",
    "content_block_start[1]",
    "content_block_delta[1]",
  ]);
  // The stopped call's late arguments cannot reach the client: the stream fails rather than lose them.
  assert.throws(() => events.chunk(call(0, 'more"}')), (err: unknown) => err instanceof GatewayError);
});

Deno.test("messages stream: finish reasons map to stop reasons, a named stop sequence included", () => {
  const ending = (finish: string, extra: JsonObject = {}) => {
    const events = translate([chunk({ content: "x" }), chunk({}, finish, extra), USAGE_CHUNK]);
    return events.at(-2)!.delta;
  };
  assert.deepEqual(ending("stop"), { stop_reason: "end_turn", stop_sequence: null });
  assert.deepEqual(ending("length"), { stop_reason: "max_tokens", stop_sequence: null });
  assert.deepEqual(ending("content_filter"), { stop_reason: "refusal", stop_sequence: null });
  assert.deepEqual(ending("stop", { stop_reason: "END" }), {
    stop_reason: "stop_sequence",
    stop_sequence: "END",
  });
  // A matched string that is not one of the request's sequences is not taken for one.
  assert.deepEqual(ending("stop", { stop_reason: "OTHER" }), {
    stop_reason: "end_turn",
    stop_sequence: null,
  });
  const refused = translate([chunk({ refusal: "No." }), chunk({}, "stop"), USAGE_CHUNK]);
  assert.equal((refused.at(-2)!.delta as JsonObject).stop_reason, "refusal");
  // A tool call is a tool_use stop whatever the finish says (Gemini's OpenAI layer says `stop`), unless cut off.
  const called = (finish: string) =>
    (translate([
      chunk({ tool_calls: [{ index: 0, id: "call_a", function: { name: "a", arguments: "{}" } }] }),
      chunk({}, finish),
      USAGE_CHUNK,
    ]).at(-2)!.delta as JsonObject).stop_reason;
  assert.deepEqual(["stop", "length", "content_filter"].map(called), ["tool_use", "max_tokens", "refusal"]);
});

/** The upstream's SSE bytes for {@linkcode CHUNKS}, as an OpenAI-compatible server sends them. */
const WIRE = new TextEncoder().encode(
  CHUNKS.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n",
);

async function eventsFromBytes(pieces: Uint8Array[]): Promise<JsonObject[]> {
  const chunks = await Array.fromAsync(
    runStages(pieces, sseParseTransformer(), openAIChunkTransformer("up")) as ReadableStream<
      ChatCompletionChunk
    >,
  );
  return translate(chunks);
}

Deno.test("messages stream: the upstream's bytes split at every offset give the same events", async () => {
  const whole = await eventsFromBytes([WIRE]);
  assert.equal(whole.length, 18);
  for (let at = 1; at < WIRE.length; at++) {
    const split = await eventsFromBytes([WIRE.slice(0, at), WIRE.slice(at)]);
    assert.deepEqual(split, whole, `split at byte ${at}`);
  }
  // And one byte at a time.
  assert.deepEqual(await eventsFromBytes(Array.from(WIRE, (b) => Uint8Array.of(b))), whole);
});

/** A reader over chunks that the test feeds, one at a time, or fails. */
function controlledUpstream() {
  let controller!: ReadableStreamDefaultController<ChatCompletionChunk>;
  const stream = new ReadableStream<ChatCompletionChunk>({ start: (c) => void (controller = c) });
  return { controller, reader: stream.getReader(), cancelled: false };
}

function frames(text: string): { event: string; data: JsonObject }[] {
  return text.trim().split("\n\n").map((frame) => {
    const [event, data] = frame.split("\n");
    return { event: event.replace("event: ", ""), data: JSON.parse(data.replace("data: ", "")) };
  });
}

function body(
  upstream: ReturnType<typeof controlledUpstream>,
  onEnd: (o: MessagesStreamOutcome) => void,
  pingMs = 10_000,
) {
  return messagesStreamBody({ first: chunk({ content: "Hel" }), rest: upstream.reader }, {
    frame: FRAME,
    inputTokens: 25,
    startedAt: performance.now(),
    countUsage: (texts) =>
      Promise.resolve({
        prompt_tokens: 25,
        completion_tokens: texts.opening().length,
        total_tokens: 25 + texts.opening().length,
      }),
    onEnd,
    pingMs,
  });
}

Deno.test("messages stream body: each chunk's events go out as it arrives, pings fill silences", async () => {
  const upstream = controlledUpstream();
  let outcome: MessagesStreamOutcome | undefined;
  const reader = body(upstream, (o) => outcome = o, 30).getReader();
  const decoder = new TextDecoder();
  const read = async () => decoder.decode((await reader.read()).value);
  const first = frames(await read());
  assert.deepEqual(first.map((f) => f.event), [
    "message_start",
    "content_block_start",
    "content_block_delta",
  ]);
  for (const f of first) assert.equal(f.event, f.data.type);
  // The upstream is silent: the client gets a ping, then another.
  assert.deepEqual(frames(await read()), [{ event: "ping", data: { type: "ping" } }]);
  assert.deepEqual(frames(await read()), [{ event: "ping", data: { type: "ping" } }]);
  const next = read();
  upstream.controller.enqueue(chunk({ content: "lo" }));
  assert.deepEqual(frames(await next).map((f) => f.data.delta), [{ type: "text_delta", text: "lo" }]);
  upstream.controller.enqueue(chunk({}, "stop"));
  upstream.controller.close();
  let rest = "";
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += decoder.decode(value);
  }
  const end = frames(rest);
  assert.deepEqual(end.map((f) => f.event), ["content_block_stop", "message_delta", "message_stop"]);
  // No upstream usage: the gateway's count (here: one per text received).
  assert.equal((end[1].data.usage as JsonObject).output_tokens, 2);
  assert.equal(outcome?.end, "ok");
});

Deno.test("messages stream body: an upstream failure after the start ends with an error event, never message_stop", async () => {
  const upstream = controlledUpstream();
  let outcome: MessagesStreamOutcome | undefined;
  const stream = body(upstream, (o) => outcome = o);
  upstream.controller.enqueue(chunk({ content: "lo" }));
  upstream.controller.error(badGateway('Provider "up" ended the stream early.'));
  const text = await new Response(stream).text();
  const all = frames(text);
  assert.deepEqual(all.at(-1), {
    event: "error",
    data: { type: "error", error: { type: "api_error", message: 'Provider "up" ended the stream early.' } },
  });
  assert.ok(!all.some((f) => f.event === "message_stop" || f.event === "message_delta"));
  assert.equal(outcome?.end, "error");
});

Deno.test("messages stream body: the client going away cancels the upstream and ends once", async () => {
  let cancelled = false;
  let ends = 0;
  const source = new ReadableStream<ChatCompletionChunk>({
    cancel: () => void (cancelled = true),
  });
  const stream = messagesStreamBody({ first: chunk({ content: "Hi" }), rest: source.getReader() }, {
    frame: FRAME,
    inputTokens: 1,
    startedAt: performance.now(),
    countUsage: () => Promise.reject(new Error("not reached")),
    onEnd: (o) => {
      ends++;
      assert.equal(o.end, "cancelled");
    },
  });
  const reader = stream.getReader();
  await reader.read();
  await reader.cancel();
  assert.ok(cancelled);
  assert.equal(ends, 1);
});
