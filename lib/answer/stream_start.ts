/**
 * When a streamed answer commits to its target. Until it commits, a failure of the stream is a failure of the
 * attempt, which routing may still retry or fall back from, as it does when the upstream refuses with an HTTP
 * error; once it commits, the answer belongs to that target, and a failure ends the client's stream with the
 * API's error events.
 *
 * A stream commits at its first value the client would see something of: content, a tool call, reasoning, a
 * refusal, a finish. What an upstream sends before that (OpenAI's and Bedrock's role-only first chunk,
 * Anthropic's `message_start` and `ping`, Responses' `response.created`) carries nothing of the answer, and an
 * upstream may still fail right after it: Anthropic reports an overload as an `error` event just after
 * `message_start` in a 200 stream. Those values are held, and handed to the client in order once the stream
 * commits, so the client sees one clean stream from the target that answered.
 *
 * Holding is bounded. At most {@linkcode HOLD_LIMITS}`.values` values are held (an upstream sending an endless
 * run of empty events cannot make the gateway buffer them), and a stream that has shown nothing
 * {@linkcode HOLD_LIMITS}`.ms` after its first value commits anyway, with what it holds and the read in
 * progress: the client's first bytes, and on the Messages API the keep-alive pings of a silent upstream, are
 * never held back longer than that for a failure that may not come. A failure after that ends the stream with
 * the API's error events, as one after the first content does. That bound is the one timer, set only for a
 * stream whose first value showed nothing and cleared when it commits; a stream whose first value shows
 * something (Gemini's, an upstream that sends its role with its first text) waits for nothing.
 *
 * @module
 */
import { badGateway, type GatewayError } from "../errors.ts";
import { type ReportedPrompt, reportedPromptOf } from "../openai/reported_prompt.ts";
import type { ChatCompletionChunk } from "../openai/types.ts";
import type { ChunkSource } from "../streams/pull_through.ts";
import type { Peeked } from "./stream_body.ts";

/** How a stream's values tell whether it may commit (see the module documentation). */
export interface StreamStart<T> {
  /** Whether the client would see something of the answer in `value`; the values before the first that is are held. */
  shows(value: T): boolean;
  /**
   * A value that says the upstream failed to answer, as the error routing takes it for (so a retryable one is
   * retried and falls back), when it comes before the stream committed; undefined for any other value.
   */
  failure?(value: T, provider: string): GatewayError | undefined;
  /**
   * The prompt `value` reports the upstream counted (Anthropic's `message_start`), if any: what a stream that
   * fails while it is held (its client gone, a stall, a cut) has still spent ({@linkcode heldPrompt}).
   */
  prompt?(value: T): ReportedPrompt | undefined;
}

/** The prompts the held values of streams that failed before they committed reported, by the error thrown. */
const heldPrompts = new WeakMap<object, ReportedPrompt>();

/**
 * The prompt the upstream reported in the values held back before the stream failed with `err` (the failure
 * {@linkcode untilShown} threw: the client gone, or the attempt's failure, which routing may retry): the
 * upstream counted it, and billed it, though the client saw nothing. Undefined when no held value reported one.
 */
export function heldPrompt(err: unknown): ReportedPrompt | undefined {
  return typeof err === "object" && err !== null ? heldPrompts.get(err) : undefined;
}

/** How much is held before a stream commits anyway (see the module documentation). */
export interface HoldLimits {
  /** Values held at most: the stream commits with the last of them, whatever it is. */
  values: number;
  /** Milliseconds after the first value past which the stream commits, whether a value arrived or not. */
  ms: number;
}

/** The limits every stream is held to. */
export const HOLD_LIMITS: HoldLimits = { values: 16, ms: 1_000 };

/** Every value commits: a stream whose API has no preamble to hold. */
export const FIRST_VALUE: StreamStart<never> = { shows: () => true };

/** What the hold's deadline resolves with. */
const HELD_LONG = Symbol("held long");

/**
 * Reads `reader` until its stream commits ({@linkcode StreamStart}); routing waits for this before it takes the
 * attempt as answered. A failure before then cancels the upstream and is thrown for routing; so is a stream that
 * ended without a value. A stream that ended after values that showed nothing is handed on as it is.
 */
export async function untilShown<T>(
  provider: string,
  reader: ChunkSource<T>,
  start: StreamStart<T>,
  limits: HoldLimits = HOLD_LIMITS,
): Promise<Peeked<T>> {
  const held: T[] = [];
  let done = false;
  /** A read the deadline interrupted: the first thing the stream handed on reads. */
  let reading: Promise<ReadableStreamReadResult<T>> | undefined;
  let deadline: Promise<typeof HELD_LONG> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    while (true) {
      const next = reader.read();
      const read = deadline === undefined ? await next : await Promise.race([next, deadline]);
      if (read === HELD_LONG) {
        // Whoever reads the stream next takes this read's outcome; until then a failure is not unhandled.
        reading = next;
        next.catch(() => {});
        break;
      }
      if (read.done) {
        if (held.length === 0) throw badGateway(`Provider "${provider}" ended the stream without any data.`);
        done = true;
        break;
      }
      const value = read.value;
      const failure = start.failure?.(value, provider);
      if (failure !== undefined) throw failure;
      held.push(value);
      if (start.shows(value) || held.length >= limits.values) break;
      deadline ??= new Promise((resolve) => timer = setTimeout(resolve, limits.ms, HELD_LONG));
    }
  } catch (err) {
    await reader.cancel().catch(() => {});
    if (typeof err === "object" && err !== null && start.prompt !== undefined) {
      const prompt = held.map((value) => start.prompt!(value)).findLast((p) => p !== undefined);
      if (prompt !== undefined) heldPrompts.set(err, prompt);
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
  const first = held.shift() as T;
  if (held.length === 0 && reading === undefined) return { first, rest: reader };
  return { first, rest: replayed(held, reading, reader, done) };
}

/**
 * `reader` with `held` read first, then `reading` (a read already in progress) when there is one; when `done`,
 * nothing is read from `reader` after them.
 */
function replayed<T>(
  held: T[],
  reading: Promise<ReadableStreamReadResult<T>> | undefined,
  reader: ChunkSource<T>,
  done: boolean,
): ChunkSource<T> {
  return {
    read() {
      if (held.length > 0) return Promise.resolve({ done: false, value: held.shift() as T });
      if (reading !== undefined) {
        const read = reading;
        reading = undefined;
        return read;
      }
      return done ? Promise.resolve({ done: true, value: undefined }) : reader.read();
    },
    cancel(reason) {
      held.length = 0;
      return reader.cancel(reason);
    },
  };
}

/** A delta field's value that says nothing: absent, null, an empty string, array or object. */
function empty(value: unknown): boolean {
  if (value === undefined || value === null || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === "object" && Object.keys(value).length === 0;
}

/**
 * Whether a chat chunk shows the client something: a choice that finished, or whose delta has anything but
 * its `role` (content, reasoning, a tool call, a refusal, audio …). A role-only or empty delta, an annotation
 * (Azure's content-filter results) and a usage-only chunk do not.
 */
export function chunkShows(chunk: ChatCompletionChunk): boolean {
  for (const choice of chunk.choices) {
    if (choice.finish_reason !== undefined && choice.finish_reason !== null) return true;
    const delta = choice.delta;
    if (delta === null || typeof delta !== "object" || Array.isArray(delta)) continue;
    for (const [key, value] of Object.entries(delta)) if (key !== "role" && !empty(value)) return true;
  }
  return false;
}

/** How a stream over the chat form commits: at its first chunk that {@linkcode chunkShows} something. */
export const CHAT_START: StreamStart<ChatCompletionChunk> = { shows: chunkShows, prompt: reportedPromptOf };
