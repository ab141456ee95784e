import assert from "node:assert/strict";
import { relaySse } from "./sse_relay.ts";

function body(chunks: string[], onCancel?: () => void): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(encoder.encode(chunks[i++]));
      else if (onCancel === undefined) controller.close();
    },
    cancel: () => onCancel?.(),
  });
}

Deno.test("relaySse: each event's data is one message; comments and [DONE] are not relayed", async () => {
  const sent: string[] = [];
  const whole = await relaySse(
    body([
      ": keep-alive\n\n",
      'event: a\ndata: {"type":"a"}\n\n',
      'data: {"ty',
      'pe":"b"}\n\n',
      "data: [DONE]\n\n",
    ]),
    (text) => Promise.resolve(void sent.push(text)),
    new AbortController().signal,
  );
  assert.deepEqual(sent, ['{"type":"a"}', '{"type":"b"}']);
  assert.equal(whole, true, "every event was sent");
});

Deno.test("relaySse: an abort cancels the body and ends the relay", async () => {
  const aborter = new AbortController();
  let cancelled = false;
  const sent: string[] = [];
  const relay = relaySse(body(["data: 1\n\n"], () => cancelled = true), (text) => {
    sent.push(text);
    aborter.abort();
    return Promise.resolve();
  }, aborter.signal);
  assert.equal(await relay, false, "stopped before the stream's end");
  assert.deepEqual(sent, ["1"]);
  assert.equal(cancelled, true);
});

Deno.test("relaySse: a failing stream rejects", async () => {
  const failing = new ReadableStream<Uint8Array>({
    pull: (controller) => controller.error(new Error("broken")),
  });
  await assert.rejects(relaySse(failing, () => Promise.resolve(), new AbortController().signal), /broken/);
});

Deno.test("relaySse: a body that ended before its last events were sent is not whole when the abort comes first", async () => {
  const aborter = new AbortController();
  const sent: string[] = [];
  // Both events are in the body, which has ended; the client is gone while the first is being sent.
  const whole = await relaySse(body(["data: 1\n\ndata: 2\n\n"]), (text) => {
    sent.push(text);
    aborter.abort();
    return Promise.resolve();
  }, aborter.signal);
  assert.equal(whole, false);
  assert.deepEqual(sent, ["1"]);
});
