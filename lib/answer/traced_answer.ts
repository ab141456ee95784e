/**
 * What a routed chat-form answer tells its request's trace (telemetry on only): a whole completion its id,
 * model, finish reasons, usage details and (when captured) text; a stream the same as its chunks pass.
 *
 * @module
 */
import type { ChatCompletion, ChatCompletionChunk } from "../openai/types.ts";
import type { RequestTrace } from "../telemetry/request_trace.ts";
import type { Peeked } from "./stream_body.ts";
import { watchedReader } from "./watched_reader.ts";

/** What a whole completion tells its trace: its id, model, finish reasons and (when captured) its text. */
export function noteCompletion(
  trace: RequestTrace,
  completion: ChatCompletion,
  texts: (completion: ChatCompletion) => string[],
): void {
  trace.noteResponse({
    id: completion.id,
    model: completion.model,
    finishReasons: completion.choices.map((choice) => choice.finish_reason),
    usage: completion.usage,
  });
  trace.captureOutput(texts(completion));
}

/**
 * A traced request's chunk stream, telling the trace what the chunks say of the answer as they pass (its id,
 * model, finish reasons, usage details); one more read per chunk, for traced requests only.
 */
export function tracedChunks(
  trace: RequestTrace,
  stream: Peeked<ChatCompletionChunk>,
): Peeked<ChatCompletionChunk> {
  const note = (chunk: ChatCompletionChunk) => {
    const reasons = chunk.choices.map((choice) => choice.finish_reason).filter((r) =>
      r !== null && r !== undefined
    );
    trace.noteResponse({ id: chunk.id, model: chunk.model, finishReasons: reasons, usage: chunk.usage });
  };
  note(stream.first);
  const rest = watchedReader(stream.rest, { value: note });
  return { first: stream.first, rest };
}
