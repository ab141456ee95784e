/**
 * A routed answer's usage, found once for every client API: the upstream's when it reported some, else counted
 * by the gateway's tokenizer (a rough estimate if that fails) and marked estimated. Its own module so that the
 * runner and what attaches to it (the output guardrails, which settle the usage of an answer they withhold)
 * share it without importing each other.
 *
 * @module
 */
import { type ChatCompletion, type ChatRequest, isObject } from "../openai/types.ts";
import type { TokenUsage } from "../http/accounting.ts";
import { estimateInputTokens, promptTexts, roughTokenEstimate } from "../usage/estimate.ts";
import { countTexts, type StreamTexts } from "../usage/stream_texts.ts";
import { type TokenClasses, tokenClassesOf } from "../pricing/cost.ts";
import { promptClasses, type ReportedPrompt } from "../openai/reported_prompt.ts";
import { pushSaidTexts, type SaidTexts, saidTextsOf, type TextSink } from "../openai/said_fields.ts";
import { callTexts } from "../guardrails/call_texts.ts";

/** Token counts as an upstream reported them. */
export interface Reported extends TokenClasses {
  prompt: number;
  completion: number;
}

/** What the runner needs of the request, whatever its client API: how to count its prompt. */
export interface AnsweredRequest {
  /** The request's chat form (policy ran on it; the stream budget estimates its prompt from it). */
  chat: ChatRequest;
  /**
   * The prompt's tokens as this client API counts them; by default the gateway's own count of the chat form
   * (`estimateInputTokens`: its messages, tool definitions and response schema), whatever the client API.
   */
  countPrompt?: () => Promise<number>;
}

/**
 * Adds to `out` the texts of an answer's message, or of a stream's delta (as the upstream sent it: untrusted),
 * for counting its tokens: what the model said (`SAID_FIELDS`: content, reasoning, refusal) and its tool calls'
 * texts, read where the output guardrails read them (`callTexts`: a function call's arguments, a custom tool's
 * call input, a legacy `function_call`'s arguments). Each is output the model wrote; one left out would be
 * recorded, and settled against token limits and budgets, as nothing.
 */
export function pushAnswerTexts(message: unknown, out: TextSink): void {
  if (!isObject(message)) return;
  pushSaidTexts(message, out);
  for (const call of callTexts(message)) out.push(call.text);
}

/** The texts of a completion's choices, for counting its tokens ({@linkcode pushAnswerTexts}). */
export function completionTexts(completion: ChatCompletion): string[] {
  const out: string[] = [];
  for (const choice of completion.choices) pushAnswerTexts(choice.message, out);
  return out;
}

/**
 * A completion's texts as content capture shows them ({@linkcode pushAnswerTexts}, its reasoning apart from its
 * answer), as a stream of it gives them.
 */
export function completionSaid(completion: ChatCompletion): SaidTexts {
  return saidTextsOf((sink) => {
    for (const choice of completion.choices) pushAnswerTexts(choice.message, sink);
  });
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
  const [input, completion] = await Promise.all([
    prompt?.prompt ?? (request.countPrompt ?? (() => estimateInputTokens(request.chat)))()
      .catch(() => roughTokenEstimate(promptTexts(request.chat))),
    countTexts(texts),
  ]);
  // The upstream's classes stay with its prompt: its cache reads and writes are priced apart from its input.
  return { ...(prompt && promptClasses(prompt)), prompt: input, completion, estimated: true };
}
