/**
 * The response cache at the answer runner (lib/cache/): a request of a cached alias is looked up before it is
 * routed, and its answer, once whole, fills the entry. A hit is handed to the client API as a chat-form answer
 * (a completion, or the chunks an upstream would have streamed for it), so each client API renders it in its
 * own wire format, JSON or stream, with its own fresh ids, whatever shape filled it.
 *
 * Kept out of the runner's path unless the alias has `cache:` (one property check), so an alias without it
 * pays nothing. A request its alias passes through natively (the client API's own body to a target that speaks
 * it) is keyed and kept in its own wire format instead (cached_native.ts).
 *
 * @module
 */
import type { ResolvedAliasCache, ResolvedModel, RoutedTarget } from "../config/types.ts";
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatRequest,
  isObject,
} from "../openai/types.ts";
import type { RoutedAnswer } from "../http/route_request.ts";
import type { ClientContext } from "../http/context.ts";
import type { Lease } from "../routing/health.ts";
import { cacheControl } from "../cache/control.ts";
import { cacheKey, type KeyScope } from "../cache/key.ts";
import type { Admits, Fill, ResponseCache } from "../cache/response_cache.ts";
import type { CachedAnswer } from "../cache/types.ts";
import { CACHED_CALL_TYPES, completionChunks, normaliseCompletion } from "../cache/chunks.ts";
import { ChunkAccumulator } from "../cache/chunk_accumulator.ts";
import { askedChoices, type ChoiceEnding, cutOff, optedIn } from "../cache/opt_ins.ts";
import type { ChatAnswer, NativeAnswer, NativeRoute, RoutedRequest } from "./routed.ts";
import { fillingNative, nativeAdmitted, nativeHitValue, nativeKey } from "./cached_native.ts";
import { semanticLookup } from "./semantic_lookup.ts";
import { watchedReader } from "./watched_reader.ts";
import { tracedHit } from "./traced_answer.ts";
import { asksAudio, asksLogprobs } from "../openai/said_fields.ts";

/** What the usage record's `cache` says (and `x-cache`, in capitals: lib/http/middleware.ts). */
export type CacheStatus = "hit" | "hit_semantic" | "miss" | "bypass";

/** A hit holds no target: its lease does nothing. */
const NO_LEASE: Lease = { probe: false, succeeded() {}, failed() {}, release() {} };

/** The key's scope: the token's identity, its environment, or every token of the alias. */
export function keyScope(ctx: ClientContext, model: ResolvedModel, settings: ResolvedAliasCache): KeyScope {
  const scope = settings.scope === "shared"
    ? "shared"
    : settings.scope === "environment"
    ? `env:${ctx.identity.environment}`
    : `tok:${ctx.identity.id}`;
  return { scope, alias: model.alias, version: settings.version };
}

/**
 * Whether a chat-form request asks for what an entry cannot replay, so it is answered fresh and its lookup
 * bypassed (`x-cache: BYPASS`, not a `MISS` that could never be written):
 *
 * - spoken output (`modalities` with `"audio"`, or `audio` settings). OpenAI answers it with `content: null`
 *   and `message.audio` (the sound, per voice and format, often megabytes); an entry keeps only the chat form's
 *   text (lib/cache/chunks.ts), so a hit would be a 200 with an empty answer;
 * - log probabilities ({@linkcode asksLogprobs}): an entry keeps none (lib/cache/chunks.ts: a cached answer's
 *   probabilities are not a fresh sample's), so such an answer is never stored, and a hit could only show
 *   `logprobs: null`. Only chat completions carry them into the chat form: Responses' `top_logprobs` and
 *   `include` are dropped on a translated target (so its answer has none either) and kept whole on a native one
 *   (cached_native.ts).
 */
export function asksUncacheable(chat: ChatRequest): boolean {
  return asksAudio(chat) !== null || asksLogprobs(chat);
}

/**
 * Whether an entry replays `call` as it came: a function or custom tool's call (lib/cache/chunks.ts) with a name.
 * A call of another type would be replayed as neither; a nameless one is no call a client can run (an entry
 * written before custom calls were kept holds each as a function call with an empty name: it is a miss now).
 */
function replayableCall(call: unknown): boolean {
  if (!isObject(call)) return false;
  // A call without a type is a function call, as an entry replays it (some servers leave `type` out).
  const type = call.type ?? "function";
  if (typeof type !== "string" || !CACHED_CALL_TYPES.includes(type)) return false;
  const named = type === "custom" ? call.custom : call.function;
  return isObject(named) && typeof named.name === "string" && named.name !== "";
}

/**
 * Whether an answer may be cached under the alias's settings: each choice's ending judged by the one rule of
 * the opt-ins (lib/cache/opt_ins.ts: tool calls under `cache_tool_calls`, a cut under `cache_incomplete`, both
 * under both, several choices under `cache_n`), as a native answer's is. Never one with a call an entry would
 * not replay as it came ({@linkcode replayableCall}), nor one with `message.audio`, which an entry does not
 * keep (see {@linkcode asksUncacheable}; this catches an upstream that speaks unasked).
 */
export function cacheable(
  completion: ChatCompletion,
  chat: ChatRequest,
  settings: ResolvedAliasCache,
): boolean {
  // An entry keeps no logprobs (lib/cache/chunks.ts): a request that asks for them is answered fresh (such a
  // request is bypassed before it gets here; this keeps a caller that skips that check from storing one).
  if (asksLogprobs(chat)) return false;
  const endings: ChoiceEnding[] = [];
  for (const choice of completion.choices) {
    const reason = choice.finish_reason;
    const message = choice.message as
      | { tool_calls?: unknown[]; function_call?: unknown; audio?: unknown }
      | undefined;
    if (message?.audio !== undefined && message.audio !== null) return false;
    // An entry written before the legacy call was kept (lib/cache/chunks.ts) ends in `function_call` without
    // it: not a whole answer, so it is a miss rather than a call-less hit.
    if (reason === "function_call" && !isObject(message?.function_call) && !message?.tool_calls?.length) {
      return false;
    }
    const calls = (message?.tool_calls?.length ?? 0) > 0 || message?.function_call !== undefined ||
      reason === "tool_calls" || reason === "function_call";
    if (calls && !(message?.tool_calls ?? []).every(replayableCall)) return false;
    endings.push({ calls, cut: cutOff(reason) });
  }
  return optedIn(endings, askedChoices(chat), settings);
}

/** Notes the cache's part in the access record, which `finishRequest` shows as `x-cache`, errors included. */
export function noteCacheStatus(ctx: ClientContext, status: CacheStatus): void {
  ctx.record.cache = status;
}

/** A hit's routing headers and record: the target that filled it, no attempt; `undefined` target: none. */
function hitRouting(ctx: ClientContext, model: ResolvedModel, answer: CachedAnswer, status: CacheStatus) {
  const target: RoutedTarget =
    model.targets.find((t) => t.provider === answer.provider && t.model === answer.model) ??
      model.targets[0];
  ctx.answeredBy = target;
  ctx.record.provider = answer.provider;
  ctx.record.upstream_model = answer.model;
  ctx.record.attempts = 0;
  noteCacheStatus(ctx, status);
  const headers = new Headers({
    "x-gateway-provider": answer.provider,
    "x-gateway-model": answer.model,
    "x-gateway-attempts": "0",
    "age": String(Math.max(0, Math.floor((Date.now() - answer.storedAt) / 1000))),
  });
  return { target, lease: NO_LEASE, headers };
}

/** A hit's value as the request's trace sees it (telemetry on only): see tracedHit. */
function traced<T extends ChatAnswer | NativeAnswer>(ctx: ClientContext, value: T, native?: NativeRoute): T {
  return ctx.trace === undefined ? value : tracedHit(ctx.trace, value, native?.facts);
}

/** A chat-form hit's value: the completion with a fresh id and `created`, or the chunks it streams as. */
function chatHitValue(completion: ChatCompletion, stream: boolean): ChatAnswer {
  const frame = {
    id: `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`,
    created: Math.floor(Date.now() / 1000),
  };
  // The entry was parsed for this request alone (cache/response_cache.ts): it is this answer's to change.
  const body = completion;
  body.id = frame.id;
  body.created = frame.created;
  if (!stream) return { kind: "json", body };
  const chunks = completionChunks(body, frame);
  const rest = new ReadableStream<ChatCompletionChunk>({
    start(controller) {
      for (const chunk of chunks.slice(1)) controller.enqueue(chunk);
      controller.close();
    },
  }).getReader();
  return { kind: "stream", stream: { first: chunks[0], rest } };
}

/**
 * Wraps a routed answer so that, once whole, cacheable and within `maxBytes` (`cache.max_entry_bytes`), it
 * fills the entry; otherwise the fill is abandoned. Exported for its tests.
 */
export function filling(
  routed: RoutedAnswer<ChatAnswer | NativeAnswer>,
  chat: ChatRequest,
  settings: ResolvedAliasCache,
  fill: Fill,
  maxBytes: number,
): RoutedAnswer<ChatAnswer | NativeAnswer> {
  const value = routed.value;
  const entry = (completion: ChatCompletion | undefined): CachedAnswer | undefined =>
    completion !== undefined && cacheable(completion, chat, settings)
      ? {
        v: 1,
        completion: normaliseCompletion(completion),
        storedAt: Date.now(),
        provider: routed.target.provider,
        model: routed.target.model,
      }
      : undefined;
  const end = (answer: CachedAnswer | undefined) => answer ? fill.write(answer) : fill.abandon();
  if (value.kind === "json") {
    // normaliseCompletion makes the entry's own copy, before the client API renders (and changes) the answer.
    end(fill.writes ? entry(value.body) : undefined);
    return routed;
  }
  if (value.kind !== "stream" || !fill.writes) {
    fill.abandon();
    return routed;
  }
  // The chunks are added up as they pass (before the client's body presents them), and the entry is written
  // only when the upstream stream ended normally; a failure or a cancel (the client gone, a budget stop)
  // abandons it. The sum is bounded by the entry size: past it, it is dropped at once (the stream goes on to
  // the client untouched) rather than held whole for the store to refuse, and the fill is abandoned then, not
  // at the stream's end: identical requests waiting on it (single-flight) go upstream at once instead of
  // waiting out a long stream, or `lock_wait`, for an entry that will never be written.
  const sum = new ChunkAccumulator(maxBytes);
  const add = (chunk: ChatCompletionChunk) => {
    if (sum.stopped) return;
    sum.add(chunk);
    if (sum.stopped) fill.abandon();
  };
  add(value.stream.first);
  const rest = watchedReader(value.stream.rest, {
    value: add,
    // Past the bound the fill was abandoned already: a Fill ignores a second ending, but is not sent one.
    done: () => {
      if (!sum.stopped) end(entry(sum.completion()));
    },
    failed: () => {
      if (!sum.stopped) fill.abandon();
    },
  });
  return { ...routed, value: { kind: "stream", stream: { first: value.stream.first, rest } } };
}

/**
 * Routes a request of a cached alias: a hit is answered from the cache; a miss is routed (`route`) and its
 * answer fills the entry; a request that may not use the cache (`no-store`, its token's `cache: false`, a store
 * that is down) is routed as if the alias had no cache, marked `BYPASS`.
 */
export async function cachedRoute(
  ctx: ClientContext,
  model: ResolvedModel,
  settings: ResolvedAliasCache,
  cache: ResponseCache,
  request: RoutedRequest,
  native: NativeRoute | undefined,
  route: () => Promise<RoutedAnswer<ChatAnswer | NativeAnswer>>,
): Promise<RoutedAnswer<ChatAnswer | NativeAnswer>> {
  const control = cacheControl(ctx.headers.get("cache-control"), ctx.identity.cache);
  // A request the alias passes through natively is keyed on its own body (cached_native.ts), if its API can.
  const nativeSpec = native !== undefined && model.targets.some(native.speaks)
    ? native.cache?.() ?? null
    : undefined;
  const scope = keyScope(ctx, model, settings);
  const key = nativeSpec
    ? nativeKey(scope, nativeSpec, request.asked, request.chat)
    : cacheKey(scope, request.chat);
  // The alias's settings now decide whether an entry is served, not only whether it was written: a reload may
  // have turned an opt-in (`cache_tool_calls`, …) off since, and the entry is then a miss.
  const admits: Admits = nativeSpec
    ? (answer) => nativeAdmitted(nativeSpec, answer, request.chat, settings)
    : (answer) => answer.completion === undefined || cacheable(answer.completion, request.chat, settings);
  // A native entry keeps the upstream's answer whole; a chat-form one cannot keep audio or logprobs
  // (asksUncacheable).
  const uncacheable = nativeSpec === null || (nativeSpec === undefined && asksUncacheable(request.chat));
  const lookup = (!control.write && !control.read) || uncacheable
    ? { kind: "bypass" as const }
    : await cache.lookup(key, settings.ttlMs, control, ctx.signal, admits);
  if (lookup.kind === "bypass") {
    noteCacheStatus(ctx, "bypass");
    return route();
  }
  if (lookup.kind === "hit") {
    const answer = lookup.answer;
    const value = nativeSpec
      ? nativeHitValue(nativeSpec, answer, request.asked)
      : answer.completion && chatHitValue(answer.completion, request.asked);
    if (value !== undefined) {
      return { value: traced(ctx, value, native), ...hitRouting(ctx, model, answer, "hit") };
    }
  }
  let fill = lookup.kind === "miss" ? lookup.fill : abandoned;
  if (nativeSpec) {
    noteCacheStatus(ctx, "miss");
    return fillingNative(
      await routeFilling(route, fill),
      nativeSpec,
      request.chat,
      settings,
      fill,
      maxEntryBytes(ctx),
    );
  }
  if (settings.semantic !== null && control.read) {
    const semantic = await semanticLookup(ctx, settings, cache, scope, request.chat, control, admits);
    if (semantic.kind === "hit" && semantic.answer.completion) {
      // The paraphrase's own key gets the answer too, so its identical requests (waiting on it) hit exactly.
      fill.write(semantic.answer);
      const value = traced(ctx, chatHitValue(structuredClone(semantic.answer.completion), request.asked));
      const hit = { value, ...hitRouting(ctx, model, semantic.answer, "hit_semantic") };
      hit.headers.set("x-cache-similarity", semantic.similarity.toFixed(3));
      return hit;
    }
    if (semantic.kind === "miss") fill = remembering(fill, () => semantic.remember(key));
  }
  noteCacheStatus(ctx, "miss");
  return filling(await routeFilling(route, fill), request.chat, settings, fill, maxEntryBytes(ctx));
}

/** The most bytes an entry may have (`cache.max_entry_bytes`). */
function maxEntryBytes(ctx: ClientContext): number {
  return ctx.state.config.cache.max_entry_bytes;
}

/** A fill for an entry that is not this request's to write (a hit of another API's shape: answered fresh). */
const abandoned: Fill = { writes: false, write() {}, abandon() {} };

/** Routes the request; a failure abandons the fill (its waiters go on) before it reaches the client. */
async function routeFilling(
  route: () => Promise<RoutedAnswer<ChatAnswer | NativeAnswer>>,
  fill: Fill,
): Promise<RoutedAnswer<ChatAnswer | NativeAnswer>> {
  try {
    return await route();
  } catch (err) {
    fill.abandon();
    throw err;
  }
}

/** `fill`, also calling `written` when it writes an answer (the semantic index learns the question then). */
function remembering(fill: Fill, written: () => void): Fill {
  return {
    writes: fill.writes,
    write(answer) {
      fill.write(answer);
      if (fill.writes) written();
    },
    abandon: () => fill.abandon(),
  };
}
