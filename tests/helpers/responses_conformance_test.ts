import assert from "node:assert/strict";
import { checkEvents, parseSse, type WireEvent } from "./responses_conformance.ts";

const ID = "resp_" + "0".repeat(48);
const response = (status: string, output: unknown[] = []) => ({ id: ID, object: "response", status, output });
const item = { id: "msg_1", type: "message", status: "completed", role: "assistant", content: [] };

/** A valid text stream, with its sequence numbers. */
function stream(): WireEvent[] {
  const at = { item_id: "msg_1", output_index: 0, content_index: 0 };
  const events: Record<string, unknown>[] = [
    { type: "response.created", response: response("in_progress") },
    { type: "response.in_progress", response: response("in_progress") },
    { type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress" } },
    { type: "response.output_text.delta", ...at, delta: "He" },
    { type: "response.output_text.delta", ...at, delta: "llo" },
    { type: "response.output_text.done", ...at, text: "Hello" },
    { type: "response.output_item.done", output_index: 0, item },
    { type: "response.completed", response: response("completed", [item]) },
  ];
  return events.map((e, i) => ({ ...e, sequence_number: i }) as WireEvent);
}

Deno.test("responses conformance: a consistent stream passes, and each kind of break is caught", () => {
  assert.equal(checkEvents(null, stream()).status, "completed");
  const broken: [string, (events: WireEvent[]) => void, RegExp][] = [
    ["a skipped sequence number", (e) => e[4].sequence_number = 5, /sequence numbers/],
    ["deltas that do not make the text", (e) => e[5].text = "Hullo", /concatenate/],
    ["a delta after its item is done", (e) => e.splice(6, 0, e.splice(4, 1)[0]), /open item|concatenate/],
    [
      "a final output other than the done items",
      (e) => e[7].response = response("completed"),
      /exactly the items/,
    ],
    ["no terminal event", (e) => e.pop(), /terminal/],
    [
      "two response ids",
      (e) => e[1].response = { ...response("in_progress"), id: "resp_" + "1".repeat(48) },
      /one response id/,
    ],
  ];
  for (const [what, breakIt, message] of broken) {
    const events = stream();
    breakIt(events);
    events.forEach((e, i) => {
      if (what !== "a skipped sequence number") e.sequence_number = i;
    });
    assert.throws(() => checkEvents(null, events), message, what);
  }
});

Deno.test("responses conformance: SSE frames need one event line that names the data's type", () => {
  assert.deepEqual(parseSse('event: a\ndata: {"type":"a","sequence_number":0}\n\n'), [
    { type: "a", sequence_number: 0 },
  ]);
  assert.throws(() => parseSse('event: b\ndata: {"type":"a"}\n\n'), /names the data's type/);
  assert.throws(() => parseSse('data: {"type":"a"}\n\n'), /one event line/);
});
