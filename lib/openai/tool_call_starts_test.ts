import assert from "node:assert/strict";
import type { JsonObject } from "./types.ts";
import {
  type ToolCallPiece,
  ToolCallStarts,
  UNNAMED_ARGS_MAX,
  WAITING_CALLS_MAX,
} from "./tool_call_starts.ts";

/** What each delta shows. */
function pieces(starts: ToolCallStarts, ...deltas: JsonObject[]): (ToolCallPiece | null)[] {
  return deltas.map((d) => starts.delta(d));
}

const fn = (fields: JsonObject) => ({ function: fields });

Deno.test("tool call starts: the chat form's own way starts at the first delta", () => {
  const starts = new ToolCallStarts();
  assert.deepEqual(
    pieces(
      starts,
      { index: 0, id: "a", ...fn({ name: "f", arguments: "" }) },
      { index: 0, ...fn({ arguments: '{"x":1}' }) },
      { index: 1, id: "b", ...fn({ name: "g", arguments: "{}" }) },
    ),
    [
      { call: 0, start: { id: "a", name: "f" }, arguments: "" },
      { call: 0, arguments: '{"x":1}' },
      { call: 1, start: { id: "b", name: "g" }, arguments: "{}" },
    ],
  );
  assert.equal(starts.anyStarted, true);
  assert.equal(starts.nameless, false);
  assert.deepEqual(starts.end(), []);
});

Deno.test("tool call starts: a call waits for its name, its fragments held (vLLM, vmlx)", () => {
  // The id and name in a later chunk than the first fragment.
  const late = new ToolCallStarts();
  assert.deepEqual(
    pieces(
      late,
      { index: 0, ...fn({ arguments: "" }) },
      { index: 0, id: "call_abc", ...fn({ name: "get_weather" }) },
      { index: 0, ...fn({ arguments: '{"ci' }) },
    ),
    [null, { call: 0, start: { id: "call_abc", name: "get_weather" }, arguments: "" }, {
      call: 0,
      arguments: '{"ci',
    }],
  );
  // An empty name first, the real one (and the arguments) next.
  const empty = new ToolCallStarts();
  assert.deepEqual(
    pieces(
      empty,
      { index: 0, id: "call_x", ...fn({ name: "", arguments: "" }) },
      { index: 0, id: "call_x", ...fn({ name: "get_weather", arguments: '{"city":"Paris"}' }) },
    ),
    [null, { call: 0, start: { id: "call_x", name: "get_weather" }, arguments: '{"city":"Paris"}' }],
  );
  // Arguments before the name are held and come with the start.
  const early = new ToolCallStarts();
  assert.deepEqual(
    pieces(early, { index: 0, ...fn({ arguments: '{"a":' }) }, {
      index: 0,
      id: "c",
      ...fn({ name: "f", arguments: "1}" }),
    }),
    [null, { call: 0, start: { id: "c", name: "f" }, arguments: '{"a":1}' }],
  );
});

Deno.test("tool call starts: a name without an id waits for the id or the first arguments", () => {
  const starts = new ToolCallStarts();
  assert.deepEqual(
    pieces(starts, { index: 0, ...fn({ name: "f" }) }, { index: 0, id: "c" }),
    [null, { call: 0, start: { id: "c", name: "f" }, arguments: "" }],
  );
  const noId = new ToolCallStarts();
  assert.deepEqual(
    pieces(noId, { index: 0, ...fn({ name: "f" }) }, { index: 0, ...fn({ arguments: "{}" }) }),
    [null, { call: 0, start: { id: undefined, name: "f" }, arguments: "{}" }],
  );
  // At the end, a named call still waiting starts; one never named makes the stream's end an error.
  const waiting = new ToolCallStarts();
  assert.equal(waiting.delta({ index: 0, ...fn({ name: "f" }) }), null);
  assert.equal(waiting.anyStarted, false);
  assert.deepEqual(waiting.end(), [{ call: 0, start: { id: undefined, name: "f" }, arguments: "" }]);
  const nameless = new ToolCallStarts();
  assert.equal(nameless.delta({ index: 0, id: "c", ...fn({ arguments: "{}" }) }), null);
  assert.equal(nameless.nameless, true);
});

Deno.test("tool call starts: another id at the same index is another call (Ollama gives each 0)", () => {
  const starts = new ToolCallStarts();
  assert.deepEqual(
    pieces(
      starts,
      { index: 0, id: "a", ...fn({ name: "f", arguments: "{}" }) },
      { index: 0, id: "b", ...fn({ name: "f", arguments: "{}" }) },
      { index: 0, id: "b", ...fn({ arguments: "" }) },
    ),
    [
      { call: 0, start: { id: "a", name: "f" }, arguments: "{}" },
      { call: 1, start: { id: "b", name: "f" }, arguments: "{}" },
      { call: 1, arguments: "" },
    ],
  );
});

Deno.test("tool call starts: what waits for a name is bounded; a name coming within it starts the call whole", () => {
  // Arguments for one call that has no name: held up to the bound, then the upstream is malformed.
  const fragment = "x".repeat(1_000);
  const endless = new ToolCallStarts();
  let over = -1;
  for (let i = 0; i < 100 && over < 0; i++) {
    assert.equal(endless.delta({ index: 0, ...fn({ arguments: fragment }) }), null);
    if (endless.holdsTooMuch) over = i;
  }
  assert.equal(over, Math.floor(UNNAMED_ARGS_MAX / fragment.length), "past the bound, not before");

  // Calls at ever-new indexes, none named.
  const many = new ToolCallStarts();
  for (let i = 0; i < WAITING_CALLS_MAX; i++) many.delta({ index: i, ...fn({ arguments: "" }) });
  assert.equal(many.holdsTooMuch, false);
  many.delta({ index: WAITING_CALLS_MAX, ...fn({ arguments: "" }) });
  assert.equal(many.holdsTooMuch, true);

  // Just under the bound, a late name starts the call with every fragment held, and frees the bound.
  const late = new ToolCallStarts();
  const held = "y".repeat(UNNAMED_ARGS_MAX);
  assert.equal(late.delta({ index: 0, ...fn({ arguments: held }) }), null);
  assert.deepEqual(late.delta({ index: 0, id: "c1", ...fn({ name: "f" }) }), {
    call: 0,
    start: { id: "c1", name: "f" },
    arguments: held,
  });
  assert.equal(late.delta({ index: 1, ...fn({ arguments: held }) }), null);
  assert.equal(late.holdsTooMuch, false, "the first call's arguments no longer count");
});
