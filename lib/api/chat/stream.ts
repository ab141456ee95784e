/**
 * Turns a provider's chunk stream into the SSE body the client reads: alias as model, usage kept or removed,
 * one `data:` event per chunk the moment it arrives, and the right ending ([DONE] or an error event).
 *
 * @module
 */
import type { ChatCompletionChunk, Usage } from "../../openai/types.ts";
import { doneEvent, encodeJsonEvent } from "../../sse/serialize.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";
import { pushAnswerTexts } from "../../answer/usage.ts";
import {
  clientStreamBody,
  eachValue,
  type Peeked,
  type StreamEnding,
  type StreamOutcome,
} from "../../answer/stream_body.ts";

/** What the stream learnt by the time it ended, for the access log and usage records. */
export interface ChatStreamOutcome extends StreamOutcome {
  usage?: Usage;
  chunks: number;
}

/** Keeps a chunk's texts to count: what the model said and its tool calls' texts (`pushAnswerTexts`). */
function collectTexts(chunk: ChatCompletionChunk, into: StreamTexts) {
  for (const choice of chunk.choices) pushAnswerTexts(choice.delta, into);
}

/**
 * Presents one upstream chunk as the client expects it: `model` is the alias the client sent, and the usage the
 * gateway asked for on its own behalf is noted and then removed unless the client asked for it too. Returns
 * false for a chunk that is dropped (the usage-only chunk the client did not ask for).
 */
export function presentChunk(
  chunk: ChatCompletionChunk,
  alias: string,
  includeUsage: boolean,
  outcome: ChatStreamOutcome,
): boolean {
  if (chunk.usage) outcome.usage = chunk.usage;
  else if (outcome.usage === undefined) collectTexts(chunk, outcome.texts);
  if (!includeUsage) {
    if (chunk.usage && chunk.choices.length === 0) return false;
    delete chunk.usage;
  }
  chunk.model = alias;
  outcome.chunks++;
  return true;
}

/**
 * The client-facing SSE body, as one pull-based stage: each pull takes the next chunk, presents it, encodes
 * it as one `data:` event and enqueues it at once, so nothing is buffered or coalesced and backpressure reaches
 * the upstream. It ends the OpenAI way: `data: [DONE]` after a clean end; after a failure an
 * `data: {"error":…}` event and no `[DONE]`, so SDKs raise instead of returning a truncated answer.
 * Cancelling it (the client went away) cancels the provider's stream and with it the upstream request.
 * `onEnd` runs exactly once, however the stream ends, after the lease is released. (One stage rather than a chain of TransformStreams keeps
 * the objects held per open stream few.)
 */
export function chatStreamBody(
  stream: Peeked<ChatCompletionChunk>,
  options: StreamEnding<ChatStreamOutcome> & {
    alias: string;
    includeUsage: boolean;
  },
): ReadableStream<Uint8Array> {
  const outcome: ChatStreamOutcome = { end: "ok", chunks: 0, texts: new StreamTexts() };
  return clientStreamBody(stream, outcome, options, {
    pull: eachValue({
      value: (chunk) =>
        presentChunk(chunk, options.alias, options.includeUsage, outcome) ? [encodeJsonEvent(chunk)] : [],
      finish: () => [doneEvent()],
    }),
    fail(controller, error) {
      controller.enqueue(encodeJsonEvent(error.toBody()));
    },
  });
}
