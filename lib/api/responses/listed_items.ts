/**
 * A stored input item as `GET /v1/responses/{id}/input_items` lists it: in the shape of the spec's
 * `ItemResource`, as OpenAI lists what it was sent. The store keeps items as the client sent them (so chains
 * and item references replay them unchanged); the list fills in what OpenAI's own list always has: a message's
 * content as parts (`input_text` for user, system and developer messages, `output_text` with `annotations`
 * and `logprobs` for assistant ones), an image part's `detail`, and `status: "completed"` on messages and
 * function call items (they were complete when sent).
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";

/** A part of an assistant message, as the spec's `OutputMessageContent` (`output_text` or `refusal`). */
function outputPart(part: unknown): unknown {
  if (!isObject(part)) return part;
  if (part.type !== "output_text" && part.type !== "input_text") return part;
  return { annotations: [], logprobs: [], ...part, type: "output_text" };
}

/** A part of a user, system or developer message, as the spec's `InputContent`. */
function inputPart(part: unknown): unknown {
  if (!isObject(part)) return part;
  if (part.type === "input_image") return { ...part, detail: part.detail ?? "auto" };
  return part;
}

/** `item` (a stored input item, with its id) as the spec's `ItemResource`. */
export function listedItem(item: JsonObject): JsonObject {
  const type = item.type ?? "message";
  if (type === "message") {
    const assistant = item.role === "assistant";
    const content = typeof item.content === "string"
      ? [
        assistant
          ? outputPart({ type: "output_text", text: item.content })
          : { type: "input_text", text: item.content },
      ]
      : Array.isArray(item.content)
      ? item.content.map(assistant ? outputPart : inputPart)
      : item.content;
    return { ...item, type, content, status: item.status ?? "completed" };
  }
  if (type === "function_call" || type === "function_call_output") {
    return { ...item, status: item.status ?? "completed" };
  }
  return item;
}
