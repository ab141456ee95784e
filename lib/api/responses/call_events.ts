/**
 * The argument events of a tool call in a translated stream (stream.ts): a function call's
 * `response.function_call_arguments.delta` / `.done`, or, for the call of a custom tool (custom_tools.ts),
 * `response.custom_tool_call_input.delta` / `.done` with the input text decoded from the arguments' JSON as it
 * streams (custom_input.ts). Events come without sequence numbers; the stream numbers them.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { CustomInputReader } from "./custom_input.ts";
import { isCustomTool } from "./custom_tools.ts";
import type { ResponseEvent } from "./stream_events.ts";

/** An open call as the events name it. */
interface Call {
  /** Its item id. */
  id: string;
  index: number;
  name: string;
  arguments: string;
}

/** The argument events of the open calls of one stream; keeps each custom call's input read so far. */
export class CallEvents {
  readonly #inputs = new Map<string, CustomInputReader>();

  /** The tools the model may call, as the client declared them (its calls are named from them). */
  constructor(readonly tools: readonly JsonObject[]) {}

  /** A fragment of `call`'s arguments (already added to them): its delta, if it shows anything yet. */
  delta(call: Call, fragment: string): ResponseEvent[] {
    const at = { item_id: call.id, output_index: call.index };
    if (!isCustomTool(this.tools, call.name)) {
      return [{ type: "response.function_call_arguments.delta", ...at, delta: fragment }];
    }
    let reader = this.#inputs.get(call.id);
    if (reader === undefined) this.#inputs.set(call.id, reader = new CustomInputReader());
    const delta = reader.push(fragment);
    return delta === "" ? [] : [{ type: "response.custom_tool_call_input.delta", ...at, delta }];
  }

  /**
   * The `.done` of `call`'s arguments, `item` its finished item: a custom call's input is the item's, after a
   * last delta with what its deltas had not shown (all of it, for arguments that held no JSON `input`).
   */
  done(call: Call, item: JsonObject): ResponseEvent[] {
    const at = { item_id: call.id, output_index: call.index };
    if (item.type !== "custom_tool_call") {
      return [{
        type: "response.function_call_arguments.done",
        ...at,
        name: item.name,
        arguments: call.arguments,
      }];
    }
    const input = String(item.input);
    const rest = input.slice(this.#inputs.get(call.id)?.decoded.length ?? 0);
    this.#inputs.delete(call.id);
    const done: ResponseEvent = { type: "response.custom_tool_call_input.done", ...at, input };
    return rest === ""
      ? [done]
      : [{ type: "response.custom_tool_call_input.delta", ...at, delta: rest }, done];
  }
}
