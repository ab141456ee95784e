/**
 * OpenAI-shaped SSE events → chunks (OpenAI-compatible servers and Azure), with `[DONE]`, error events and
 * streams cut short handled.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import type { SseEvent } from "../../sse/parse.ts";
import { type ChatCompletionChunk, isObject } from "../../openai/types.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";
import { eventNotAnObject, parseEventJson } from "../shared/json.ts";
import { upstreamStreamError } from "../shared/upstream_error.ts";
import { needsReasoningFix, normalizeReasoning } from "./reasoning.ts";
import { isReadableMessage, withTrustedUsage } from "./response.ts";
import { ToolCallIndexes } from "./tool_call_indexes.ts";

/**
 * A chunk's choice as the client APIs read it: an object whose `delta`, when there, {@linkcode isReadableMessage}.
 * A choice with no delta (Azure's content-filter annotations) or a null one reads as an empty delta.
 */
function isReadableChoice(choice: unknown): boolean {
  if (!isObject(choice)) return false;
  return choice.delta === undefined || choice.delta === null || isReadableMessage(choice.delta);
}

/**
 * Parses one upstream SSE event into a chunk. Returns "done" for `[DONE]`, throws a `GatewayError` for an
 * error event or a malformed chunk.
 */
export function parseChunkEvent(
  provider: string,
  event: SseEvent,
  secrets: readonly string[] = [],
): ChatCompletionChunk | "done" {
  if (event.data === "[DONE]") return "done";
  const data = parseEventJson(provider, event.data);
  if (!isObject(data)) throw eventNotAnObject(provider);
  if (event.event === "error" || data.error !== undefined && data.error !== null) {
    throw upstreamStreamError(provider, data, secrets);
  }
  if (!Array.isArray(data.choices) || !data.choices.every(isReadableChoice)) {
    throw badGateway(
      `Provider "${provider}" sent a chunk without valid choices.`,
      "upstream_invalid_response",
    );
  }
  return withTrustedUsage(data) as unknown as ChatCompletionChunk;
}

/**
 * Turns upstream SSE events into chunks. A stream that ends without `[DONE]` is complete only if every choice it
 * began (`n` of them) has its finish_reason; otherwise it was cut short, and errors rather than pretending to be
 * complete (with `n > 1`, one finished choice says nothing of the others). Reasoning deltas sent as `reasoning`
 * arrive as `reasoning_content` (see `reasoning.ts`); tool call deltas without an `index` get one
 * (`tool_call_indexes.ts`).
 */
export function openAIChunkTransformer(
  provider: string,
  secrets: readonly string[] = [],
): SyncTransformer<SseEvent, ChatCompletionChunk> {
  let done = false;
  /** The choices begun and not finished, and those finished, by index. */
  const open = new Set<number>();
  const finished = new Set<number>();
  const indexes = new ToolCallIndexes();
  return {
    transform(event, controller) {
      if (done) return;
      const chunk = parseChunkEvent(provider, event, secrets);
      if (chunk === "done") {
        done = true;
        controller.terminate();
        return;
      }
      for (const choice of chunk.choices) {
        const index = typeof choice.index === "number" ? choice.index : 0;
        if (choice.finish_reason != null) {
          open.delete(index);
          finished.add(index);
        } else if (!finished.has(index)) open.add(index);
        const delta = choice.delta;
        if (isObject(delta) && needsReasoningFix(delta)) normalizeReasoning(delta);
      }
      indexes.number(chunk);
      controller.enqueue(chunk);
    },
    flush() {
      if (!done && (finished.size === 0 || open.size > 0)) {
        throw badGateway(`Provider "${provider}" ended the stream before it was complete.`);
      }
    },
  };
}
