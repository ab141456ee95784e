/**
 * What a Gemini answer passed through to a `gemini` target (lib/answer/routed.ts `NativeFacts`) tells its
 * request's trace, read only when the request is traced: its `responseId` and `modelVersion`, each candidate's
 * finish reason in the chat form's words (as the `gemini` provider reports them for a translated answer), the
 * cached content and thoughts of its `usageMetadata`, and its texts. A stream's chunks each carry the id and
 * model; the last has the finish reason and the usage, and a function call may have come in an earlier one.
 *
 * @module
 */
import type { NativeAnswerFacts, NativeFacts } from "../../answer/runner.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { answerSaid, nativeUsage } from "./native.ts";
import { geminiFinishReason } from "../../providers/finish_reasons.ts";
import { callsFunction } from "./function_calls.ts";

/**
 * A candidate's `finishReason` as the `gemini` provider reports it for a translated answer, but an unusable
 * function call (a translated answer's 502) as the conventions' `error`.
 */
function chatFinishReason(reason: string, calledFunction: boolean): string {
  const finish = geminiFinishReason(reason, calledFunction);
  return finish === "broken_call" ? "error" : finish;
}

/** The candidates of a GenerateContentResponse. */
function candidatesOf(value: JsonObject): JsonObject[] {
  return Array.isArray(value.candidates) ? value.candidates.filter(isObject) : [];
}

/**
 * The facts of Gemini answers, for one answer: a stream's reader remembers which candidates called a function
 * in an earlier chunk.
 */
export function geminiFacts(): NativeFacts {
  const called = new Set<number>();
  const facts = (value: JsonObject): NativeAnswerFacts => {
    const reasons: string[] = [];
    candidatesOf(value).forEach((candidate, at) => {
      const index = typeof candidate.index === "number" ? candidate.index : at;
      if (callsFunction(candidate)) called.add(index);
      const reason = candidate.finishReason;
      if (typeof reason === "string") reasons.push(chatFinishReason(reason, called.has(index)));
    });
    // A prompt blocked before any candidate: the translated answer's one choice filtered.
    const blocked = isObject(value.promptFeedback) && value.promptFeedback.blockReason !== undefined;
    if (reasons.length === 0 && blocked) reasons.push("content_filter");
    const usage = nativeUsage(value.usageMetadata);
    return {
      id: value.responseId,
      model: value.modelVersion,
      finishReasons: reasons,
      tokens: usage && { cachedRead: usage.cachedRead, reasoning: usage.reasoning },
    };
  };
  return { answer: (body) => ({ ...facts(body), said: answerSaid(body) }), event: facts };
}
