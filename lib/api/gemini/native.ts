/**
 * A Gemini API request passed through to a `gemini` provider, and its answer passed back: pure rewriting only.
 * Upstream-bound, the client's body, normalised as the gateway read it (normalize.ts), keeps every field and
 * part it sent (thought signatures, `cachedContent`, built-in tools, safety settings) with the output limit the
 * policy set and the content rules' redactions in its texts, plain-text files and function responses; the
 * target's model goes in the URL. Client-bound, each `GenerateContentResponse` shows the alias as
 * `modelVersion`; everything else is the upstream's.
 *
 * @module
 */
import type { TokenClasses } from "../../pricing/cost.ts";
import type { ResolvedContentRule } from "../../config/types.ts";
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { readCounts } from "../../openai/usage_counts.ts";
import { pushText, type SaidTexts, saidTextsOf, type TextSink } from "../../openai/said_fields.ts";
import { redactedBody } from "../../policy/content_rules.ts";
import { geminiTexts } from "./native_texts.ts";
import { FOREIGN_CALL_SIGNATURE } from "../../providers/thought_signatures.ts";

/**
 * The body a Gemini target gets: the client's, with the policy's output limit (the token's ceiling may have
 * lowered or set `maxOutputTokens`) and the alias's redactions in every text it reads (native_texts.ts: thoughts,
 * plain-text `inlineData` and function responses too; deny rules were judged on the chat form, and on the texts
 * only a Gemini target reads), each then as the input guardrails left it (`guarded`:
 * `RequestGuardrails.nativeRewrites`), and a model turn's first function call that has no thought signature signed as
 * one another vendor made ({@linkcode signedFirstCalls}).
 */
export function nativeGeminiBody(
  client: JsonObject,
  chat: ChatRequest,
  rules: readonly ResolvedContentRule[],
  guarded?: ReadonlyMap<string, string>,
): JsonObject {
  const body: JsonObject = { ...client };
  delete body.model;
  if (Array.isArray(client.contents)) body.contents = signedFirstCalls(client.contents);
  const limit = chat.max_completion_tokens;
  const config = isObject(client.generationConfig) ? client.generationConfig : {};
  if (typeof limit === "number" && limit !== config.maxOutputTokens) {
    body.generationConfig = { ...config, maxOutputTokens: limit };
  }
  return redactedBody(body, geminiTexts, rules, guarded);
}

/**
 * `contents` with each model turn's first function call that has no thought signature given
 * {@linkcode FOREIGN_CALL_SIGNATURE}, as the translated path gives it (lib/providers/gemini/contents.ts): a Gemini
 * client's history holds such calls when a non-Gemini target answered an earlier turn of its alias (a fallback,
 * or the alias moved), since only Gemini signs its calls, and Gemini 3 refuses the current turn's unsigned call
 * with a 400. A turn that needs nothing is the client's own object, so a signed history is not copied.
 */
function signedFirstCalls(contents: readonly unknown[]): unknown[] {
  return contents.map((content) => {
    if (!isObject(content) || content.role !== "model" || !Array.isArray(content.parts)) return content;
    const at = content.parts.findIndex((part) => isObject(part) && isObject(part.functionCall));
    const first = content.parts[at];
    if (!isObject(first) || typeof first.thoughtSignature === "string") return content;
    const parts = content.parts.slice();
    parts[at] = { ...first, thoughtSignature: FOREIGN_CALL_SIGNATURE };
    return { ...content, parts };
  });
}

/** An upstream answer (or chunk) as the client's: the alias as `modelVersion`. */
export function clientAnswer(upstream: JsonObject, alias: string): JsonObject {
  return { ...upstream, modelVersion: alias };
}

/**
 * The token counts of a `usageMetadata`, thoughts counted as output; undefined without usable ones. The prompt
 * is `promptTokenCount` plus `toolUsePromptTokenCount` (the results of built-in tools such as Google Search or
 * code execution, billed as input), as the translated path counts it (lib/providers/gemini/response.ts), so the
 * same answer costs the same whichever API the client spoke.
 */
export function nativeUsage(metadata: unknown): TokenClasses | undefined {
  if (!isObject(metadata)) return undefined;
  // Gemini counts cached content within promptTokenCount; thoughts are output, counted apart as reasoning. Any
  // count that is not one makes the whole usage untrusted (the rule for every vendor): the gateway counts.
  return readCounts((count) => {
    const thoughts = count(metadata.thoughtsTokenCount, undefined);
    const cached = count(metadata.cachedContentTokenCount, undefined);
    const classes: TokenClasses = {
      prompt: count(metadata.promptTokenCount) + count(metadata.toolUsePromptTokenCount, 0),
      completion: count(metadata.candidatesTokenCount, 0) + (thoughts ?? 0),
    };
    if (cached !== undefined) classes.cachedRead = cached;
    if (thoughts !== undefined) classes.reasoning = thoughts;
    return classes;
  });
}

/**
 * The texts of an answer's parts, for counting when no usage came: what the model wrote, its text (thoughts
 * included), a function call's args and the code it wrote for code execution (`executableCode`). A
 * `codeExecutionResult` is the tool's output, not the model's.
 */
export function answerTexts(answer: JsonObject): string[] {
  const out: string[] = [];
  pushAnswerParts(answer, out);
  return out;
}

/** An answer's texts as content capture shows them: its thoughts apart from its answer, whole or streamed. */
export function answerSaid(answer: JsonObject): SaidTexts {
  return saidTextsOf((sink) => pushAnswerParts(answer, sink));
}

/**
 * Adds to `out` the texts of an answer's parts ({@linkcode answerTexts}; an answer, or one chunk of a stream): a
 * thought's (`thought: true`) as reasoning.
 */
export function pushAnswerParts(answer: JsonObject, out: TextSink): void {
  for (const candidate of Array.isArray(answer.candidates) ? answer.candidates : []) {
    const content = isObject(candidate) ? candidate.content : undefined;
    for (const part of isObject(content) && Array.isArray(content.parts) ? content.parts : []) {
      if (!isObject(part)) continue;
      if (typeof part.text === "string") pushText(out, part.text, part.thought === true);
      if (isObject(part.functionCall)) out.push(JSON.stringify(part.functionCall.args ?? {}));
      if (isObject(part.executableCode) && typeof part.executableCode.code === "string") {
        out.push(part.executableCode.code);
      }
    }
  }
}
