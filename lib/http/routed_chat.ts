/**
 * What the chat-form handlers (chat completions, Responses) share once a request is routed: a stream is held
 * until its first chunk (until then the attempt may still fail over), the SSE response headers, and the texts
 * of a whole completion for counting its tokens when the upstream reported none.
 *
 * @module
 */
import { badGateway, GatewayError } from "../errors.ts";
import { countTokens } from "../usage/estimate.ts";
import type { Answer, Outcome, TokenUsage } from "./accounting.ts";
import type { ClientContext } from "./context.ts";
import type { ChatCompletion, ChatCompletionChunk } from "../openai/types.ts";
import type { Peeked } from "../streams/client_body.ts";

/** A provider stream whose first chunk has already been read (routing commits to a target on it). */
export type PeekedStream = Peeked<ChatCompletionChunk>;

/** The headers of an SSE answer. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  // Tells nginx-style proxies in front of the gateway not to buffer the stream.
  "x-accel-buffering": "no",
};

/** A routed chat answer: a whole completion, or a stream whose first chunk is in hand. */
export type ChatAnswer =
  | { kind: "json"; body: ChatCompletion }
  | { kind: "stream"; stream: PeekedStream };

/**
 * Waits for a stream's first chunk. Until the first chunk the attempt may still fail over to another target;
 * after it, the answer belongs to this target.
 */
export async function withFirstChunk<T = ChatCompletionChunk>(
  provider: string,
  chunks: ReadableStream<T>,
): Promise<{ first: T; rest: ReadableStreamDefaultReader<T> }> {
  const reader = chunks.getReader();
  let first: ReadableStreamReadResult<T>;
  try {
    first = await reader.read();
  } catch (err) {
    await reader.cancel().catch(() => {});
    throw err;
  }
  if (first.done) throw badGateway(`Provider "${provider}" ended the stream without any data.`);
  return { first: first.value, rest: reader };
}

/** The texts of a completion's choices (content and tool-call arguments), for counting its tokens. */
export function completionTexts(completion: ChatCompletion): string[] {
  const out: string[] = [];
  for (const choice of completion.choices) {
    const message = choice.message as {
      content?: unknown;
      tool_calls?: { function?: { arguments?: unknown } }[];
    };
    if (typeof message?.content === "string") out.push(message.content);
    for (const call of message?.tool_calls ?? []) {
      if (typeof call.function?.arguments === "string") out.push(call.function.arguments);
    }
  }
  return out;
}

/**
 * A whole completion's token usage: the upstream's when it reported one, else counted by the gateway's
 * tokenizer (`countPrompt` for the request as this client API counts it, the completion's texts for the
 * answer) and marked estimated. The one place every client API's JSON answer gets its usage from.
 */
export async function completionUsage(
  completion: ChatCompletion,
  countPrompt: () => Promise<number>,
): Promise<TokenUsage> {
  if (completion.usage) {
    return {
      prompt: completion.usage.prompt_tokens,
      completion: completion.usage.completion_tokens,
      estimated: false,
    };
  }
  const [prompt, output] = await Promise.all([countPrompt(), countTokens(completionTexts(completion))]);
  return { prompt, completion: output, estimated: true };
}

/**
 * Refuses a stream the client did not ask for (an upstream that streams whatever it is asked): the stream is
 * cancelled, so the upstream call ends, and the client gets a 502 naming the provider.
 */
export async function refuseUnaskedStream(
  stream: { readonly rest: ReadableStreamDefaultReader<unknown> },
  provider: string,
): Promise<never> {
  await stream.rest.cancel();
  throw new GatewayError(502, `Provider "${provider}" streamed an answer that was not asked for.`);
}

/**
 * A streamed answer: counts the stream as open, gives `body` the function that settles the request's outcome
 * (its usage and how it ended, once the body has ended), and answers 200 with the SSE headers. The body's own
 * end calls `metrics.streamEnded()` itself: a stream stops being open when its body ends, which can come
 * before its outcome settles (that may wait for a token count).
 */
export function streamedAnswer(
  ctx: ClientContext,
  headers: Headers,
  body: (settle: (outcome: Outcome) => void) => ReadableStream<Uint8Array>,
): Answer {
  let settle!: (outcome: Outcome) => void;
  const outcome = new Promise<Outcome>((resolve) => settle = resolve);
  ctx.services.metrics.streamStarted();
  const sse = body(settle);
  for (const [name, value] of Object.entries(SSE_HEADERS)) headers.set(name, value);
  return { response: new Response(sse, { status: 200, headers }), outcome };
}
