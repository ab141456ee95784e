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

/** The first candidate of a GenerateContentResponse. */
function candidate(value: JsonObject): JsonObject | undefined {
  const first = Array.isArray(value.candidates) ? value.candidates[0] : undefined;
  return isObject(first) ? first : undefined;
}

/** The cache spec of a Gemini request whose client body is `body`. */
export function geminiCacheSpec(body: JsonObject): NativeCacheSpec {
  return {
    api: "gemini",
    body,
    ending(values): NativeEnding | undefined {
      const reason = values.map((v) => candidate(v)?.finishReason).findLast((r) => typeof r === "string");
      if (reason === undefined) return undefined;
      if (values.some((value) => callsFunction(candidate(value)))) return "tool_calls";
      return reason === "STOP" ? "complete" : "incomplete";
    },
    idOf: (first) => first.responseId,
    // Vertex AI's responses say when the request reached the server (the Gemini API's do not): a hit's is now.
    restamp(value, now) {
      if (typeof value.createTime === "string") value.createTime = new Date(now).toISOString();
      return value;
    },
  };
}
