/**
 * The response cache for answers passed through natively (a Messages request to a Claude target, a Responses
 * request to a `native_responses` target, a Gemini request to a Gemini target). Such a request never becomes
 * the chat form the rest of the cache keys and stores, so it is keyed on its own body, with its client API and
 * its shape (JSON or stream), and the answer is kept as the upstream gave it: the body, or every stream event.
 * A hit goes to the same client API's native renderer as a fresh answer would, so it is framed, scrubbed and
 * stored exactly the same way; only the upstream's answer id is replaced with a fresh one where the client sees
 * it (`msg_…`, Gemini's `responseId`), and the times the answer says it was made at are now (Responses'
 * `created_at`).
 *
 * @module
 */
import type { ResolvedAliasCache } from "../config/types.ts";
import type { ChatRequest, JsonObject } from "../openai/types.ts";
import { isObject } from "../openai/types.ts";
import type { RoutedAnswer } from "../http/route_request.ts";
import { keyedRequest, keyOf, type KeyScope } from "../cache/key.ts";
import type { Fill } from "../cache/response_cache.ts";
import type { CachedAnswer } from "../cache/types.ts";
import { askedChoices, optedIn } from "../cache/opt_ins.ts";
import type { ChatAnswer, NativeAnswer, NativeCacheSpec, NativeEnding } from "./routed.ts";
import { watchedReader } from "./watched_reader.ts";

/** Fields of a client body that do not change the answer (as for the chat form, cache/key.ts). */
const NOT_KEYED = [
  "stream",
  "stream_options",
  "user",
  "metadata",
  "safety_identifier",
  "store",
  "prompt_cache_key",
];

/**
 * The key of a native request: its client API, its shape, its body without what does not change the answer,
 * what goes upstream beside the body (headers that change the answer), and its chat form (which carries what policy changed: redactions, the output limit a token's ceiling set).
 */
export function nativeKey(
  scope: KeyScope,
  spec: NativeCacheSpec,
  stream: boolean,
  chat: ChatRequest,
): string {
  const body: JsonObject = { ...spec.body };
  for (const name of NOT_KEYED) delete body[name];
  return keyOf(scope, {
    native: spec.api,
    stream,
    body,
    keyed: spec.keyed ?? null,
    chat: keyedRequest(chat),
  });
}

/**
 * Whether a native answer that ended so (undefined: not whole) may be cached under the alias's settings, by
 * the one rule a chat-form answer is judged by too (lib/cache/opt_ins.ts); `asked` is how many choices the
 * request asked for (its chat form's `n`).
 */
function allowed(endings: NativeEnding | undefined, asked: number, settings: ResolvedAliasCache): boolean {
  return endings !== undefined && optedIn(endings, asked, settings);
}

/**
 * Whether a stored native answer may still be served under the alias's settings now (a reload may have turned
 * an opt-in off since it was written); an entry that is not native is left to {@linkcode nativeHitValue}.
 */
export function nativeAdmitted(
  spec: NativeCacheSpec,
  answer: CachedAnswer,
  chat: ChatRequest,
  settings: ResolvedAliasCache,
): boolean {
  return answer.native === undefined ||
    allowed(spec.ending(answer.native.values), askedChoices(chat), settings);
}

/** A fresh id in the upstream's id's style (its prefix up to the last `_`, then random). */
function freshId(old: string): string {
  const cut = old.lastIndexOf("_");
  const random = crypto.randomUUID().replaceAll("-", "");
  return cut > 0
    ? `${old.slice(0, cut + 1)}${random.slice(0, 24)}`
    : random.slice(0, Math.max(8, old.length));
}

/**
 * The stored values with the upstream's answer id replaced by a fresh one, where the API says it is. The
 * values were parsed for this request alone (cache/response_cache.ts), so they may be handed on as they are.
 */
function freshValues(spec: NativeCacheSpec, values: JsonObject[]): JsonObject[] {
  const old = values.length > 0 ? spec.idOf?.(values[0]) : undefined;
  if (typeof old !== "string" || old.length < 4) return values;
  const id = freshId(old);
  return values.map((value) =>
    JSON.parse(JSON.stringify(value).replaceAll(JSON.stringify(old), JSON.stringify(id)))
  );
}

/** A native hit's routed value, in the shape that filled it; undefined when the entry is not this API's. */
export function nativeHitValue(
  spec: NativeCacheSpec,
  answer: CachedAnswer,
  stream: boolean,
): NativeAnswer | undefined {
  const native = answer.native;
  if (
    native === undefined || native.api !== spec.api || native.stream !== stream || native.values.length === 0
  ) {
    return undefined;
  }
  const now = Date.now();
  const values = freshValues(spec, native.values).map((value) => spec.restamp?.(value, now) ?? value);
  if (!stream) return { kind: "native", body: values[0] };
  const rest = new ReadableStream<JsonObject>({
    start(controller) {
      for (const value of values.slice(1)) controller.enqueue(value);
      controller.close();
    },
  }).getReader();
  return { kind: "native_stream", stream: { first: values[0], rest } };
}

/**
 * Wraps a routed native answer so that, once whole and cacheable (`chat`, the request's chat form, says how
 * many choices it asked for), it fills the entry: a body at once; a stream's events as they pass, written when
 * the upstream stream ended normally and within the entry size (a failure, a cancel or an answer over
 * `maxBytes` abandons it). A chat-form answer (a fallback to a translated target) is not cached under a native
 * key.
 */
export function fillingNative(
  routed: RoutedAnswer<ChatAnswer | NativeAnswer>,
  spec: NativeCacheSpec,
  chat: ChatRequest,
  settings: ResolvedAliasCache,
  fill: Fill,
  maxBytes: number,
): RoutedAnswer<ChatAnswer | NativeAnswer> {
  const value = routed.value;
  const asked = askedChoices(chat);
  const entry = (values: JsonObject[], stream: boolean): CachedAnswer | undefined =>
    allowed(spec.ending(values), asked, settings)
      ? {
        v: 1,
        native: { api: spec.api, stream, values },
        storedAt: Date.now(),
        provider: routed.target.provider,
        model: routed.target.model,
      }
      : undefined;
  const end = (answer: CachedAnswer | undefined) => answer ? fill.write(answer) : fill.abandon();
  if (value.kind === "native") {
    end(fill.writes ? entry([structuredClone(value.body)], false) : undefined);
    return routed;
  }
  if (value.kind !== "native_stream" || !fill.writes) {
    fill.abandon();
    return routed;
  }
  // Copies as they pass, before the client's body changes them; given up once past the entry size, and the
  // fill abandoned then (not at the stream's end), so identical requests waiting on it go upstream at once.
  let kept: JsonObject[] | undefined = [];
  let bytes = 0;
  const keep = (event: JsonObject) => {
    if (kept === undefined) return;
    const text = JSON.stringify(event);
    bytes += text.length;
    if (bytes <= maxBytes) {
      kept.push(JSON.parse(text));
      return;
    }
    kept = undefined;
    fill.abandon();
  };
  keep(value.stream.first);
  const rest = watchedReader(value.stream.rest, {
    value(event) {
      if (isObject(event)) keep(event);
      // A client API's body may stop reading at the final event (Messages closes at `message_stop`): the
      // answer is whole there, so it is written then, not when the upstream's end is read.
      if (kept !== undefined && spec.isFinal?.(event)) end(entry(kept, true));
    },
    // Past the entry size the fill was abandoned already: a Fill ignores a second ending, but is not sent one.
    done: () => {
      if (kept !== undefined) end(entry(kept, true));
    },
    // Before the final event (the client gone, a budget stop): not a whole answer. After it: written already.
    failed: () => {
      if (kept !== undefined) fill.abandon();
    },
  });
  return { ...routed, value: { kind: "native_stream", stream: { first: value.stream.first, rest } } };
}
