/**
 * The client's body of a streamed Gemini answer: each chat chunk's parts as a `GenerateContentResponse` chunk
 * the moment it arrives, the last chunk with `finishReason` and `usageMetadata`. With `alt=sse` each chunk is one
 * `data:` event; without it Google streams one JSON array, a chunk per element. A failure after the start ends
 * the stream with a chunk holding Google's error (`{"error":{"code","message","status"}}`), which the SDK raises
 * on, never a clean end.
 *
 * @module
 */
import { googleErrorBody } from "../../errors.ts";
import type { ChatCompletionChunk, Usage } from "../../openai/types.ts";
import {
  clientStreamBody,
  eachValue,
  type Peeked,
  type StreamEnding,
  type StreamOutcome,
} from "../../answer/stream_body.ts";
import { GeminiChunks, type GeminiFrame } from "./response.ts";

/** What the stream learnt by the time it ended. */
export interface GeminiStreamOutcome extends StreamOutcome {
  usage?: Usage;
}

const encoder = new TextEncoder();

/** The client-facing body. */
export function geminiStreamBody(
  stream: Peeked<ChatCompletionChunk>,
  options: StreamEnding<GeminiStreamOutcome> & {
    frame: GeminiFrame;
    /** `alt=sse`: SSE events; otherwise one JSON array. */
    sse: boolean;
    startedAt: number;
    countUsage: (texts: string[]) => Promise<Usage>;
  },
): ReadableStream<Uint8Array> {
  const chunks = new GeminiChunks(options.frame);
  const outcome: GeminiStreamOutcome = { end: "ok", texts: chunks.texts };
  let first = true;
  const encode = (value: unknown): Uint8Array => {
    const json = JSON.stringify(value);
    if (options.sse) return encoder.encode(`data: ${json}\r\n\r\n`);
    const framed = (first ? "[" : ",\r\n") + json;
    first = false;
    return encoder.encode(framed);
  };
  return clientStreamBody(stream, outcome, options, {
    beforeEnd: () => {
      outcome.usage = chunks.usage;
    },
    pull: eachValue({
      value(chunk) {
        outcome.firstChunkAt ??= Math.round((performance.now() - options.startedAt) * 100) / 100;
        return chunks.chunk(chunk).map(encode);
      },
      async finish() {
        const usage = chunks.usage ?? await options.countUsage(chunks.texts);
        const last = encode(chunks.finish(usage));
        return options.sse ? [last] : [last, encoder.encode("]")];
      },
    }),
    fail(controller, error) {
      controller.enqueue(encode(googleErrorBody(error)));
      if (!options.sse) controller.enqueue(encoder.encode("]"));
    },
  });
}
