/** The client's body of a natively passed-through Messages stream. */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { sseParseTransformer } from "../../sse/parse.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import { scrubberOf } from "../../secrets/scrubber.ts";
import { nativeMessagesStreamBody, type NativeMessagesStreamOutcome } from "./native_stream.ts";

const START: JsonObject = {
  type: "message_start",
  message: {
    id: "msg_up",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-5",
    content: [],
    stop_reason: null,
    usage: {
      input_tokens: 25,
      cache_creation_input_tokens: 40,
      cache_read_input_tokens: 300,
      output_tokens: 1,
    },
  },
};
const REST: JsonObject[] = [
  { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Hmm" } },
  { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQB==" } },
  { type: "ping" },
  { type: "content_block_stop", index: 0 },
  { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Hi" } },
  { type: "content_block_stop", index: 1 },
  {
    type: "message_delta",
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 15 },
  },
  { type: "message_stop" },
];

/** A reader over `events`, then `failure` thrown (or the end). */
function upstream(events: JsonObject[], failure?: Error): ReadableStreamDefaultReader<JsonObject> {
  let i = 0;
  return new ReadableStream<JsonObject>({
    pull(controller) {
      if (i < events.length) controller.enqueue(events[i++]);
      else if (failure) controller.error(failure);
      else controller.close();
    },
  }).getReader();
}

/** The client's body read through an SSE parser: each frame's `event:` name and data object. */
async function run(rest: ReadableStreamDefaultReader<JsonObject>) {
  let outcome: NativeMessagesStreamOutcome | undefined;
  const body = nativeMessagesStreamBody({ first: START, rest }, {
    alias: "my-alias",
    startedAt: performance.now(),
    scrubber: scrubberOf(["sk-Qx7Zv9Kp2Lm4"]),
    onEnd: (o) => outcome = o,
  });
  const frames: { event?: string; data: JsonObject }[] = [];
  for await (const e of runStages(body, sseParseTransformer())) {
    frames.push({ event: e.event, data: JSON.parse(e.data) });
  }
  return { frames, outcome: outcome! };
}

Deno.test("messages native stream: every event forwarded as `event: <type>`, the alias in message_start", async () => {
  const { frames, outcome } = await run(upstream(REST));
  assert.deepEqual(frames.map((f) => f.event), [START, ...REST].map((e) => e.type));
  for (const f of frames) assert.equal(f.event, f.data.type);
  assert.deepEqual(frames[0].data, {
    ...START,
    message: { ...START.message as JsonObject, model: "my-alias" },
  });
  assert.deepEqual(frames.slice(1).map((f) => f.data), REST, "thinking, signatures and pings unchanged");
  assert.equal(outcome.end, "ok");
  assert.deepEqual(outcome.usage, {
    input: 25,
    output: 15,
    cacheCreation: 40,
    cacheCreation1h: 0,
    cacheRead: 300,
    webSearches: 0,
  });
  assert.deepEqual(outcome.texts.opening(), ["Hmm", "Hi"]);
  assert.deepEqual(outcome.texts.said(), { text: ["Hi"], reasoning: ["Hmm"] }, "thinking captured apart");
  assert.equal(typeof outcome.firstChunkAt, "number");
});

Deno.test("messages native stream: an upstream failure ends with `event: error` of its type, never message_stop", async () => {
  const overloaded = new GatewayError(503, "Provider overloaded sk-Qx7Zv9Kp2Lm4", {
    code: "upstream_overloaded",
    anthropicType: "overloaded_error",
  });
  const { frames, outcome } = await run(upstream(REST.slice(0, 3), overloaded));
  assert.deepEqual(frames.map((f) => f.event), [
    "message_start",
    ...REST.slice(0, 3).map((e) => e.type),
    "error",
  ]);
  const last = frames.at(-1)!.data;
  assert.equal(last.type, "error");
  assert.equal((last.error as JsonObject).type, "overloaded_error");
  assert.doesNotMatch(String((last.error as JsonObject).message), /sk-Qx7Zv9Kp2Lm4/, "scrubbed");
  assert.equal(outcome.end, "error");
  assert.equal(outcome.error?.code, "upstream_overloaded");
  assert.equal(outcome.usage?.input, 25, "the input count is the upstream's even when the stream broke");

  const cut = await run(upstream(REST.slice(0, 2)));
  assert.equal(cut.frames.at(-1)!.event, "error", "a stream that just stops is a failure too");
  assert.equal((cut.frames.at(-1)!.data.error as JsonObject).type, "api_error");
  assert.ok(!cut.frames.some((f) => f.event === "message_stop"));
});

Deno.test("messages native stream: cancelling the body cancels the upstream and reports once", async () => {
  let cancelled = false;
  let ends = 0;
  const rest = new ReadableStream<JsonObject>({
    pull: (c) => c.enqueue({ type: "ping" }),
    cancel: () => {
      cancelled = true;
    },
  }).getReader();
  const body = nativeMessagesStreamBody({ first: START, rest }, {
    alias: "a",
    startedAt: performance.now(),
    onEnd: () => ends++,
  });
  const reader = body.getReader();
  await reader.read();
  await reader.read();
  await reader.cancel();
  assert.equal(cancelled, true);
  assert.equal(ends, 1);
});

Deno.test("messages native stream: a silent upstream gets the client a ping, then its event", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  let i = 0;
  const rest = new ReadableStream<JsonObject>({
    async pull(controller) {
      if (i === 0) await gate;
      if (i < REST.length) controller.enqueue(REST[i++]);
      else controller.close();
    },
  }).getReader();
  const body = nativeMessagesStreamBody({ first: START, rest }, {
    alias: "a",
    startedAt: performance.now(),
    pingMs: 5,
    onEnd: () => {},
  });
  const reader = runStages(body, sseParseTransformer()).getReader();
  assert.equal((await reader.read()).value?.event, "message_start");
  assert.equal((await reader.read()).value?.event, "ping", "sent while the upstream is silent");
  release();
  const names: (string | undefined)[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) names.push(r.value.event);
  const real = REST.map((e) => e.type).filter((t) => t !== "ping");
  assert.deepEqual(names.filter((n) => n !== "ping"), real, "nothing lost or reordered");
});

Deno.test("messages native stream: a message_delta whose count is not a count leaves the usage to the gateway", async () => {
  // A negative, fractional or string output count is no count: kept, message_start's `output_tokens: 1` would
  // stand for the whole answer; the stream's usage is untrusted instead, and the gateway counts.
  for (const bad of [-5, 2.5, "15", 1e20]) {
    const rest = REST.map((e) => e.type === "message_delta" ? { ...e, usage: { output_tokens: bad } } : e);
    const { outcome } = await run(upstream(rest as JsonObject[]));
    assert.equal(outcome.usage, null, `output_tokens ${bad}`);
  }
  // A later good update does not bring an untrusted usage back.
  const bad: JsonObject = { type: "message_delta", delta: {}, usage: { output_tokens: "x" } };
  const later = [...REST.slice(0, -2), bad, ...REST.slice(-2)];
  assert.equal((await run(upstream(later))).outcome.usage, null);
  const { outcome } = await run(upstream(REST));
  assert.deepEqual(outcome.usage, {
    input: 25,
    output: 15,
    cacheCreation: 40,
    cacheCreation1h: 0,
    cacheRead: 300,
    webSearches: 0,
  });
});
