import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { parseResponsesRequest } from "./request.ts";
import { completionToResponse, newId, type ResponseFrame } from "./response.ts";
import { replayEvents } from "./replay.ts";
import { loadOpenApiSchemas } from "../../../tests/helpers/openapi_schema.ts";
import { checkEvents, type WireEvent } from "../../../tests/helpers/responses_conformance.ts";

/** The spec's schemas (null on a local run without the spec; CI always has it). */
const schemas = await loadOpenApiSchemas();

const parsed = parseResponsesRequest({
  model: "a",
  input: "Hi",
  tools: [{ type: "function", name: "f" }, { type: "custom", name: "apply_patch" }],
});
const frame: ResponseFrame = { id: newId("resp_"), createdAt: 1, alias: "a", params: parsed.params };
const USAGE = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };

/** A translated answer with every item kind: reasoning, text, a function call and a custom tool's call. */
function stored(finish = "tool_calls"): JsonObject {
  return completionToResponse(
    {
      id: "c",
      object: "chat.completion",
      created: 1,
      model: "u",
      choices: [{
        index: 0,
        finish_reason: finish,
        message: {
          role: "assistant",
          reasoning_content: "Think.",
          content: "Calling.",
          tool_calls: [
            { id: "c1", type: "function", function: { name: "f", arguments: '{"a":1}' } },
            { id: "c2", type: "function", function: { name: "apply_patch", arguments: '{"input":"P"}' } },
          ],
        },
      }],
    },
    frame,
    USAGE,
  );
}

Deno.test("responses replay: a stored Response as the stream that builds it, conforming to the spec", () => {
  const response = stored();
  const events = replayEvents(response);
  // Ids, items and the final Response are the stored ones; the deltas build each item's text.
  assert.deepEqual(checkEvents(schemas, events as WireEvent[]), response);
  const types = events.map((e) => e.type);
  for (
    const type of [
      "response.reasoning_summary_text.delta",
      "response.output_text.delta",
      "response.function_call_arguments.done",
      "response.custom_tool_call_input.done",
    ]
  ) assert.ok(types.includes(type), type);
  assert.equal(types.at(-1), "response.completed");
});

Deno.test("responses replay: an incomplete Response ends incomplete; a native item is added as stored", () => {
  const response = stored("length");
  assert.equal(response.status, "incomplete");
  assert.equal(replayEvents(response).at(-1)!.type, "response.incomplete");
  checkEvents(schemas, replayEvents(response) as WireEvent[]);

  const search = {
    id: "ws_1",
    type: "web_search_call",
    status: "completed",
    action: { type: "search", query: "q" },
  };
  const native = { ...stored("stop"), output: [search] };
  const events = replayEvents(native);
  assert.deepEqual(events.map((e) => e.type), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.output_item.done",
    "response.completed",
  ]);
  checkEvents(schemas, events as WireEvent[]);
});

Deno.test("responses replay: starting_after leaves out the events up to that sequence number", () => {
  const all = replayEvents(stored());
  const rest = replayEvents(stored(), 3);
  assert.equal(rest[0].sequence_number, 4);
  assert.deepEqual(rest.map((e) => e.type), all.slice(4).map((e) => e.type));
  assert.deepEqual(replayEvents(stored(), all.length), []);
});
