/**
 * The native Responses stream stage (`lib/providers/openai/responses.ts`) behind the SSE parser, exactly as the
 * OpenAI and Azure adapters chain them, against the bytes an upstream may send in any chunking: split at every
 * byte, one byte per chunk, CRLF or CR line ends, comments; multi-byte characters and a provider key torn
 * across chunks. What a client would notice: the same events whatever the chunking, each event given as soon
 * as its bytes are in, an error event scrubbed of the key, and a stream cut anywhere before its final event
 * failing instead of ending cleanly.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../lib/errors.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import { responsesEventTransformer } from "../../lib/providers/openai/responses.ts";
import { sseParseTransformer } from "../../lib/sse/parse.ts";
import { runStages, type StageInput } from "../helpers/run_stages.ts";

const KEY = "sk-native-Zq81Lm4Xv7Pc2Rt9";

const frame = (data: Record<string, unknown>) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

/** A stream as OpenAI sends one, with text in 2-, 3- and 4-byte UTF-8 characters and a keep-alive comment. */
const EVENTS: Record<string, unknown>[] = [
  {
    type: "response.created",
    sequence_number: 0,
    response: { id: "resp_up", status: "in_progress", output: [] },
  },
  { type: "response.in_progress", sequence_number: 1, response: { id: "resp_up", status: "in_progress" } },
  {
    type: "response.output_text.delta",
    sequence_number: 2,
    item_id: "msg_1",
    output_index: 0,
    delta: "Hé ☀ ",
  },
  {
    type: "response.output_text.delta",
    sequence_number: 3,
    item_id: "msg_1",
    output_index: 0,
    delta: "🌍 ok",
  },
  {
    type: "response.completed",
    sequence_number: 4,
    response: {
      id: "resp_up",
      object: "response",
      status: "completed",
      output: [],
      usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 },
    },
  },
];
const TEXT = EVENTS.slice(0, 2).map(frame).join("") + ": keep-alive\n\n" +
  EVENTS.slice(2).map(frame).join("");
const BYTES = new TextEncoder().encode(TEXT);

/** The events out of the stage for `input`, or the error that ended it (with the events before it). */
async function run(input: StageInput<Uint8Array>): Promise<{ events: JsonObject[]; error?: GatewayError }> {
  const events: JsonObject[] = [];
  try {
    for await (
      const e of runStages(
        input,
        sseParseTransformer({ provider: "p" }),
        responsesEventTransformer("p", [KEY]),
      )
    ) {
      events.push(e);
    }
  } catch (err) {
    assert.ok(err instanceof GatewayError, `a gateway error, not ${err}`);
    return { events, error: err };
  }
  return { events };
}

function chunks(bytes: Uint8Array, ...cuts: number[]): Uint8Array[] {
  const at = [0, ...cuts, bytes.length];
  return at.slice(1).map((end, i) => bytes.slice(at[i], end));
}

Deno.test("native stage: the same events whether split at any byte or sent a byte at a time", async () => {
  const whole = await run([BYTES]);
  assert.equal(whole.error, undefined);
  assert.deepEqual(whole.events, EVENTS);
  for (let at = 1; at < BYTES.length; at++) {
    assert.deepEqual(await run(chunks(BYTES, at)), whole, `split at byte ${at}`);
  }
  const single = Array.from(BYTES, (b) => Uint8Array.of(b));
  assert.deepEqual(await run(single), whole, "one byte per chunk");
  // Three-way splits around every multi-byte character.
  for (let at = 1; at + 2 < BYTES.length; at += 3) {
    assert.deepEqual(
      await run(chunks(BYTES, at, at + 1, at + 2)),
      whole,
      `split at ${at}, ${at + 1}, ${at + 2}`,
    );
  }
});

Deno.test("native stage: CRLF and CR line ends give the same events, at every split", async () => {
  const whole = (await run([BYTES])).events;
  for (const eol of ["\r\n", "\r"]) {
    const bytes = new TextEncoder().encode(TEXT.replaceAll("\n", eol));
    for (let at = 1; at < bytes.length; at++) {
      assert.deepEqual(
        (await run(chunks(bytes, at))).events,
        whole,
        `${JSON.stringify(eol)}, split at ${at}`,
      );
    }
  }
});

Deno.test("native stage: each event is given as soon as its bytes are in, before the next arrives", async () => {
  let feed!: ReadableStreamDefaultController<Uint8Array>;
  const input = new ReadableStream<Uint8Array>({ start: (c) => void (feed = c) });
  const reader = runStages(
    input,
    sseParseTransformer({ provider: "p" }),
    responsesEventTransformer("p", [KEY]),
  )
    .getReader();
  const encoder = new TextEncoder();
  for (const event of EVENTS.slice(0, -1)) {
    feed.enqueue(encoder.encode(frame(event)));
    const { value } = await reader.read();
    assert.deepEqual(value, event, `${event.type} out before anything else is sent`);
  }
  feed.enqueue(encoder.encode(frame(EVENTS.at(-1)!)));
  assert.deepEqual((await reader.read()).value, EVENTS.at(-1));
  // The final event ends the stream at once: nothing waits for the upstream to close its side.
  assert.equal((await reader.read()).done, true);
});

Deno.test("native stage: an error event with the key torn across chunks fails the stream, scrubbed", async () => {
  const text = frame(EVENTS[0]) + frame(EVENTS[2]) +
    `event: error\ndata: ${
      JSON.stringify({
        type: "error",
        code: "rate_limit_exceeded",
        message: `Rate limit reached for key ${KEY}.`,
        param: null,
        sequence_number: 2,
      })
    }\n\n`;
  const bytes = new TextEncoder().encode(text);
  const keyAt = text.indexOf(KEY); // ASCII before it only on the error line; the earlier frames hold é ☀.
  const keyByte = new TextEncoder().encode(text.slice(0, keyAt)).length;
  for (
    const cuts of [
      [],
      [keyByte + 5],
      [keyByte + 1, keyByte + 12],
      ...Array.from({ length: 40 }, (_, i) => [keyByte - 20 + i]),
    ]
  ) {
    const { events, error } = await run(chunks(bytes, ...cuts));
    assert.deepEqual(events, [EVENTS[0], EVENTS[2]], `the events before the error are given (cut ${cuts})`);
    assert.ok(error, `the stream fails (cut ${cuts})`);
    assert.equal(error.code, "rate_limit_exceeded");
    assert.match(error.message, /Rate limit reached/);
    assert.doesNotMatch(
      JSON.stringify({ m: error.message, c: error.code, p: error.param }),
      /Zq81Lm4Xv7Pc2Rt9/,
    );
  }
});

Deno.test("native stage: cut at any byte before the final event, the stream fails and never ends cleanly", async () => {
  const whole = (await run([BYTES])).events;
  // The parser sends a last event that lacks only its blank line (a lenient end, by design: its JSON is whole),
  // so "before the final event" means before the final event's data line is complete.
  const finalEnd = BYTES.length - "\n\n".length;
  for (let n = 0; n < finalEnd; n++) {
    const { events, error } = await run(chunks(BYTES.slice(0, n), ...(n > 2 ? [Math.floor(n / 2)] : [])));
    assert.ok(error, `cut after ${n} of ${finalEnd} bytes: an error, not a clean end`);
    assert.equal(error.status, 502);
    assert.deepEqual(events, whole.slice(0, events.length), "what came before the cut is given as it was");
    assert.ok(!events.some((e) => e.type === "response.completed"));
  }
});
