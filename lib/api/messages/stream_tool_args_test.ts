import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { ChatCompletionChunk, JsonObject } from "../../openai/types.ts";
import type { MessageFrame } from "./response.ts";
import { MessageEvents } from "./stream.ts";

const FRAME: MessageFrame = { id: "msg_test", alias: "coder", stopSequences: [], provider: "up" };

function chunk(delta: JsonObject, finish: string | null = null): ChatCompletionChunk {
  return {
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

const USAGE = { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 };

Deno.test("messages stream: arguments that are not one JSON object end a finished answer with an error", () => {
  const end = (args: string, finish: string) => {
    const events = new MessageEvents(FRAME);
    events.start(1);
    events.chunk(
      chunk({ tool_calls: [{ index: 0, id: "call_a", function: { name: "a", arguments: args } }] }),
    );
    events.chunk(chunk({}, finish));
    return events.finish(USAGE);
  };
  for (const args of ['{"city": "Paris"', "[1,2]", "null", '"text"', '{"a":1}{"b":2}', '{"a":1} x']) {
    for (const finish of ["tool_calls", "stop", "content_filter"]) {
      assert.throws(
        () => end(args, finish),
        (err: unknown) =>
          err instanceof GatewayError && err.status === 502 && /not a JSON object/.test(err.message),
        `${args} ${finish}`,
      );
    }
    // Cut off by the output limit: the half call is expected, as in the whole answer.
    assert.equal(end(args, "length").at(-2)!.type, "message_delta", args);
  }
  // Whole objects (whitespace around them included) and no arguments at all end cleanly.
  for (const args of ['{"a":[1,{"b":"}"}]}', ' \n{"a":1}\n ', "", "  "]) {
    assert.deepEqual(
      end(args, "tool_calls").at(-2)!.delta,
      { stop_reason: "tool_use", stop_sequence: null },
      args,
    );
  }
});

Deno.test("messages stream: arguments for a call that gets no name end the stream once past the bound, not at its end", () => {
  const events = new MessageEvents(FRAME);
  events.start(1);
  const nameless = chunk({ tool_calls: [{ index: 0, function: { arguments: "x".repeat(1_000) } }] });
  let failed: unknown;
  let sent = 0;
  for (; sent < 1_000 && failed === undefined; sent++) {
    try {
      events.chunk(structuredClone(nameless));
    } catch (err) {
      failed = err;
    }
  }
  assert.ok(failed instanceof GatewayError, "the stream failed before the upstream ended");
  assert.equal(failed.status, 502);
  assert.match(failed.message, /Provider "up" sent tool calls without a name/);
  assert.ok(sent <= 70, `failed after ${sent} KB of arguments held`);
});
