/**
 * Azure's stream after the OpenAI chunk stage: annotation-only chunks folded or completed so that every chunk
 * a client sees is OpenAI-shaped.
 *
 * @module
 */
import { type ChatCompletionChunk, isObject, type JsonObject } from "../../openai/types.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";

/** Top-level chunk fields that identify the chunk rather than annotate it. */
const IDENTITY_KEYS = new Set(["id", "object", "created", "model", "choices", "usage", "system_fingerprint"]);

/**
 * Makes Azure's stream OpenAI-shaped without losing annotations:
 *
 * - An annotation-only chunk (`choices: []`, no usage: Azure's first chunk with `prompt_filter_results`, or
 *   the older `prompt_annotations`) is held and its annotation fields are added to the next chunk. Passing it
 *   on would give clients a chunk OpenAI never sends (and one that breaks `chunk.choices[0]` code).
 * - A chunk with an empty `id` (asynchronous-filter annotations) gets the stream's id and `created`.
 * - `object` is always `chat.completion.chunk`; a choice without `delta` gets `{}`.
 * - Usage chunks (`choices: []` with usage) pass unchanged; the server decides whether the client sees them.
 */
export function azureChunkTransformer(): SyncTransformer<ChatCompletionChunk, ChatCompletionChunk> {
  let identity: { id: string; created: number } | undefined;
  let held: JsonObject | undefined;
  return {
    transform(chunk, controller) {
      if (chunk.choices.length === 0 && (chunk.usage === undefined || chunk.usage === null)) {
        held ??= {};
        for (const [key, value] of Object.entries(chunk)) {
          if (!IDENTITY_KEYS.has(key)) held[key] = value;
        }
        return;
      }
      const out: ChatCompletionChunk = { ...chunk, object: "chat.completion.chunk" };
      if (typeof chunk.id === "string" && chunk.id !== "") {
        identity ??= { id: chunk.id, created: chunk.created };
      } else if (identity !== undefined) {
        out.id = identity.id;
        out.created = identity.created;
      }
      out.choices = chunk.choices.map((choice) => isObject(choice.delta) ? choice : { ...choice, delta: {} });
      if (held !== undefined) {
        for (const [key, value] of Object.entries(held)) {
          if (out[key] === undefined || out[key] === null) out[key] = value;
        }
        held = undefined;
      }
      controller.enqueue(out);
    },
  };
}
