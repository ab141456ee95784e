/**
 * The prompt's token count an upstream reported before its answer ended (Anthropic's `message_start`), carried
 * on the chat chunk that brought it. The chat form reports usage once, in the stream's last chunk; a stream that
 * breaks before it would otherwise be recorded with the gateway's estimate of a prompt the upstream had already
 * counted. The count rides under a symbol key, so no client sees it (JSON leaves symbols out) and no chunk's
 * shape changes; the answer runner reads it off the chunks its client body hands on (lib/answer/stream_body.ts).
 *
 * @module
 */
import { isObject } from "./types.ts";

const REPORTED_PROMPT = Symbol("reportedPrompt");

/** `chunk`, carrying `prompt` as the prompt count its upstream reported. */
export function withReportedPrompt<T extends object>(chunk: T, prompt: number): T {
  Object.defineProperty(chunk, REPORTED_PROMPT, { value: prompt, enumerable: false });
  return chunk;
}

/** The prompt count a chunk (or any value of a stream) carries, if any. */
export function reportedPromptOf(value: unknown): number | undefined {
  if (!isObject(value)) return undefined;
  const prompt = (value as { [REPORTED_PROMPT]?: unknown })[REPORTED_PROMPT];
  return typeof prompt === "number" ? prompt : undefined;
}
