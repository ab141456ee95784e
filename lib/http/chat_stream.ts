/**
 * Turns a provider's chunk stream into the SSE body the client reads:
 *
 *   chunks → present (alias as model, usage kept or removed) → SSE encode → terminate ([DONE] or error event)
 *
 * Each stage handles one event at a time and enqueues it at once, so nothing is buffered or coalesced, and
 * cancelling the body (the client went away) cancels the provider's stream and with it the upstream request.
 *
 * @module
 */
import { errorEvent, toGatewayError } from "../errors.ts";
import type { GatewayError } from "../errors.ts";
import type { ChatCompletionChunk, Usage } from "../providers/types.ts";
import { DONE_EVENT, SseEncodeStream } from "../sse/serialize.ts";

/** What the stream learnt by the time it ended, for the access log and usage records. */
export interface ChatStreamOutcome {
  /** "ok" after `[DONE]`, "error" after an error event, "cancelled" when the client went away. */
  end: "ok" | "error" | "cancelled";
  error?: GatewayError;
  usage?: Usage;
  /** Milliseconds from the start of the stream to the first chunk with content. */
  firstChunkAt?: number;
  chunks: number;
  /** The text the client received (content and tool-call arguments), to count tokens when no usage came. */
  texts: string[];
}

function collectTexts(chunk: ChatCompletionChunk, into: string[]) {
  for (const choice of chunk.choices) {
    const delta = choice.delta as {
      content?: unknown;
      tool_calls?: { function?: { arguments?: unknown } }[];
    };
    if (typeof delta?.content === "string" && delta.content !== "") into.push(delta.content);
    for (const call of delta?.tool_calls ?? []) {
      if (typeof call.function?.arguments === "string") into.push(call.function.arguments);
    }
  }
}

/**
 * Presents upstream chunks as the client expects them: `model` is the alias the client sent, and the usage
 * the gateway asked for on its own behalf is noted and then removed unless the client asked for it too.
 */
export class PresentChunkStream extends TransformStream<ChatCompletionChunk, ChatCompletionChunk> {
  constructor(alias: string, includeUsage: boolean, outcome: ChatStreamOutcome, startedAt: number) {
    super({
      transform(chunk, controller) {
        if (chunk.usage) outcome.usage = chunk.usage;
        else if (outcome.usage === undefined) collectTexts(chunk, outcome.texts);
        if (!includeUsage) {
          if (chunk.usage && chunk.choices.length === 0) return;
          delete chunk.usage;
        }
        chunk.model = alias;
        outcome.chunks++;
        outcome.firstChunkAt ??= Math.round((performance.now() - startedAt) * 100) / 100;
        controller.enqueue(chunk);
      },
    });
  }
}

/**
 * Ends an encoded SSE stream the OpenAI way: `data: [DONE]` after a clean end; after a failure an
 * `data: {"error":…}` event and no `[DONE]`, so SDKs raise instead of returning a truncated answer.
 * `onEnd` runs exactly once, however the stream ends.
 */
export function terminateSse(
  events: ReadableStream<Uint8Array>,
  outcome: ChatStreamOutcome,
  onEnd: (outcome: ChatStreamOutcome) => void,
): ReadableStream<Uint8Array> {
  const reader = events.getReader();
  let ended = false;
  const end = (how: ChatStreamOutcome["end"]) => {
    if (ended) return;
    ended = true;
    outcome.end = how;
    onEnd(outcome);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (!done) {
          controller.enqueue(value);
          return;
        }
        controller.enqueue(DONE_EVENT);
        controller.close();
        end("ok");
      } catch (err) {
        const error = toGatewayError(err);
        outcome.error = error;
        controller.enqueue(new TextEncoder().encode(errorEvent(error)));
        controller.close();
        end(error.status === 499 ? "cancelled" : "error");
      }
    },
    async cancel(reason) {
      end("cancelled");
      await reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}

/** The client-facing SSE body for a provider's chunk stream. */
export function chatStreamBody(
  chunks: ReadableStream<ChatCompletionChunk>,
  options: {
    alias: string;
    includeUsage: boolean;
    startedAt: number;
    onEnd: (outcome: ChatStreamOutcome) => void;
  },
): ReadableStream<Uint8Array> {
  const outcome: ChatStreamOutcome = { end: "ok", chunks: 0, texts: [] };
  const encoded = chunks
    .pipeThrough(new PresentChunkStream(options.alias, options.includeUsage, outcome, options.startedAt))
    .pipeThrough(new SseEncodeStream());
  return terminateSse(encoded, outcome, options.onEnd);
}
