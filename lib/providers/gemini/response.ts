/**
 * Gemini `GenerateContentResponse` → OpenAI `chat.completion`, and the pieces the stream stage shares with
 * it: reading a candidate's parts, finish reasons and usage. Pure functions; an answer the gateway cannot
 * translate faithfully becomes a 502, never a silently wrong completion.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import { makeUsage, newCompletionId, newToolCallId } from "../shared/chunks.ts";
import { toolCallIdFor } from "./types.ts";
import { notAJsonObject } from "../shared/json.ts";
import { unusableOutput } from "../shared/upstream_error.ts";
import type { ChatCompletion, JsonObject, ReasoningFields, Usage } from "../../openai/types.ts";
import { isObject } from "../../openai/types.ts";
import { readCounts } from "../../openai/usage_counts.ts";
import { geminiFinishReason } from "../finish_reasons.ts";

/** An OpenAI tool call made from one Gemini `functionCall` part. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/**
 * What one candidate (or one streamed slice of it) says: thought summaries, answer text and function calls, each
 * in order.
 */
export interface CandidateParts {
  thoughts: string[];
  texts: string[];
  toolCalls: ToolCall[];
}

/**
 * Reads a candidate's parts: the text of thought summaries (`thought: true`, sent when the request asks for
 * `includeThoughts`) apart from the answer text, and each `functionCall` as a complete OpenAI tool call with a
 * generated id that carries the part's thought signature (see `toolCallIdFor`).
 */
export function readCandidateParts(
  candidate: JsonObject,
  newId: () => string = newToolCallId,
): CandidateParts {
  const out: CandidateParts = { thoughts: [], texts: [], toolCalls: [] };
  const content = isObject(candidate.content) ? candidate.content : {};
  const parts = Array.isArray(content.parts) ? content.parts : [];
  for (const part of parts) {
    if (!isObject(part)) continue;
    if (part.thought === true) {
      if (typeof part.text === "string" && part.text !== "") out.thoughts.push(part.text);
      continue;
    }
    if (typeof part.text === "string" && part.text !== "") out.texts.push(part.text);
    if (isObject(part.functionCall) && typeof part.functionCall.name === "string") {
      const args = isObject(part.functionCall.args) ? part.functionCall.args : {};
      const signature = typeof part.thoughtSignature === "string" ? part.thoughtSignature : undefined;
      out.toolCalls.push({
        id: toolCallIdFor(signature, newId),
        type: "function",
        function: { name: part.functionCall.name, arguments: JSON.stringify(args) },
      });
    }
  }
  return out;
}

/**
 * OpenAI `finish_reason` for a Gemini `finishReason`, by the one table (`geminiFinishReason`,
 * ../finish_reasons.ts):
 * - STOP → `stop`, or `tool_calls` when the candidate has function calls (Gemini reports STOP for them); no
 *   finish reason at all reads as STOP;
 * - MAX_TOKENS → `length`;
 * - MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS → thrown 502
 *   `upstream_malformed_function_call` (`unusableOutput`, which says why);
 * - every other reason (the filters, OTHER, FINISH_REASON_UNSPECIFIED, values unknown today) →
 *   `content_filter`: the candidate did not end whole.
 */
export function finishReasonFor(
  provider: string,
  reason: unknown,
  hasToolCalls: boolean,
  finishMessage?: unknown,
): string {
  const value = typeof reason === "string" ? reason : "STOP";
  const finish = geminiFinishReason(value, hasToolCalls);
  if (finish === "broken_call") throw unusableOutput(provider, "function call", value, finishMessage);
  return finish;
}

/**
 * OpenAI usage from `usageMetadata`: prompt = promptTokenCount (+ toolUsePromptTokenCount); completion =
 * candidatesTokenCount + thoughtsTokenCount (thinking is billed as output, as OpenAI's reasoning tokens are,
 * and reported as `completion_tokens_details.reasoning_tokens`); cachedContentTokenCount →
 * `prompt_tokens_details.cached_tokens`. Gemini leaves out a count that is zero (no candidates for a blocked
 * prompt), so a missing output count is 0; but without metadata or its prompt count, or with any count that is
 * not a count ({@linkcode readCounts}), there is no usage (undefined): such an answer is neither free nor priced
 * at what its counts claim, and the gateway counts its tokens itself (marked estimated).
 */
export function usageFrom(metadata: unknown): Usage | undefined {
  if (!isObject(metadata)) return undefined;
  const meta = metadata;
  const counts = readCounts((count) => ({
    prompt: count(meta.promptTokenCount) + count(meta.toolUsePromptTokenCount, 0),
    candidates: count(meta.candidatesTokenCount, 0),
    thoughts: count(meta.thoughtsTokenCount, 0),
    cached: count(meta.cachedContentTokenCount, undefined),
  }));
  if (counts === undefined) return undefined;
  const usage = makeUsage(counts.prompt, counts.candidates + counts.thoughts, counts.cached);
  if (counts.thoughts > 0) usage.completion_tokens_details = { reasoning_tokens: counts.thoughts };
  return usage;
}

/** Identity and id generators for a translated completion; injectable so tests are deterministic. */
export interface CompletionContext {
  provider: string;
  model: string;
  id?: string;
  created?: number;
  newId?: () => string;
}

/** The prompt was blocked (`promptFeedback.blockReason`) and Gemini returned no candidate at all. */
export function promptBlocked(body: JsonObject): boolean {
  const candidates = Array.isArray(body.candidates) ? body.candidates : [];
  return candidates.length === 0 && isObject(body.promptFeedback) &&
    typeof body.promptFeedback.blockReason === "string";
}

/**
 * The OpenAI completion for a Gemini response. Each candidate becomes a choice, its thought summaries in
 * `reasoning_content` (never in `content`); a blocked prompt (no
 * candidates, `promptFeedback.blockReason`) becomes one empty choice with finish_reason `content_filter`,
 * which is what OpenAI clients already handle for filtered output.
 */
export function toChatCompletion(body: unknown, ctx: CompletionContext): ChatCompletion {
  if (!isObject(body)) throw notAJsonObject(ctx.provider);
  const candidates = Array.isArray(body.candidates) ? body.candidates.filter(isObject) : [];
  const choices: JsonObject[] = candidates.map((candidate, i) => {
    const { thoughts, texts, toolCalls } = readCandidateParts(candidate, ctx.newId);
    const message: JsonObject & ReasoningFields = {
      role: "assistant",
      content: texts.length > 0 ? texts.join("") : null,
      refusal: null,
    };
    if (thoughts.length > 0) message.reasoning_content = thoughts.join("");
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    return {
      index: typeof candidate.index === "number" ? candidate.index : i,
      message,
      logprobs: null,
      finish_reason: finishReasonFor(
        ctx.provider,
        candidate.finishReason,
        toolCalls.length > 0,
        candidate.finishMessage,
      ),
    };
  });
  if (choices.length === 0) {
    if (!promptBlocked(body)) {
      throw badGateway(`Provider "${ctx.provider}" returned no candidates.`, "upstream_invalid_response");
    }
    choices.push({
      index: 0,
      message: { role: "assistant", content: null, refusal: null },
      logprobs: null,
      finish_reason: "content_filter",
    });
  }
  const completion: ChatCompletion = {
    id: ctx.id ?? newCompletionId(),
    object: "chat.completion",
    created: ctx.created ?? Math.floor(Date.now() / 1000),
    model: ctx.model,
    choices,
  };
  const usage = usageFrom(body.usageMetadata);
  if (usage !== undefined) completion.usage = usage;
  return completion;
}
