/**
 * How the response cache keeps a Messages answer passed through to a Claude target (lib/answer/cached_native.ts):
 * keyed on the client's body and its forwarded Anthropic headers, whole when it ended with a stop reason (a stream: with `message_stop`), and
 * replayed with a fresh `msg_…` id.
 *
 * @module
 */
import type { NativeCacheSpec, NativeEnding } from "../../answer/runner.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { anthropicFinishReason } from "../../providers/finish_reasons.ts";
import { cutOff } from "../../cache/opt_ins.ts";

/**
 * How a message with stop reason `stopReason` ended, read through the one table of Anthropic's stop reasons
 * (lib/providers/finish_reasons.ts) as the translated path reads the same answer: whole (`end_turn`,
 * `stop_sequence`), in tool calls (`tool_use`), or cut off (`cutOff`: the limits, a refusal, a paused server
 * tool's `pause_turn`, a reason unknown today). A message that holds a client tool's call (`tool_use`) calls
 * the client whatever it stopped with: one cut off by `max_tokens` in the middle of its calls is both, and
 * needs both opt-ins (lib/cache/opt_ins.ts).
 */
function endingOf(stopReason: unknown, blocks: readonly unknown[]): NativeEnding | undefined {
  if (typeof stopReason !== "string") return undefined;
  const finish = anthropicFinishReason(stopReason);
  const calls = finish === "tool_calls" ||
    blocks.some((block) => isObject(block) && block.type === "tool_use");
  return [{ calls, cut: cutOff(finish) }];
}

/** The content blocks a message stream started (`content_block_start`). */
function streamedBlocks(values: readonly JsonObject[]): unknown[] {
  return values.filter((v) => v.type === "content_block_start").map((v) => v.content_block);
}

/**
 * The cache spec of a Messages request whose client body is `body`, sent with `headers` (its `anthropic-version`
 * and `anthropic-beta`, which change the answer: a beta turns on a feature, a longer context).
 */
export function messagesCacheSpec(
  body: JsonObject,
  headers: { anthropicVersion: string | null; anthropicBeta: string | null },
): NativeCacheSpec {
  return {
    api: "messages",
    body,
    keyed: { version: headers.anthropicVersion, beta: headers.anthropicBeta },
    ending(values) {
      if (values.length === 1 && values[0].type === "message") {
        const content = values[0].content;
        return endingOf(values[0].stop_reason, Array.isArray(content) ? content : []);
      }
      if (values.at(-1)?.type !== "message_stop") return undefined;
      const delta = values.findLast((v) => v.type === "message_delta")?.delta;
      return isObject(delta) ? endingOf(delta.stop_reason, streamedBlocks(values)) : undefined;
    },
    isFinal: (event) => event.type === "message_stop",
    idOf: (first) => first.type === "message_start" && isObject(first.message) ? first.message.id : first.id,
  };
}
