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

/**
 * How a stop reason ended the answer: in tool calls (`tool_use`, read through the one table of Anthropic's stop
 * reasons, lib/providers/finish_reasons.ts, as a traced answer's finish reason is), a cut (length, refusal, a
 * paused server tool), or whole.
 */
function endingOf(stopReason: unknown): NativeEnding | undefined {
  if (stopReason === "end_turn" || stopReason === "stop_sequence") return "complete";
  if (typeof stopReason !== "string") return undefined;
  return anthropicFinishReason(stopReason) === "tool_calls" ? "tool_calls" : "incomplete";
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
      if (values.length === 1 && values[0].type === "message") return endingOf(values[0].stop_reason);
      if (values.at(-1)?.type !== "message_stop") return undefined;
      const delta = values.findLast((v) => v.type === "message_delta")?.delta;
      return isObject(delta) ? endingOf(delta.stop_reason) : undefined;
    },
    isFinal: (event) => event.type === "message_stop",
    idOf: (first) => first.type === "message_start" && isObject(first.message) ? first.message.id : first.id,
  };
}
