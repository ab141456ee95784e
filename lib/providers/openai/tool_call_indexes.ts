/**
 * The `index` of streamed tool call deltas, made to tell calls apart where the upstream's does not. The chat form
 * joins a call's fragments by `tool_calls[].index`, but some OpenAI-compatible servers send parallel calls
 * without one (Gemini's OpenAI-compatible endpoint: each call whole, with its own id) or give every call the same
 * one (Ollama: 0), so every reader that joined by it merged two calls into one whose arguments are no JSON
 * (`{"city":"Sydney"}{"city":"Paris"}`) and lost the second.
 *
 * The rule, per choice: a delta with a non-empty `id` other than the one of the call its `index` (or, without an
 * index, the last call without one) named starts a new call; a delta without an `id`, or with that call's,
 * continues it. A call keeps the upstream's index when it is free, else takes the next free one, so a
 * well-behaved stream passes unchanged. Applied as the stream is read (`openAIChunkTransformer`), it gives
 * every client API (chat completions, Responses, Messages, Gemini's) and the response cache the same calls.
 *
 * @module
 */
import { type ChatCompletionChunk, isObject, type JsonObject } from "../../openai/types.ts";

/** The call an upstream index (or the absence of one) names now: its index as passed on, and its id. */
interface Named {
  index: number;
  id: string | undefined;
}

/** One choice's calls: the call each upstream index names, the indexes passed on so far, the next free one. */
interface ChoiceCalls {
  named: Map<number | null, Named>;
  used: Set<number>;
  next: number;
}

/** Numbers one stream's tool call deltas so that each call has an index of its own, in place. */
export class ToolCallIndexes {
  #choices = new Map<number, ChoiceCalls>();

  /** Sets the `index` of each of `chunk`'s tool call deltas. */
  number(chunk: ChatCompletionChunk): void {
    for (const choice of chunk.choices) {
      const delta = isObject(choice) ? choice.delta : undefined;
      if (!isObject(delta) || !Array.isArray(delta.tool_calls)) continue;
      const at = typeof choice.index === "number" ? choice.index : 0;
      let calls = this.#choices.get(at);
      if (calls === undefined) this.#choices.set(at, calls = { named: new Map(), used: new Set(), next: 0 });
      for (const call of delta.tool_calls) {
        if (isObject(call)) this.#numberCall(call, calls);
      }
    }
  }

  #numberCall(call: JsonObject, calls: ChoiceCalls): void {
    const upstream = typeof call.index === "number" ? call.index : null;
    const id = typeof call.id === "string" && call.id !== "" ? call.id : undefined;
    let named = calls.named.get(upstream);
    if (named === undefined || (id !== undefined && named.id !== undefined && id !== named.id)) {
      const index = upstream !== null && !calls.used.has(upstream) ? upstream : calls.next;
      calls.used.add(index);
      calls.next = Math.max(calls.next, index + 1);
      named = { index, id };
      calls.named.set(upstream, named);
    }
    named.id ??= id;
    call.index = named.index;
  }
}
