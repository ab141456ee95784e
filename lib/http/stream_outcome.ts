/**
 * A streamed answer's outcome once its body ended, the same for every streaming endpoint (chat completions,
 * translated and native Responses): why it ended badly, and its usage, the upstream's when it reported some,
 * else counted from what was sent and received, so every stream leaves one usage record with tokens in it.
 *
 * @module
 */
import type { ChatRequest } from "../openai/types.ts";
import { streamErrorCode } from "../streams/budget_guard.ts";
import type { StreamOutcome } from "../streams/client_body.ts";
import { countTokens, requestTexts, roughTokenEstimate } from "../usage/estimate.ts";
import type { Outcome, TokenUsage } from "./accounting.ts";

/**
 * What every stream's outcome holds however its usage is found: why it ended badly (its error's code, or
 * `client_closed_request` when the client went away) and its time to first chunk.
 */
export function streamEnding(end: StreamOutcome): Pick<Outcome, "ttftMs" | "errorCode"> {
  const errorCode = end.end === "error"
    ? streamErrorCode(end.error)
    : end.end === "cancelled"
    ? "client_closed_request"
    : undefined;
  return { ttftMs: end.firstChunkAt, errorCode };
}

/**
 * Settles the outcome of a stream that ended as `end` says: its error code (`client_closed_request` when the
 * client went away) and time to first chunk, with `usage` when the handler knows it (the upstream's, or what
 * it counted already for a final event); without it, the tokens of `chat` and of the texts the client
 * received, or a rough estimate of them when the tokenizer fails. Settles at once when nothing needs counting.
 */
export function settleStream(
  end: StreamOutcome,
  usage: TokenUsage | undefined,
  chat: ChatRequest,
  settle: (outcome: Outcome) => void,
): void {
  const known = streamEnding(end);
  if (usage) {
    settle({ ...known, usage });
    return;
  }
  // No usage from the upstream (or the stream broke before it came): count what was sent and received.
  Promise.all([countTokens(requestTexts(chat)), countTokens(end.texts)])
    .then(([prompt, completion]) => ({ prompt, completion, estimated: true }))
    .catch(() => ({
      prompt: roughTokenEstimate(requestTexts(chat)),
      completion: roughTokenEstimate(end.texts),
      estimated: true,
    }))
    .then((usage) => settle({ ...known, usage }));
}
