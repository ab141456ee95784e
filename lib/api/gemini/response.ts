/**
 * The chat form's answers as Gemini API answers (`GenerateContentResponse`): a whole completion, and a stream
 * of chunks as Google sends them (each chunk a `GenerateContentResponse` with the parts that arrived, the last
 * with `finishReason` and `usageMetadata`). `modelVersion` is the alias; `responseId` the gateway's. A call's
 * arguments arrive in pieces in the chat form; Google sends each `functionCall` whole, so a stream holds a
 * call until its arguments are complete (the next call, or the end). A refusal (an OpenAI model's
 * `message.refusal`, a structured output it declined) is a text part and finishes with `SAFETY`, Google's
 * reason for an answer its safety stopped, as the Messages API answers it with `stop_reason: "refusal"`.
 *
 * @module
 */
import type { ChatCompletion, ChatCompletionChunk, JsonObject, Usage } from "../../openai/types.ts";
import { isObject } from "../../openai/types.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";

/** Google's `finishReason` for a chat `finish_reason`. */
export function finishReason(reason: unknown): string {
  if (reason === "length") return "MAX_TOKENS";
  if (reason === "content_filter") return "SAFETY";
  return "STOP";
}

/** Google's `usageMetadata` of a chat usage. */
export function usageMetadata(usage: Usage): JsonObject {
  const details = usage.prompt_tokens_details as { cached_tokens?: unknown } | undefined | null;
  const reasoning = (usage.completion_tokens_details as { reasoning_tokens?: unknown } | undefined | null)
    ?.reasoning_tokens;
  // The chat form's completion count includes its reasoning; Google counts thoughts beside the candidates.
  const thoughts = typeof reasoning === "number" && reasoning > 0
    ? Math.min(reasoning, usage.completion_tokens)
    : 0;
  const out: JsonObject = {
    promptTokenCount: usage.prompt_tokens,
    candidatesTokenCount: usage.completion_tokens - thoughts,
    totalTokenCount: usage.total_tokens ?? usage.prompt_tokens + usage.completion_tokens,
  };
  if (thoughts > 0) out.thoughtsTokenCount = thoughts;
  if (typeof details?.cached_tokens === "number" && details.cached_tokens > 0) {
    out.cachedContentTokenCount = details.cached_tokens;
  }
  return out;
}

/** A `functionCall` part of a chat tool call (arguments parsed; unparsable ones kept as a string). */
function callPart(call: { id?: unknown; function?: { name?: unknown; arguments?: unknown } }): JsonObject {
  let args: unknown = {};
  const raw = call.function?.arguments;
  if (typeof raw === "string" && raw !== "") {
    try {
      args = JSON.parse(raw);
    } catch {
      args = { arguments: raw };
    }
  }
  const functionCall: JsonObject = { name: String(call.function?.name ?? ""), args };
  if (typeof call.id === "string") functionCall.id = call.id;
  return { functionCall };
}

/** What frames every answer of one request. */
export interface GeminiFrame {
  alias: string;
  responseId: string;
  /**
   * `thinkingConfig.includeThoughts`: Google returns the model's thoughts only when asked, so a translated
   * answer's reasoning is shown as thought parts only then (its tokens are counted either way).
   */
  thoughts?: boolean;
}

function responseOf(frame: GeminiFrame, candidate: JsonObject, usage?: JsonObject): JsonObject {
  const out: JsonObject = {
    candidates: [candidate],
    modelVersion: frame.alias,
    responseId: frame.responseId,
  };
  if (usage !== undefined) out.usageMetadata = usage;
  return out;
}

/** A completion's refusal text, when its model refused (OpenAI's `message.refusal`). */
export function refusalOf(completion: ChatCompletion): string | undefined {
  const message = (completion.choices[0] as JsonObject | undefined)?.message;
  const refusal = isObject(message) ? message.refusal : undefined;
  return typeof refusal === "string" && refusal !== "" ? refusal : undefined;
}

/** A whole completion as a `GenerateContentResponse`. */
export function completionToGemini(completion: ChatCompletion, frame: GeminiFrame, usage: Usage): JsonObject {
  const choice = (completion.choices[0] ?? {}) as JsonObject;
  const message = (isObject(choice.message) ? choice.message : {}) as JsonObject;
  const parts: JsonObject[] = [];
  if (frame.thoughts && typeof message.reasoning_content === "string" && message.reasoning_content !== "") {
    parts.push({ text: message.reasoning_content, thought: true });
  }
  if (typeof message.content === "string" && message.content !== "") parts.push({ text: message.content });
  const refusal = refusalOf(completion);
  if (refusal !== undefined) parts.push({ text: refusal });
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
    if (isObject(call)) parts.push(callPart(call));
  }
  return responseOf(frame, {
    content: { role: "model", parts },
    finishReason: finishReason(refusal !== undefined ? "content_filter" : choice.finish_reason),
    index: 0,
  }, usageMetadata(usage));
}

/** Translates a chat chunk stream into Gemini chunks, one call at a time. */
export class GeminiChunks {
  /** Calls whose arguments are still arriving, by their chat index. */
  #calls = new Map<number, { id?: string; name: string; arguments: string }>();
  #finish: unknown = null;
  /** Whether the model refused: the answer finishes with `SAFETY` whatever its finish reason. */
  #refused = false;
  usage: Usage | undefined;
  /** What the client received, to count tokens when no usage came. */
  readonly texts = new StreamTexts();

  constructor(private readonly frame: GeminiFrame) {}

  #chunk(parts: JsonObject[]): JsonObject {
    return responseOf(this.frame, { content: { role: "model", parts }, index: 0 });
  }

  /** The Gemini chunks of one chat chunk (none when it carries nothing to show yet). */
  chunk(chunk: ChatCompletionChunk): JsonObject[] {
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices[0] as JsonObject | undefined;
    if (choice === undefined) return [];
    if (choice.finish_reason != null) this.#finish = choice.finish_reason;
    const delta = (choice.delta ?? {}) as JsonObject;
    const parts: JsonObject[] = [];
    if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") {
      this.texts.pushReasoning(delta.reasoning_content);
      if (this.frame.thoughts) parts.push({ text: delta.reasoning_content, thought: true });
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      this.texts.push(delta.content);
      parts.push({ text: delta.content });
    }
    if (typeof delta.refusal === "string" && delta.refusal !== "") {
      this.texts.push(delta.refusal);
      parts.push({ text: delta.refusal });
      this.#refused = true;
    }
    for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls as JsonObject[] : []) {
      const index = typeof call.index === "number" ? call.index : 0;
      const fn = (call.function ?? {}) as { name?: unknown; arguments?: unknown };
      let open = this.#calls.get(index);
      if (open === undefined) {
        // A new call: the ones before it are complete.
        parts.push(...this.#flush());
        open = { id: typeof call.id === "string" ? call.id : undefined, name: "", arguments: "" };
        this.#calls.set(index, open);
      }
      if (typeof fn.name === "string") open.name += fn.name;
      if (typeof fn.arguments === "string") {
        open.arguments += fn.arguments;
        this.texts.push(fn.arguments);
      }
    }
    return parts.length > 0 ? [this.#chunk(parts)] : [];
  }

  /** The complete calls held, as `functionCall` parts. */
  #flush(): JsonObject[] {
    const parts = [...this.#calls.values()].map((c) => callPart({ id: c.id, function: c }));
    this.#calls.clear();
    return parts;
  }

  /** The last chunk: the calls held, `finishReason` and `usageMetadata`. */
  finish(usage: Usage): JsonObject {
    const calls = this.#flush();
    return responseOf(this.frame, {
      // As Google ends a stream: an empty text part when nothing else is left to send.
      content: { role: "model", parts: calls.length > 0 ? calls : [{ text: "" }] },
      finishReason: finishReason(this.#refused ? "content_filter" : this.#finish),
      index: 0,
    }, usageMetadata(usage));
  }
}
