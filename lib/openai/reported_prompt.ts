/**
 * The prompt's tokens an upstream reported before its answer ended (Anthropic's `message_start`, Gemini's
 * `usageMetadata`), carried on the chat chunk that brought them. The chat form reports usage once, in the
 * stream's last chunk; a stream that breaks before it would otherwise be recorded with the gateway's estimate of
 * a prompt the upstream had already counted. The prompt is carried with its classes (the cache reads and writes
 * within it): priced as uncached input, a broken stream's cache reads would cost ten times what the finished
 * stream's do. It rides under a symbol key, so no client sees it (JSON leaves symbols out) and no chunk's shape
 * changes; the answer runner reads it off the chunks its client body hands on (lib/answer/stream_body.ts).
 *
 * @module
 */
import { isObject, type Usage } from "./types.ts";
import { tokenClassesOf } from "../pricing/cost.ts";

/** A prompt's tokens by class, as lib/pricing/cost.ts prices them: the total, and the cached ones within it. */
export interface ReportedPrompt {
  prompt: number;
  cachedRead?: number;
  cacheWrite5m?: number;
  cacheWrite1h?: number;
}

const REPORTED_PROMPT = Symbol("reportedPrompt");

/** `chunk`, carrying `prompt` as the prompt its upstream reported. */
export function withReportedPrompt<T extends object>(chunk: T, prompt: ReportedPrompt): T {
  Object.defineProperty(chunk, REPORTED_PROMPT, { value: prompt, enumerable: false });
  return chunk;
}

/** The prompt a chunk (or any value of a stream) carries, if any. */
export function reportedPromptOf(value: unknown): ReportedPrompt | undefined {
  if (!isObject(value)) return undefined;
  return (value as { [REPORTED_PROMPT]?: ReportedPrompt })[REPORTED_PROMPT];
}

/**
 * The prompt's classes of `usage` (a usage's own counts, or lib/pricing/cost.ts's classes), without its output:
 * what a stream keeps of the upstream's usage when its output is counted from what the client received.
 */
export function promptClasses(usage: ReportedPrompt): ReportedPrompt {
  const out: ReportedPrompt = { prompt: usage.prompt };
  if (usage.cachedRead !== undefined) out.cachedRead = usage.cachedRead;
  if (usage.cacheWrite5m !== undefined) out.cacheWrite5m = usage.cacheWrite5m;
  if (usage.cacheWrite1h !== undefined) out.cacheWrite1h = usage.cacheWrite1h;
  return out;
}

/** The prompt's classes of a chat-form `usage` (its `prompt_tokens_details` read as lib/pricing/cost.ts does). */
export function promptOfUsage(usage: Usage): ReportedPrompt {
  return promptClasses(tokenClassesOf(usage.prompt_tokens, 0, usage));
}
