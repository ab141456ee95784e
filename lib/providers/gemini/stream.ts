/**
 * Gemini `streamGenerateContent?alt=sse` events → OpenAI `chat.completion.chunk`s, as a stream stage placed
 * after `sseParseTransformer`, so byte boundaries are already handled and cancellation flows upstream.
 *
 * Gemini sends whole `GenerateContentResponse` objects, each with the next slice of text or complete
 * function calls, the `finishReason` on the last one, and no `[DONE]`. The stage emits what OpenAI clients,
 * including openai-node's strict `ChatCompletionStream`, require: a first chunk with `role: "assistant"`,
 * thought summaries as `reasoning_content` deltas (before the answer text of the same event), content deltas, each function call as one complete tool-call delta (id, type, name, arguments) indexed per
 * response, exactly one finish chunk, and last one usage-only chunk when the stream's `usageMetadata` has usable
 * counts (none: the gateway counts the tokens itself, as for an OpenAI stream without usage).
 *
 * Gemini counts the prompt in every event's `usageMetadata`, long before the end: the first chunk emitted after
 * a usable prompt count (and after any change to it) carries that prompt with its cached content
 * (lib/openai/reported_prompt.ts), so a stream that breaks before its usage-only chunk is recorded with it.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import type { SseEvent } from "../../sse/parse.ts";
import {
  type ChunkIdentity,
  makeChunk,
  makeUsageChunk,
  newCompletionId,
  newToolCallId,
} from "../shared/chunks.ts";
import { geminiStreamError } from "./error.ts";
import { finishReasonFor, promptBlocked, readCandidateParts, usageFrom } from "./response.ts";
import { eventNotAnObject, parseEventJson } from "../shared/json.ts";
import { type ChatCompletionChunk, isObject, type JsonObject } from "../../openai/types.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";
import { promptOfUsage, type ReportedPrompt, withReportedPrompt } from "../../openai/reported_prompt.ts";

/** Options for {@linkcode geminiChunkTransformer}; the identity and id generator are injectable for tests. */
export interface GeminiStreamOptions {
  provider: string;
  model: string;
  /** Scrubbed from upstream error messages (the API key). */
  secrets?: readonly string[];
  identity?: ChunkIdentity;
  newId?: () => string;
}

/**
 * Translates parsed Gemini SSE events into OpenAI chunks. Errors the stream with a `GatewayError` when the
 * upstream sends an error event, an event that is not a JSON object, an unusable function call, or ends
 * without any `finishReason` (a truncated answer must not pass for a complete one).
 */
export function geminiChunkTransformer(
  options: GeminiStreamOptions,
): SyncTransformer<SseEvent, ChatCompletionChunk> {
  const { provider, secrets = [], newId = newToolCallId } = options;
  const identity: ChunkIdentity = options.identity ??
    { id: newCompletionId(), created: Math.floor(Date.now() / 1000), model: options.model };
  let started = false;
  let toolIndex = 0;
  let finishReason: string | null = null;
  let usageMetadata: unknown = undefined;
  // The prompt counts last read from usageMetadata: Gemini repeats them in every event, so they are read into a
  // prompt only when they change (once in a stream, as a rule).
  let seen: PromptCounts | undefined;
  // A prompt not yet carried on a chunk: the next chunk emitted carries it.
  let due: ReportedPrompt | undefined;
  const enqueue = (
    controller: TransformStreamDefaultController<ChatCompletionChunk>,
    chunk: ChatCompletionChunk,
  ) => {
    if (due !== undefined) {
      withReportedPrompt(chunk, due);
      due = undefined;
    }
    controller.enqueue(chunk);
  };

  return {
    transform(event, controller) {
      let data = parseEventJson(provider, event.data);
      if (Array.isArray(data) && data.length === 1) data = data[0];
      if (!isObject(data)) throw eventNotAnObject(provider);
      if (data.error !== undefined && data.error !== null) throw geminiStreamError(provider, data, secrets);
      if (data.usageMetadata !== undefined) {
        const metadata = usageMetadata = data.usageMetadata;
        if (isObject(metadata) && !samePromptCounts(seen, metadata)) {
          // Counts that are not counts carry nothing (the usage at the end is as untrusted): the prompt carried
          // before, if any, stands, else the gateway counts it.
          const usage = usageFrom(metadata);
          if (usage !== undefined) {
            seen = [
              metadata.promptTokenCount,
              metadata.toolUsePromptTokenCount,
              metadata.cachedContentTokenCount,
            ];
            due = promptOfUsage(usage);
          }
        }
      }
      if (!started) {
        started = true;
        enqueue(controller, makeChunk(identity, { role: "assistant", content: "" }));
      }
      if (promptBlocked(data)) {
        finishReason ??= "content_filter";
        return;
      }
      const candidates = Array.isArray(data.candidates) ? data.candidates.filter(isObject) : [];
      const candidate: JsonObject | undefined = candidates[0];
      if (candidate === undefined) return;
      const { thoughts, texts, toolCalls } = readCandidateParts(candidate, newId);
      for (const thought of thoughts) {
        enqueue(controller, makeChunk(identity, { reasoning_content: thought }));
      }
      for (const text of texts) enqueue(controller, makeChunk(identity, { content: text }));
      for (const call of toolCalls) {
        enqueue(controller, makeChunk(identity, { tool_calls: [{ index: toolIndex++, ...call }] }));
      }
      if (candidate.finishReason !== undefined && candidate.finishReason !== null) {
        finishReason = finishReasonFor(
          provider,
          candidate.finishReason,
          toolIndex > 0,
          candidate.finishMessage,
        );
      }
    },
    flush(controller) {
      if (finishReason === null) {
        throw badGateway(`Provider "${provider}" ended the stream before it was complete.`);
      }
      // A finishReason seen before a later function call still has to say tool_calls.
      if (finishReason === "stop" && toolIndex > 0) finishReason = "tool_calls";
      enqueue(controller, makeChunk(identity, {}, finishReason));
      const usage = usageFrom(usageMetadata);
      if (usage !== undefined) controller.enqueue(makeUsageChunk(identity, usage));
    },
  };
}

/** The fields of `usageMetadata` that make up the prompt's count and its cached part, as they came. */
type PromptCounts = readonly [unknown, unknown, unknown];

/** Whether `metadata` counts the prompt as `seen` did (three comparisons per event, nothing allocated). */
function samePromptCounts(seen: PromptCounts | undefined, metadata: JsonObject): boolean {
  return seen !== undefined && seen[0] === metadata.promptTokenCount &&
    seen[1] === metadata.toolUsePromptTokenCount && seen[2] === metadata.cachedContentTokenCount;
}

/**
 * Upstream SSE events → the upstream's own `GenerateContentResponse` chunks, for a request passed through
 * natively: each event's JSON object as it came; an `{"error":…}` event throws the upstream's error (scrubbed),
 * and a stream that ends without any `finishReason` was cut short and errors rather than ending cleanly.
 */
export function geminiPassthroughTransformer(
  provider: string,
  secrets: readonly string[] = [],
): SyncTransformer<SseEvent, JsonObject> {
  let finished = false;
  return {
    transform(event, controller) {
      let data = parseEventJson(provider, event.data);
      if (Array.isArray(data) && data.length === 1) data = data[0];
      if (!isObject(data)) throw eventNotAnObject(provider);
      if (data.error !== undefined && data.error !== null) throw geminiStreamError(provider, data, secrets);
      const candidates = Array.isArray(data.candidates) ? data.candidates.filter(isObject) : [];
      if (candidates.some((c) => c.finishReason != null) || promptBlocked(data)) finished = true;
      controller.enqueue(data);
    },
    flush() {
      if (!finished) throw badGateway(`Provider "${provider}" ended the stream before it was complete.`);
    },
  };
}
