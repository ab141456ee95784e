import assert from "node:assert/strict";
import { StreamTexts } from "../usage/stream_texts.ts";
import { createBudgetGuard } from "./budget_guard.ts";
import { clientStreamBody, type StreamOutcome } from "./stream_body.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** An endless upstream of 8-character texts (2 tokens each); notes how many were read and whether it was cancelled. */
function endless() {
  const state = { read: 0, cancelled: false as boolean, reason: undefined as unknown };
  const rest = new ReadableStream<string>({
    pull(controller) {
      state.read++;
      controller.enqueue(`chunk${String(state.read).padStart(3, "0")}`);
    },
    cancel(reason) {
      state.cancelled = true;
      state.reason = reason;
    },
  }, { highWaterMark: 0 }).getReader();
  return { stream: { first: "chunk000", rest }, state };
}

function body(stream: ReturnType<typeof endless>["stream"], allowance?: number) {
  const outcome: StreamOutcome = { end: "ok", texts: new StreamTexts() };
  const ends: StreamOutcome[] = [];
  const budget = allowance === undefined
    ? undefined
    : createBudgetGuard({ allowance, promptTokens: 0, inputWeight: 1, outputWeight: 1, message: "over" });
  const sse = clientStreamBody(stream, outcome, { onEnd: (o) => ends.push({ ...o }), budget }, {
    async pull(controller, next) {
      const value = await next();
      outcome.texts.push(value!);
      controller.enqueue(encoder.encode(`${value}\n`));
    },
    fail(controller, error) {
      controller.enqueue(encoder.encode(`!${error.code}\n`));
    },
  });
  return { sse, ends, outcome };
}

Deno.test("client body with a budget guard: withholds the write that crosses, ends with the error, cancels the upstream", async () => {
  const { stream, state } = endless();
  const { sse, ends } = body(stream, 10); // 5 texts of 2 tokens fit, the 6th crosses
  const text = decoder.decode(await new Response(sse).arrayBuffer());
  const lines = text.trim().split("\n");
  assert.deepEqual(lines, [
    "chunk000",
    "chunk001",
    "chunk002",
    "chunk003",
    "chunk004",
    "!insufficient_quota",
  ]);
  assert.equal(state.cancelled, true, "the upstream was cancelled");
  assert.ok(state.read <= 6, `the upstream was read no further than needed (${state.read})`);
  assert.equal(ends.length, 1);
  assert.equal(ends[0].end, "error");
  assert.equal(ends[0].error?.code, "insufficient_quota");
  assert.equal(
    ends[0].texts.opening().length,
    6,
    "the usage counts what the upstream produced, the withheld text included",
  );
});

Deno.test("client body without a budget guard: the same stream is not stopped", async () => {
  const { stream, state } = endless();
  const { sse } = body(stream);
  const reader = sse.getReader();
  let lines = 0;
  while (lines < 50) {
    const { value } = await reader.read();
    lines += decoder.decode(value).split("\n").length - 1;
  }
  assert.equal(state.cancelled, false);
  await reader.cancel();
  assert.equal(state.cancelled, true);
});
