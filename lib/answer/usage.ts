/**
 * A routed answer's usage, found once for every client API: the upstream's when it reported some, else counted
 * by the gateway's tokenizer (a rough estimate if that fails) and marked estimated. Its own module so that the
 * runner and what attaches to it (the output guardrails, which settle the usage of an answer they withhold)
 * share it without importing each other.
 *
 * @module
 */
import type { ChatCompletion, ChatRequest } from "../openai/types.ts";
import type { TokenUsage } from "../http/accounting.ts";
import { countTokens, requestTexts, roughTokenEstimate } from "../usage/estimate.ts";
import { countTexts, type StreamTexts } from "../usage/stream_texts.ts";
import { type TokenClasses, tokenClassesOf } from "../pricing/cost.ts";
import { promptClasses, type ReportedPrompt } from "../openai/reported_prompt.ts";
import { pushSaidTexts } from "../openai/said_fields.ts";

/** Token counts as an upstream reported them. */
export interface Reported extends TokenClasses {
  prompt: number;
  completion: number;
}

/** What the runner needs of the request, whatever its client API: how to count its prompt. */
export interface AnsweredRequest {
  /** The request's chat form (policy ran on it; the stream budget estimates its prompt from it). */
  chat: ChatRequest;
  /** The prompt's tokens as this client API counts them; by default the chat form's texts. */
  countPrompt?: () => Promise<number>;
}

/** A tool call as an answer (a message, or a stream's delta) carries it, read for counting its tokens. */
export type AnsweredCall = { function?: { arguments?: unknown }; custom?: { input?: unknown } };

/**
 * The text a tool call adds to the answer: a function call's arguments, or a custom (freeform) tool's call
 * input, the raw text the model wrote in their place (it is output tokens as arguments are).
 */
export function callText(call: AnsweredCall | null | undefined): string | undefined {
  const text = call?.function?.arguments ?? call?.custom?.input;
  return typeof text === "string" ? text : undefined;
}

/**
 * The texts of a completion's choices, for counting its tokens: what the model said (content, reasoning,
 * refusal: `SAID_FIELDS`) and its tool calls' arguments or input.
 */
export function completionTexts(completion: ChatCompletion): string[] {
  const out: string[] = [];
  for (const choice of completion.choices) {
    const message = choice.message as { tool_calls?: AnsweredCall[] } | undefined;
    pushSaidTexts(message, out);
    for (const call of message?.tool_calls ?? []) {
      const text = callText(call);
      if (text !== undefined) out.push(text);
    }
  }
  return out;
}

/** A chat completion's reported usage in the runner's terms. */
export function completionReported(completion: ChatCompletion): Reported | undefined {
  const usage = completion.usage;
  return usage ? tokenClassesOf(usage.prompt_tokens, usage.completion_tokens, usage) : undefined;
}

/**
 * Usage from what is known: `reported` when the upstream gave it, else the prompt (`prompt` when the upstream
 * reported it on the way, with its cache reads and writes; counted as the request says otherwise) and the
 * `texts` the client received, each falling back to the rough estimate if the tokenizer fails.
 */
export async function usageOf(
  reported: Reported | undefined,
  request: AnsweredRequest,
  texts: readonly string[] | StreamTexts,
  prompt?: ReportedPrompt,
): Promise<TokenUsage> {
  if (reported) return { ...reported, estimated: false };
  const chatTexts = () => requestTexts(request.chat);
  const [input, completion] = await Promise.all([
    prompt?.prompt ?? (request.countPrompt ?? (() => countTokens(chatTexts())))()
      .catch(() => roughTokenEstimate(chatTexts())),
    countTexts(texts),
  ]);
  // The upstream's classes stay with its prompt: its cache reads and writes are priced apart from its input.
  return { ...(prompt && promptClasses(prompt)), prompt: input, completion, estimated: true };
}
