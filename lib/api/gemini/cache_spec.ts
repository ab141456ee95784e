/**
 * How the response cache keeps a Gemini answer passed through to a Gemini target (lib/answer/cached_native.ts):
 * keyed on the client's body, whole when its candidate has a finish reason (a stream: its last chunk with one),
 * and replayed with a fresh `responseId` (and a `createTime`, where the upstream wrote one, of the hit's time).
 *
 * @module
 */
import type { NativeCacheSpec, NativeEnding } from "../../answer/runner.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { callsFunction } from "./function_calls.ts";
import { geminiFinishReason } from "../../providers/finish_reasons.ts";
import { type ChoiceEnding, cutOff } from "../../cache/opt_ins.ts";

/** The candidates of a GenerateContentResponse (or of one chunk of its stream). */
function candidates(value: JsonObject): JsonObject[] {
  return Array.isArray(value.candidates) ? value.candidates.filter(isObject) : [];
}

/**
 * How each candidate ended, in the order of their `index`: whether it called a function in any chunk, and
 * whether its last finish reason cut it off, read through the one table of Gemini's finish reasons
 * (lib/providers/finish_reasons.ts) as the translated path reads the same answer (`cutOff`: every reason but
 * `STOP`, so MAX_TOKENS, a filter, OTHER, an unusable call, …). Undefined while a candidate has no finish
 * reason yet (a stream without its last chunk). Several candidates need `cache_n`, as a chat answer's several
 * choices do (lib/cache/opt_ins.ts).
 */
function endingOf(values: readonly JsonObject[]): NativeEnding | undefined {
  const seen = new Map<number, { reason?: string; calls: boolean }>();
  for (const value of values) {
    for (const [position, candidate] of candidates(value).entries()) {
      const index = typeof candidate.index === "number" ? candidate.index : position;
      const known = seen.get(index) ?? { calls: false };
      if (typeof candidate.finishReason === "string") known.reason = candidate.finishReason;
      known.calls ||= callsFunction(candidate);
      seen.set(index, known);
    }
  }
  const ended = [...seen.entries()].sort(([a], [b]) => a - b).map(([, candidate]) => candidate);
  const endings: ChoiceEnding[] = [];
  for (const { reason, calls } of ended) {
    if (reason === undefined) return undefined;
    endings.push({ calls, cut: cutOff(geminiFinishReason(reason, calls)) });
  }
  return endings.length === 0 ? undefined : endings;
}

/** The cache spec of a Gemini request whose client body is `body`. */
export function geminiCacheSpec(body: JsonObject): NativeCacheSpec {
  return {
    api: "gemini",
    body,
    ending: endingOf,
    idOf: (first) => first.responseId,
    // Vertex AI's responses say when the request reached the server (the Gemini API's do not): a hit's is now.
    restamp(value, now) {
      if (typeof value.createTime === "string") value.createTime = new Date(now).toISOString();
      return value;
    },
  };
}
