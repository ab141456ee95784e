/**
 * Where the chat form keeps what the model says in text, besides its tool calls: one list for every reader of
 * an answer's words (its own token count when the upstream reports no usage, the output guardrails).
 *
 * @module
 */

/**
 * The fields of a chat message, and of a stream's delta, that carry what the model says in text: its content,
 * its reasoning (`reasoning_content`: DeepSeek's and vLLM's, and every translated vendor's thinking) and its
 * refusal. Each is output the model wrote (reasoning tokens are billed as output) and each reaches the client
 * in every client API (reasoning as Responses' summaries, Anthropic's thinking, Gemini's thoughts).
 */
export const SAID_FIELDS = ["content", "reasoning_content", "refusal"] as const;

/** One of {@linkcode SAID_FIELDS}. */
export type SaidField = typeof SAID_FIELDS[number];

/**
 * Adds to `out` each non-empty text `fields` (a message or a delta, as an upstream sent it: untrusted) says in
 * one of {@linkcode SAID_FIELDS}, in the list's order.
 */
export function pushSaidTexts(fields: unknown, out: { push(text: string): void }): void {
  if (typeof fields !== "object" || fields === null) return;
  const said = fields as Partial<Record<SaidField, unknown>>;
  for (const field of SAID_FIELDS) {
    const text = said[field];
    if (typeof text === "string" && text !== "") out.push(text);
  }
}
