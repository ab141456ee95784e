/**
 * The history's reasoning as an OpenAI-compatible upstream takes it back (the provider's `reasoning_history`).
 * The chat form carries an assistant turn's reasoning as `reasoning_content`: a chat client's own, a Responses
 * `reasoning` item's text, a Messages `thinking` block's. Vendors disagree on it and no one behaviour serves
 * all: DeepSeek's thinking mode and Kimi K2 refuse a tool loop's next turn without it ("thinking is enabled but
 * reasoning_content is missing in assistant tool call message"), OpenRouter reads the same text as `reasoning`,
 * and Groq and Cerebras refuse an assistant turn that carries it ("property 'reasoning_content' is
 * unsupported"), so only the operator, who knows the upstream, can say.
 *
 * A `drop` is not named in `x-gateway-dropped`. That header tells a client what its request went without that
 * it could choose otherwise (another target, a `strict` alias); here the operator chose, once, for an upstream
 * that would refuse the request otherwise, and every request with history reasoning would carry the name.
 * Naming it would also make a `strict` alias refuse every tool loop of a thinking model through such a target,
 * the very conversations the setting exists to let through. Anthropic, Gemini and Bedrock targets go without
 * the history's reasoning unnamed alike (docs/endpoints.md).
 *
 * @module
 */
import type { ReasoningHistory } from "../../config/schema.ts";
import type { ChatMessage } from "../../openai/types.ts";

/**
 * `messages` with each assistant turn's reasoning as `mode` says: `reasoning_content` leaves them as sent (the
 * same array); `reasoning` renames `reasoning_content` to `reasoning` (a turn that already has `reasoning`, as
 * an OpenRouter client sends, keeps it, and its `reasoning_content` is not sent twice); `drop` sends neither
 * name. Only the turns it changes are copied: the request is routed to the alias's other targets unchanged.
 */
export function withReasoningHistory(messages: ChatMessage[], mode: ReasoningHistory): ChatMessage[] {
  if (mode === "reasoning_content") return messages;
  let out: ChatMessage[] | undefined;
  messages.forEach((message, i) => {
    if (message.role !== "assistant" || !("reasoning_content" in message || "reasoning" in message)) return;
    const { reasoning_content: own, reasoning, ...rest } = message;
    const text = reasoning ?? own;
    out ??= [...messages];
    // A null (a client echoing an answer that had none) is no reasoning: not sent as `reasoning: null`.
    out[i] = mode === "reasoning" && text !== undefined && text !== null
      ? { ...rest, reasoning: text }
      : rest;
  });
  return out ?? messages;
}
