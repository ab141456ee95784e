/**
 * A translated Responses stream whose upstream sends tool calls that never get a name: the stream fails once
 * what waits for a name passes its bound (lib/openai/tool_call_starts.ts), not when the upstream ends.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { ChatCompletionChunk } from "../../openai/types.ts";
import { parseResponsesRequest } from "./request.ts";
import { newId, type ResponseFrame } from "./response.ts";
import { ResponseEvents } from "./stream.ts";

const frame: ResponseFrame = {
  id: newId("resp_"),
  createdAt: 1,
  alias: "a",
  params: parseResponsesRequest({ model: "a", input: "Hi" }).params,
};

function chunk(delta: Record<string, unknown>): ChatCompletionChunk {
  return {
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "u",
    choices: [{ index: 0, delta, finish_reason: null }],
  };
}

/** Feeds `delta(i)` until a chunk fails (at most `max`): the error and how many chunks were sent. */
function feed(delta: (i: number) => Record<string, unknown>, max: number): { failed: unknown; sent: number } {
  const ev = new ResponseEvents(frame);
  ev.start();
  for (let sent = 1; sent <= max; sent++) {
    try {
      ev.chunk(chunk(delta(sent)));
    } catch (failed) {
      return { failed, sent };
    }
  }
  return { failed: undefined, sent: max };
}

Deno.test("responses stream: calls that never get a name end the stream once past the bound, not at its end", () => {
  // Ever-new indexes, none named: each call waits.
  const many = feed((i) => ({ tool_calls: [{ index: i, function: { arguments: "" } }] }), 5_000);
  assert.ok(many.failed instanceof GatewayError, "the stream failed before the upstream ended");
  assert.equal(many.failed.status, 502);
  assert.match(many.failed.message, /tool calls without a name/);
  assert.equal(many.sent, 1_025);

  // One call's arguments, its name never sent.
  const long = feed(
    () => ({ tool_calls: [{ index: 0, function: { arguments: "x".repeat(1_000) } }] }),
    1_000,
  );
  assert.ok(long.failed instanceof GatewayError);
  assert.equal(long.sent, 66, "past 64 Ki characters held");
});
