/**
 * The output a translated stream's `response.failed` carries: every item as the client's events built it. The
 * stream (stream.ts) gives its output with the items still open closed as their deltas built them (status
 * `incomplete`); this takes back what the events the client was never sent added, since a budget stop withholds
 * the events of the chunk that crossed the budget, after they were built.
 *
 * Only a failing stream runs this.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import type { ResponseEvent } from "./stream_events.ts";

/** `text` without the `delta` its end had. */
const without = (text: unknown, delta: unknown): string =>
  String(text).slice(0, String(text).length - String(delta).length);

/** A copy of `item` whose `key` list is copied too, each of its entries as well (so the stream's own are kept). */
function copied(item: JsonObject, key: "content" | "summary"): JsonObject {
  const list = Array.isArray(item[key]) ? (item[key] as JsonObject[]).map((part) => ({ ...part })) : [];
  return { ...item, [key]: list };
}

/**
 * `output` (the stream's items, open ones closed `incomplete`) without what the events of `recent` (the last
 * chunk's) from sequence number `sent` on, which the client was not sent, added, newest first: an item or part
 * they added is gone, a delta is taken off its text, and an item they marked done is still open for the client,
 * so `incomplete`. `output` itself when nothing was withheld.
 */
export function sentOutput(
  output: JsonObject[],
  recent: readonly ResponseEvent[],
  sent: number,
): JsonObject[] {
  const withheld = recent.filter((e) => (e.sequence_number as number) >= sent);
  if (withheld.length === 0) return output;
  const out = [...output];
  for (const e of [...withheld].reverse()) {
    const at = e.output_index as number;
    const item = out[at];
    if (item === undefined) continue;
    const content = e.content_index as number;
    switch (e.type) {
      case "response.output_item.added":
        out.length = at;
        break;
      case "response.output_item.done":
        out[at] = { ...item, status: "incomplete" };
        break;
      case "response.content_part.added":
        out[at] = copied(item, "content");
        (out[at].content as JsonObject[]).splice(content, 1);
        break;
      case "response.output_text.delta":
      case "response.refusal.delta": {
        out[at] = copied(item, "content");
        const part = (out[at].content as JsonObject[])[content];
        const key = e.type === "response.refusal.delta" ? "refusal" : "text";
        if (part !== undefined) part[key] = without(part[key], e.delta);
        break;
      }
      case "response.reasoning_summary_part.added":
        out[at] = { ...item, summary: [] };
        break;
      case "response.reasoning_summary_text.delta": {
        out[at] = copied(item, "summary");
        const part = (out[at].summary as JsonObject[])[0];
        if (part !== undefined) part.text = without(part.text, e.delta);
        break;
      }
      case "response.function_call_arguments.delta":
        out[at] = { ...item, arguments: without(item.arguments, e.delta) };
        break;
      case "response.custom_tool_call_input.delta":
        out[at] = { ...item, input: without(item.input, e.delta) };
        break;
    }
  }
  return out;
}
