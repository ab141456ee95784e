/**
 * What a Messages answer passed through from a native target (lib/answer/routed.ts `NativeFacts`) tells its
 * request's trace, read only when the request is traced: the Message's id and model, its stop reason in the chat
 * form's words (as the translated path reports the same answer), the cache reads of its usage, and its texts.
 * A stream says the same in `message_start` (id, model, usage) and `message_delta` (stop reason, usage).
 *
 * @module
 */
import type { NativeAnswerFacts, NativeFacts } from "../../answer/runner.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { messageSaid } from "./native.ts";
import { anthropicFinishReason } from "../../providers/finish_reasons.ts";

/** The finish reasons a stop reason gives, none when there is none yet. */
function reasons(stopReason: unknown): string[] | undefined {
  return typeof stopReason === "string" ? [anthropicFinishReason(stopReason)] : undefined;
}

/** The cache reads of a `usage` object (the chat form's cached input), when it reports them. */
function tokens(usage: unknown): NativeAnswerFacts["tokens"] {
  const read = isObject(usage) ? usage.cache_read_input_tokens : undefined;
  return typeof read === "number" ? { cachedRead: read } : undefined;
}

/** What a Message (whole, or in `message_start`) says of itself. */
function messageFacts(message: JsonObject): NativeAnswerFacts {
  return {
    id: message.id,
    model: message.model,
    finishReasons: reasons(message.stop_reason),
    tokens: tokens(message.usage),
  };
}

/** The facts of Messages answers. */
export const MESSAGES_FACTS: NativeFacts = {
  answer: (body) => ({ ...messageFacts(body), said: messageSaid(body) }),
  event(event) {
    if (event.type === "message_start" && isObject(event.message)) return messageFacts(event.message);
    if (event.type !== "message_delta") return undefined;
    return {
      finishReasons: reasons(isObject(event.delta) ? event.delta.stop_reason : undefined),
      tokens: tokens(event.usage),
    };
  },
};
