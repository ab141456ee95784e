/**
 * What a routed answer tells its request's trace (telemetry on only): a whole completion its id, model, finish
 * reasons and usage details as it arrives; a stream the same as its chunks pass. An answer passed through in
 * the client API's own wire format tells the same, read by that API's {@linkcode NativeFacts}. A whole answer's
 * text is captured only once it is the client's ({@linkcode captureJson}), after output guardrails.
 *
 * @module
 */
import type { ChatCompletion, ChatCompletionChunk, JsonObject } from "../openai/types.ts";
import type { RequestTrace } from "../telemetry/request_trace.ts";
import type { Peeked } from "./stream_body.ts";
import { watchedReader } from "./watched_reader.ts";
import { completionSaid } from "./usage.ts";
import type { ChatAnswer, NativeAnswer, NativeFacts } from "./routed.ts";

/** What the functions here tell a trace as an answer arrives: its facts (its text is captured apart). */
export type AnswerTrace = Pick<RequestTrace, "noteResponse">;

/** What a whole completion tells its trace: its id, model, finish reasons and usage details. */
export function noteCompletion(trace: AnswerTrace, completion: ChatCompletion): void {
  trace.noteResponse({
    id: completion.id,
    model: completion.model,
    finishReasons: completion.choices.map((choice) => choice.finish_reason),
    usage: completion.usage,
  });
}

/**
 * A traced request's chunk stream, telling the trace what the chunks say of the answer as they pass (its id,
 * model, finish reasons, usage details); one more read per chunk, for traced requests only.
 */
export function tracedChunks(
  trace: AnswerTrace,
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

/**
 * What a whole answer passed through in the client API's own wire format tells its trace, as
 * {@linkcode noteCompletion} does for a translated one: its id, model, finish reasons and usage classes, read
 * by the client API's `facts`; without them, its `id` and `model` fields.
 */
export function noteNativeAnswer(
  trace: AnswerTrace,
  body: JsonObject,
  facts: (() => NativeFacts) | undefined,
): void {
  if (facts === undefined) {
    trace.noteResponse({ id: body.id, model: body.model });
    return;
  }
  trace.noteResponse(facts().answer(body));
}

/**
 * The text of a whole answer (content capture on): the completion's ({@linkcode completionSaid}: its answer, and
 * its reasoning apart), or a native answer's as its client API's `facts` read them, as a stream of the same
 * answer gives them. Called with the answer as its client gets it, once output guardrails let it through.
 */
export function captureJson(
  trace: RequestTrace,
  value: ChatAnswer | NativeAnswer,
  facts: (() => NativeFacts) | undefined,
): void {
  if (value.kind === "json") trace.captureOutput(completionSaid(value.body));
  else if (value.kind === "native") {
    const said = facts?.().answer(value.body).said;
    if (said !== undefined) trace.captureOutput(said);
  }
}

/**
 * A traced request's native event stream, telling the trace what its events say as they pass, read by the
 * client API's `facts` (as {@linkcode tracedChunks} for the chat form; without them, the stream as it is); its
 * text is captured from what the client's body forwarded.
 */
export function tracedEvents(
  trace: AnswerTrace,
  stream: Peeked<JsonObject>,
  facts: (() => NativeFacts) | undefined,
): Peeked<JsonObject> {
  if (facts === undefined) return stream;
  const reader = facts();
  const note = (event: JsonObject) => {
    const found = reader.event(event);
    if (found !== undefined) trace.noteResponse(found);
  };
  note(stream.first);
  return { first: stream.first, rest: watchedReader(stream.rest, { value: note }) };
}

/**
 * A cache hit's value, telling the request's trace what the cached answer says of itself (its id, model and
 * finish reasons) as a fresh answer would. Not its usage: that was the call that
 * filled the entry, and this request spent nothing upstream.
 */
export function tracedHit<T extends ChatAnswer | NativeAnswer>(
  trace: RequestTrace,
  value: T,
  facts: (() => NativeFacts) | undefined,
): T {
  const hit: AnswerTrace = {
    noteResponse: ({ id, model, finishReasons }) => trace.noteResponse({ id, model, finishReasons }),
  };
  switch (value.kind) {
    case "json":
      noteCompletion(hit, value.body);
      return value;
    case "stream":
      return { ...value, stream: tracedChunks(hit, value.stream) };
    case "native":
      noteNativeAnswer(hit, value.body, facts);
      return value;
    case "native_stream":
      return { ...value, stream: tracedEvents(hit, value.stream, facts) };
  }
  return value;
}
