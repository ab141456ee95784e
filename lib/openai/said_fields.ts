/**
 * Where the chat form keeps what the model says in text, besides its tool calls: one list for every reader of
 * an answer's words (its own token count when the upstream reports no usage, the output guardrails, content
 * capture, which keeps the reasoning apart from the answer). And the two requests that make an answer say its
 * words again where none of those readers looks (log probabilities, speech: {@linkcode asksLogprobs},
 * {@linkcode asksAudio}), for the readers that must know.
 *
 * @module
 */
import type { JsonObject } from "./types.ts";

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
 * Where an answer's texts are added: a plain list (a count, a guardrail check) gets every text through `push`;
 * a sink that keeps the reasoning apart gets it through `pushReasoning` — a stream's texts
 * (lib/usage/stream_texts.ts), for a stream budget that weighs reasoning at a rate of its own and for content
 * capture, and a whole answer's {@linkcode saidTextsOf}, for content capture. The one place a reader of an
 * answer says which of its texts are reasoning.
 */
export interface TextSink {
  push(text: string): void;
  pushReasoning?(text: string): void;
}

/** Adds `text` to `out`, as reasoning when it is and `out` keeps reasoning apart. */
export function pushText(out: TextSink, text: string, reasoning: boolean): void {
  if (reasoning && out.pushReasoning) out.pushReasoning(text);
  else out.push(text);
}

/**
 * An answer's texts as content capture shows them (`gen_ai.output.messages`): the answer (`text`: content,
 * refusal, tool calls' texts) and, apart, the reasoning the model wrote before it, each in the order written.
 * Glued together they would read as one answer that starts with the model's thinking.
 */
export interface SaidTexts {
  readonly text: readonly string[];
  readonly reasoning: readonly string[];
}

/** The {@linkcode SaidTexts} a reader `walk` finds in a whole answer, given a sink that keeps the two apart. */
export function saidTextsOf(walk: (sink: TextSink) => void): SaidTexts {
  const text: string[] = [];
  const reasoning: string[] = [];
  walk({ push: (piece) => text.push(piece), pushReasoning: (piece) => reasoning.push(piece) });
  return { text, reasoning };
}

/**
 * Adds to `out` each non-empty text `fields` (a message or a delta, as an upstream sent it: untrusted) says in
 * one of {@linkcode SAID_FIELDS}, in the list's order; `reasoning_content` as reasoning.
 */
export function pushSaidTexts(fields: unknown, out: TextSink): void {
  if (typeof fields !== "object" || fields === null) return;
  const said = fields as Partial<Record<SaidField, unknown>>;
  for (const field of SAID_FIELDS) {
    const text = said[field];
    if (typeof text === "string" && text !== "") pushText(out, text, field === "reasoning_content");
  }
}

/**
 * Whether a chat-form request asks for token log probabilities (`logprobs: true`, or `top_logprobs` above 0,
 * which OpenAI takes only with it). The answer then says its words a second time, token by token, in
 * `choices[].logprobs` (each token's text, its UTF-8 `bytes`, and as many likely alternatives), which no
 * reader of {@linkcode SAID_FIELDS} reads: the output guardrails keep a request they check from asking
 * (lib/guardrails/unread_output.ts), and the response cache, which keeps none, answers it fresh.
 */
export function asksLogprobs(
  chat: JsonObject,
): boolean {
  return chat.logprobs === true || (typeof chat.top_logprobs === "number" && chat.top_logprobs > 0);
}

/**
 * The parameter by which a chat-form request asks for spoken output, or null when it asks for none:
 * `modalities` holding `"audio"`, else `audio` settings (a voice and format; OpenAI takes them only with that
 * modality, so a request that sends them expects speech). The answer then says its words as sound
 * (`message.audio.data`) and as its `transcript`, neither of which a reader of {@linkcode SAID_FIELDS} reads:
 * the output guardrails refuse such a request they would check (lib/guardrails/unread_output.ts), and the
 * response cache, which keeps no audio, answers it fresh. A `null` is no setting (as the request's validation
 * takes it).
 */
export function asksAudio(chat: JsonObject): "modalities" | "audio" | null {
  const modalities = chat.modalities;
  if (modalities === "audio" || (Array.isArray(modalities) && modalities.includes("audio"))) {
    return "modalities";
  }
  return chat.audio !== undefined && chat.audio !== null ? "audio" : null;
}
