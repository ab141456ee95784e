/**
 * Whether a Gemini candidate asks the client to call a function (a `functionCall` part: the only call a Gemini
 * answer hands its client; `executableCode` ran upstream), in one place: the response cache keeps such an
 * answer only under `cache_tool_calls` (cache_spec.ts), and a traced answer's finish reason is `tool_calls`
 * for it (native_facts.ts), so the two never disagree.
 *
 * @module
 */
import { isObject } from "../../openai/types.ts";

/** Whether a candidate's content holds a `functionCall` part. */
export function callsFunction(candidate: unknown): boolean {
  const content = isObject(candidate) ? candidate.content : undefined;
  const parts = isObject(content) && Array.isArray(content.parts) ? content.parts : [];
  return parts.some((part) => isObject(part) && isObject(part.functionCall));
}
