/**
 * The client's body of a streamed Gemini answer: each chat chunk's parts as a `GenerateContentResponse` chunk
 * the moment it arrives, the last chunk with `finishReason` and `usageMetadata`. With `alt=sse` each chunk is one
 * `data:` event; without it Google streams one JSON array, a chunk per element. A failure after the start ends
 * the stream with a chunk holding Google's error (`{"error":{"code","message","status"}}`), which the SDK raises
 * on, and then cuts the connection (`cutAfterFail`): older `@google/genai` releases, such as the one Gemini CLI
 * bundles, read an error event inside an SSE stream as an ordinary chunk, and only a broken connection makes
 * them raise. Never a clean end.
 *
 * @module
 */
import { googleErrorBody } from "../../google_errors.ts";
import type { ChatCompletionChunk, JsonObject, Usage } from "../../openai/types.ts";
import {
  clientStreamBody,
  eachValue,
  type Peeked,
  type StreamEnding,
  type StreamOutcome,
} from "../../answer/stream_body.ts";
import { GeminiChunks, type GeminiFrame } from "./response.ts";
import { clientAnswer, nativeUsage, pushAnswerParts } from "./native.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";
import type { TokenClasses } from "../../pricing/cost.ts";

/** What the stream learnt by the time it ended. */
export interface GeminiStreamOutcome extends StreamOutcome {
  usage?: Usage;
}

const encoder = new TextEncoder();

/** Google's framing: one SSE `data:` event per chunk, or (without `alt=sse`) one JSON array. */
function framing(sse: boolean) {
  let first = true;
  return {
    encode(value: unknown): Uint8Array {
      const json = JSON.stringify(value);
      if (sse) return encoder.encode(`data: ${json}\r\n\r\n`);
      const framed = (first ? "[" : ",\r\n") + json;
      first = false;
      return encoder.encode(framed);
    },
    /** What closes the stream after its last chunk. */
    end: (): Uint8Array[] => sse ? [] : [encoder.encode("]")],
  };
}

/** What a natively served stream learnt: the upstream's counts from its latest `usageMetadata`. */
export interface GeminiNativeOutcome extends StreamOutcome {
  usage?: TokenClasses;
}

/**
 * The client's body of a stream passed through from a Gemini target: each upstream chunk forwarded the moment
 * it is read, the alias as `modelVersion`; a failure after the start ends it with Google's error chunk.
 */
export function geminiNativeStreamBody(
  stream: Peeked<JsonObject>,
  options: StreamEnding<GeminiNativeOutcome> & { alias: string; sse: boolean },
): ReadableStream<Uint8Array> {
  const outcome: GeminiNativeOutcome = { end: "ok", texts: new StreamTexts() };
  const frame = framing(options.sse);
  return clientStreamBody(stream, outcome, options, {
    pull: eachValue({
      value(chunk) {
        pushAnswerParts(chunk, outcome.texts);
        outcome.usage = nativeUsage(chunk.usageMetadata) ?? outcome.usage;
        return [frame.encode(clientAnswer(chunk, options.alias))];
      },
      finish: () => frame.end(),
    }),
    fail(controller, error) {
      controller.enqueue(frame.encode(googleErrorBody(error)));
      for (const bytes of frame.end()) controller.enqueue(bytes);
    },
    cutAfterFail: true,
  });
}

/** The client-facing body. */
export function geminiStreamBody(
  stream: Peeked<ChatCompletionChunk>,
  options: StreamEnding<GeminiStreamOutcome> & {
    frame: GeminiFrame;
    /** `alt=sse`: SSE events; otherwise one JSON array. */
    sse: boolean;
    countUsage: (texts: StreamTexts) => Promise<Usage>;
  },
): ReadableStream<Uint8Array> {
  const chunks = new GeminiChunks(options.frame);
  const outcome: GeminiStreamOutcome = { end: "ok", texts: chunks.texts };
  const frame = framing(options.sse);
  const encode = frame.encode;
  return clientStreamBody(stream, outcome, options, {
    beforeEnd: () => {
      outcome.usage = chunks.usage;
    },
    pull: eachValue({
      value(chunk) {
        return chunks.chunk(chunk).map(encode);
      },
      async finish() {
        const usage = chunks.usage ?? await options.countUsage(chunks.texts);
        return [encode(chunks.finish(usage)), ...frame.end()];
      },
    }),
    fail(controller, error) {
      controller.enqueue(encode(googleErrorBody(error)));
      for (const bytes of frame.end()) controller.enqueue(bytes);
    },
    cutAfterFail: true,
  });
}
