/**
 * The answer runner: the one place that turns a routed upstream answer into the client's answer, for every
 * client API and both of its forms (translated over the chat form, or passed through natively). A client API
 * supplies only its wire format: how to render a whole answer ({@linkcode JsonWire}) or the body of a stream
 * ({@linkcode StreamWire}: its events, its error events, its keep-alive). Everything else is here, once:
 *
 * - usage: the upstream's when it reported some, else counted by the gateway's tokenizer (a rough estimate if
 *   that fails) and marked estimated, so every request leaves a record with tokens in it;
 * - the 502 for a stream the client did not ask for;
 * - a stream's lease, budget guard, secret scrubbing, open-stream metric, SSE headers and settling.
 *
 * A response cache, tracing and output guardrails attach here, not in the client APIs.
 *
 * @module
 */
import { jsonResponse } from "./json_response.ts";
import { badGateway, ClientGoneError, GatewayError } from "../errors.ts";
import { CHAT_START, FIRST_VALUE, heldPrompt, untilShown } from "./stream_start.ts";
import type { ChatCompletion, Usage } from "../openai/types.ts";
import type { Provider } from "../providers/types.ts";
import type { ResolvedModel, RoutedTarget } from "../config/types.ts";
import { type RoutedAnswer, routeRequest } from "../http/route_request.ts";
import { chatFormServingTargets, chatWithout } from "../http/tolerance.ts";
import type { Lease } from "../routing/health.ts";
import type { StreamTexts } from "../usage/stream_texts.ts";
import {
  type Answer,
  noteOutcome,
  noteSpentAttempt,
  type Outcome,
  type TokenUsage,
} from "../http/accounting.ts";
import { type ClientContext, upstreamCall } from "../http/context.ts";
import { streamBudgetGuard, streamErrorCode } from "./budget_guard.ts";
import type { StreamEnding, StreamOutcome } from "./stream_body.ts";
import { logUnhandled } from "../log.ts";
import type { ChunkSource } from "../streams/pull_through.ts";
import { promptClasses, type ReportedPrompt } from "../openai/reported_prompt.ts";
import { tokenClassesOf } from "../pricing/cost.ts";
import {
  captureJson,
  noteCompletion,
  noteNativeAnswer,
  tracedChunks,
  tracedEvents,
} from "./traced_answer.ts";
import { cachedRoute, noteCacheStatus } from "./cached_route.ts";
import { streamedAnswer } from "../runtime/types.ts";
import { guardedAnswer, receivedUsage } from "./guarded_answer.ts";
import { type AnsweredRequest, type Reported, usageOf } from "./usage.ts";
import type {
  ChatAnswer,
  NativeAnswer,
  NativeCacheSpec,
  NativeEnding,
  NativeRoute,
  RoutedRequest,
} from "./routed.ts";

export { answerTokenCount } from "./token_count.ts";
export {
  type AnsweredRequest,
  completionReported,
  completionTexts,
  type Reported,
  usageOf,
} from "./usage.ts";
export type { ChatAnswer, NativeAnswer, NativeCacheSpec, NativeEnding, NativeRoute, RoutedRequest };
export type { NativeAnswerFacts, NativeFacts } from "./routed.ts";

/** The headers of an SSE answer. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  // Tells nginx-style proxies in front of the gateway not to buffer the stream.
  "x-accel-buffering": "no",
};

/** Routing's answer as the runner takes it: the value, the headers naming who answered, the target's lease. */
export interface RoutedValue<T> {
  value: T;
  target: { provider: string };
  lease: Lease;
  headers: Headers;
}

/** Whether a routed answer is a native one. */
export function isNativeAnswer(answer: ChatAnswer | NativeAnswer): answer is NativeAnswer {
  return answer.kind === "native" || answer.kind === "native_stream";
}

/**
 * Routes a request over `model`'s targets: a target that speaks the client API natively (`native`) gets its
 * passed-through body, every other one the chat form. When the request's guardrails send every target the chat
 * form (`RequestGuardrails.chatOnly`), the native ones are judged by its parameter rules first, as the client
 * API judged the others before admission (`chatFormServingTargets`, `request.form`). A stream is held until it
 * commits, at its first value that shows the client something (stream_start.ts; until then routing may still
 * retry or fall back); a stream the client reads holds its target's lease until it ends.
 */
export function routeAnswer(
  ctx: ClientContext,
  model: ResolvedModel,
  request: RoutedRequest,
): Promise<RoutedAnswer<ChatAnswer>>;
export function routeAnswer(
  ctx: ClientContext,
  model: ResolvedModel,
  request: RoutedRequest,
  native: NativeRoute,
): Promise<RoutedAnswer<ChatAnswer | NativeAnswer>>;
export async function routeAnswer(
  ctx: ClientContext,
  model: ResolvedModel,
  request: RoutedRequest,
  native?: NativeRoute,
): Promise<RoutedAnswer<ChatAnswer | NativeAnswer>> {
  const served = chatFormServingTargets(ctx, model, request.form);
  const routed = await routeAnswerOnce(ctx, served, request, native);
  const value = routed.value;
  // A whole answer is captured as the client gets it: after its output guardrails (an answer they withheld
  // never gets here), fresh or from the cache. A stream's is captured from what its body forwarded.
  if (ctx.trace?.capturing) captureJson(ctx.trace, value, native?.facts);
  if (value.kind === "stream" || value.kind === "native_stream") {
    ctx.abandon = () => {
      ctx.abandon = undefined;
      routed.lease.release();
      value.stream.rest.cancel().catch(() => {});
    };
  }
  return routed;
}

/** {@linkcode routeAnswer} through the guardrails or the cache when the request has them. */
function routeAnswerOnce(
  ctx: ClientContext,
  model: ResolvedModel,
  request: RoutedRequest,
  native?: NativeRoute,
): Promise<RoutedAnswer<ChatAnswer | NativeAnswer>> {
  // The request's GenAI span starts before the cache is looked up: a hit is a GenAI operation too (the metrics
  // count it), answered by the cache instead of an attempt. Its operation is its route's (`chat`: a generation).
  if (ctx.operation) ctx.trace?.startCall(ctx.operation, model.alias, request.chat);
  const settings = model.cache;
  const cache = ctx.services.cache;
  // Only a request whose text a guardrail changed (in its chat form, or only where a native target reads it), or
  // whose answer one checks, is kept from the cache (guarded_answer.ts); one its guardrails only read and let
  // through is cached like any other.
  if (ctx.guardrails?.chatOnly || ctx.guardrails?.nativeRewrites) {
    if (settings && cache) noteCacheStatus(ctx, "bypass");
    return guardedAnswer(ctx, ctx.guardrails, request, routeFresh(ctx, model, request, native));
  }
  if (settings && cache) {
    return cachedRoute(
      ctx,
      model,
      settings,
      cache,
      request,
      native,
      () => routeFresh(ctx, model, request, native),
    );
  }
  return routeFresh(ctx, model, request, native);
}

/**
 * Rethrows `err`, the failure of a stream held until it commits, after noting what it spent: the prompt the
 * upstream reported in what was held (Anthropic's `message_start`, with its cache reads and writes), as a stream
 * cut after it committed keeps it; the client saw nothing, so no output. When the client left meanwhile it is
 * the request's usage on this target; after any other failure (a stall to the idle timeout, a connection cut,
 * an error event) it is this attempt's spend, added to whatever the request ends with (a retry, a fallback, or
 * the failure), as routing goes on.
 */
function spentWhileHeld(ctx: ClientContext, target: RoutedTarget, err: unknown): never {
  const prompt = heldPrompt(err);
  if (prompt !== undefined) {
    const usage = { ...promptClasses(prompt), completion: 0, estimated: false };
    if (err instanceof ClientGoneError) {
      ctx.answeredBy = target;
      noteOutcome(ctx, { usage });
    } else noteSpentAttempt(ctx, { target, usage });
  }
  throw err;
}

/** {@linkcode routeAnswer} without the cache: every answer comes from a target. */
function routeFresh(
  ctx: ClientContext,
  model: ResolvedModel,
  request: RoutedRequest,
  native?: NativeRoute,
): Promise<RoutedAnswer<ChatAnswer | NativeAnswer>> {
  const terms = request.clientTerms ?? ((err: unknown) => err);
  const trace = ctx.trace;
  const chat = async (target: RoutedTarget, provider: Provider): Promise<ChatAnswer> => {
    const call = upstreamCall(ctx, target);
    const withheld = request.form?.withheld;
    const sent = withheld === undefined ? request.chat : chatWithout(request.chat, withheld(target));
    const answer = await provider.chat(sent, call).catch((err) => {
      throw terms(err);
    });
    if (answer.kind === "json") {
      if (trace) noteCompletion(trace, answer.body);
      return answer;
    }
    const stream = await untilShown(target.provider, answer.chunks, CHAT_START).catch((err) =>
      spentWhileHeld(ctx, target, err)
    );
    return { kind: "stream", stream: trace ? tracedChunks(trace, stream) : stream };
  };
  const passThrough = async (route: NativeRoute, target: RoutedTarget, provider: Provider) => {
    const answer = await route.call(target, provider);
    // The table said this target speaks the API; an adapter without the method disagrees with it (a bug).
    if (answer === undefined) throw new GatewayError(500, `The provider does not speak this API.`);
    if (answer.kind === "stream") {
      const stream = await untilShown(target.provider, answer.events, route.start ?? FIRST_VALUE).catch((
        err,
      ) => spentWhileHeld(ctx, target, err));
      return {
        kind: "native_stream" as const,
        stream: trace ? tracedEvents(trace, stream, route.facts) : stream,
      };
    }
    if (trace) noteNativeAnswer(trace, answer.body, route.facts);
    if (!route.valid(answer.body)) {
      throw badGateway(
        `Provider "${target.provider}" answered with something other than ${route.what}.`,
        "upstream_invalid_response",
      );
    }
    return { kind: "native" as const, body: answer.body };
  };
  return routeRequest<ChatAnswer | NativeAnswer>(
    ctx,
    model,
    ctx.signal,
    (target, provider) =>
      native?.speaks(target) && !ctx.guardrails?.chatOnly
        ? passThrough(native, target, provider)
        : chat(target, provider),
    (answer) => (answer.kind === "stream" || answer.kind === "native_stream") && request.asked,
  );
}

/** Token counts as the chat form's `usage`, what a translated answer shows when the upstream reported none. */
export function chatUsageOf(counts: { prompt: number; completion: number }): Usage {
  return {
    prompt_tokens: counts.prompt,
    completion_tokens: counts.completion,
    total_tokens: counts.prompt + counts.completion,
  };
}

/** The usage a translated whole answer shows: the completion's own, else the counts the runner found. */
export function shownUsage(completion: ChatCompletion, usage: TokenUsage): Usage {
  return completion.usage ?? chatUsageOf(usage);
}

/**
 * For a translated stream whose final event shows usage (Responses, Messages, Gemini): `count` gives that event
 * the gateway's count when the upstream reported none (the prompt as the client API counts it, and what was
 * streamed), and `usage` is the stream's usage for its record: the upstream's, else that same count.
 */
export function finalEventUsage(countPrompt: () => Promise<number>): {
  count: (texts: StreamTexts) => Promise<Usage>;
  usage: (outcome: { usage?: Usage }) => TokenUsage | undefined;
} {
  let counted: Usage | undefined;
  return {
    async count(texts) {
      const [prompt, completion] = await Promise.all([countPrompt(), texts.count()]);
      counted = chatUsageOf({ prompt, completion });
      return counted;
    },
    usage: ({ usage }) => {
      const found = usage ?? counted;
      return found && {
        ...tokenClassesOf(found.prompt_tokens, found.completion_tokens, found),
        estimated: usage === undefined,
      };
    },
  };
}

/** A whole answer in a client API's wire format. */
export interface JsonWire {
  /** The upstream's token counts, when it reported them. */
  reported: Reported | undefined;
  /** The answer's texts (content, tool arguments), counted when the upstream reported no usage. */
  texts: () => string[];
  /** The client's body, given the usage that applies (some APIs show it in the answer). */
  render: (usage: TokenUsage) => unknown;
  /** Awaited with the rendered body before it is sent (the Responses store). */
  beforeSend?: (body: unknown) => Promise<void>;
}

/**
 * The client's JSON answer: usage found, the body rendered (and stored), 200 with the routing headers. `signal`
 * is the request's: a count of the answer's usage ends with it (the rough estimate), and the answer, made after
 * its request ended, is not sent (the error boundary answers why it ended, with this usage in its record).
 */
export async function answerJson(
  headers: Headers,
  request: AnsweredRequest & { signal: AbortSignal },
  wire: JsonWire,
): Promise<Answer> {
  const texts = wire.reported ? [] : wire.texts();
  const usage = await usageOf(wire.reported, request, texts, undefined, request.signal);
  const body = wire.render(usage);
  await wire.beforeSend?.(body);
  return { response: jsonResponse(JSON.stringify(body), headers), outcome: { usage } };
}

/** A 200 JSON answer with `headers` (json_response.ts, where the client APIs' own JSON answers find it too). */
export { jsonResponse };

/** A stream in a client API's wire format. */
export interface StreamWire<O extends StreamOutcome> {
  /** Builds the client's body over the upstream stream, ending as `ending` says (clientStreamBody). */
  body: (ending: StreamEnding<O>) => ReadableStream<Uint8Array>;
  /**
   * The usage a stream ended with, when known without counting: the upstream's, or what the body counted
   * already for its final event. Only the prompt (its classes, without `completion`): the upstream's prompt
   * count is known, the output is counted from what the client received. Undefined: the runner counts what was
   * sent and received.
   */
  usage: (outcome: O) => TokenUsage | ReportedPrompt | undefined;
}

/**
 * The client's streamed answer. A stream the client did not ask for (an upstream that streams whatever it is
 * asked) is cancelled, so the upstream call ends, and refused with a 502 naming the provider. Otherwise the
 * body runs under the target's lease, the token's stream budget and the config's scrubber; the stream counts
 * as open until its body ends; its outcome settles once the body ended and its usage is known.
 */
export async function answerStream<O extends StreamOutcome>(
  ctx: ClientContext,
  routed: RoutedValue<{ readonly rest: ChunkSource<unknown> }>,
  request: AnsweredRequest & { asked: boolean },
  wire: StreamWire<O>,
): Promise<Answer> {
  if (!request.asked) {
    await routed.value.rest.cancel();
    throw new GatewayError(
      502,
      `Provider "${routed.target.provider}" streamed an answer that was not asked for.`,
    );
  }
  let settle!: (outcome: Outcome) => void;
  const outcome = new Promise<Outcome>((resolve) => settle = resolve);
  ctx.services.metrics.streamStarted();
  const body = wire.body({
    lease: routed.lease,
    scrubber: ctx.state.config.scrubber,
    budget: streamBudgetGuard(ctx, request.chat),
    startedAt: ctx.startedAt,
    onUnexpected: (err) => logUnhandled(ctx.logger, ctx.requestId, err),
    signal: ctx.signal,
    onEnd(end) {
      // A stream stops being open when its body ends, which can come before its usage is counted.
      ctx.services.metrics.streamEnded();
      ctx.trace?.captureOutput(end.texts.said());
      const ending = streamEnding(end);
      const known = wire.usage(end);
      if (known && "completion" in known) settle({ ...ending, usage: known });
      else {
        // Under output guardrails the upstream's words, some perhaps held back from the client, are what it spent.
        const received = ctx.guardrails?.received;
        // Without usage from the stream's end, the prompt the upstream reported on the way (with its cache reads
        // and writes) still stands.
        const prompt = known ?? end.reportedPrompt;
        const usage = received
          ? receivedUsage(received, request, prompt)
          : usageOf(undefined, request, end.texts, prompt);
        usage.then((usage) => settle({ ...ending, usage }));
      }
    },
  });
  // The body owns the stream and its lease now: it cancels and releases them however it ends.
  ctx.abandon = undefined;
  const headers = routed.headers;
  for (const [name, value] of Object.entries(SSE_HEADERS)) headers.set(name, value);
  return { response: streamedAnswer(new Response(body, { status: 200, headers })), outcome };
}

/**
 * What every stream's outcome holds however its usage is found: why it ended badly (its error's code, or
 * `client_closed_request` when its body was cancelled, unless the gateway said why: it ended the connection
 * itself, or shutdown had ended the request) and its time to first chunk.
 */
export function streamEnding(end: StreamOutcome): Pick<Outcome, "ttftMs" | "errorCode" | "endedAt"> {
  const errorCode = end.end === "error"
    ? streamErrorCode(end.error)
    : end.end === "cancelled"
    ? end.error?.code ?? "client_closed_request"
    : undefined;
  return { ttftMs: end.firstChunkAt, errorCode, endedAt: end.endedAt };
}
