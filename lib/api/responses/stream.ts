/**
 * A chat chunk stream as the Responses API's event stream: `response.created`, `response.in_progress`, the
 * output items (reasoning, message, function and custom tool calls) with their parts and deltas as the chunks
 * arrive, then `response.completed` (or `response.incomplete`); after an upstream failure an `error` event and
 * `response.failed`, never a clean end. Each frame is `event: <type>` + `data: <json>` with a
 * `sequence_number` that rises by one.
 *
 * {@linkcode ResponseEvents} is the pure translation (chunk in, events out); {@linkcode responsesStreamBody}
 * is the client's body, one pull-based stage like the chat stream's: each pull reads the next chunk and
 * enqueues its events at once, so nothing is buffered and backpressure reaches the upstream.
 *
 * @module
 */
import { badGateway, ClientGoneError, type GatewayError } from "../../errors.ts";
import { type ToolCallPiece, ToolCallStarts } from "../../openai/tool_call_starts.ts";
import { encodeEvent, failureEvents, outputTooLarge, type ResponseEvent } from "./stream_events.ts";
import { sentOutput } from "./failed_output.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";
import { CallEvents } from "./call_events.ts";
import type { ChatCompletionChunk, JsonObject, ReasoningFields, Usage } from "../../openai/types.ts";
import {
  clientStreamBody,
  eachValue,
  type Peeked,
  type StreamEnding,
  type StreamOutcome,
} from "../../answer/stream_body.ts";
import {
  endOf,
  functionCallItem,
  messageItem,
  newId,
  outputText,
  reasoningItem,
  type ResponseFrame,
  responseObject,
  responseUsage,
  summaryText,
} from "./response.ts";
import { gatewayReasoningId } from "./gateway_reasoning.ts";

/** The assistant message being streamed: its content parts (text, or the model's refusal), the last open. */
interface OpenText {
  index: number;
  id: string;
  parts: { type: "output_text" | "refusal"; text: string }[];
}

/** A reasoning item being streamed: one summary part (`summary_index` 0) that the deltas extend. */
interface OpenReasoning {
  index: number;
  id: string;
  text: string;
}

interface OpenCall {
  index: number;
  id: string;
  call_id: string;
  name: string;
  arguments: string;
}

/**
 * Translates chat chunks into Responses events, keeping the output built so far for the snapshots.
 *
 * Items come in OpenAI's order: reasoning (the chat form's `reasoning_content`) as a `reasoning` item with
 * one summary part, then the message, then function calls. Reasoning and the message are done as soon as
 * something else starts. Function calls stay open until the stream ends: the chat form may interleave
 * parallel calls' argument deltas (index 0, 1, 0 …), and a call that was already done could not take a late
 * delta.
 */
export class ResponseEvents {
  #seq = 0;
  #output: JsonObject[] = [];
  #reasoning: OpenReasoning | undefined;
  #text: OpenText | undefined;
  /** Open function calls, in the order they started. */
  #calls: OpenCall[] = [];
  /** The tool calls so far (each shown once its name is known), and the open call of each call number. */
  #starts = new ToolCallStarts();
  #callOf = new Map<number, OpenCall>();
  /** The calls' argument events (a custom tool's call: its input's). */
  readonly #args: CallEvents;
  #finish: unknown;
  /** The events of the last chunk (or end): the ones a budget stop may have withheld from the client. */
  #recent: ResponseEvent[] = [];
  /** The upstream's usage, when it sent one. */
  usage: Usage | undefined;
  /** What the client received (reasoning, text and arguments), to count tokens when no usage came. */
  readonly texts = new StreamTexts();

  constructor(private readonly frame: ResponseFrame) {
    this.#args = new CallEvents(frame.callable ?? frame.params.tools);
  }

  #emit(event: ResponseEvent, out: ResponseEvent[]): void {
    out.push({ ...event, sequence_number: this.#seq++ });
  }

  /**
   * The Response as it stands, its output copied: an event is encoded after later chunks of the same pull may
   * have added items, and `response.created` listing an item before its `output_item.added` makes the `openai`
   * SDK throw ("Duplicate response output index 0.").
   */
  #snapshot(status: Parameters<typeof responseObject>[1]["status"], extra: JsonObject = {}): JsonObject {
    return responseObject(this.frame, { status, output: [...this.#output], ...extra });
  }

  /** `response.created` and `response.in_progress`. */
  start(): ResponseEvent[] {
    const out: ResponseEvent[] = [];
    this.#emit({ type: "response.created", response: this.#snapshot("in_progress") }, out);
    this.#emit({ type: "response.in_progress", response: this.#snapshot("in_progress") }, out);
    return out;
  }

  /** Adds an item to the output and announces it; returns its output index. */
  #add(item: JsonObject, out: ResponseEvent[]): number {
    const index = this.#output.length;
    this.#output.push(item);
    this.#emit({ type: "response.output_item.added", output_index: index, item }, out);
    return index;
  }

  /** Replaces an item with its final form and announces it done. */
  #done(index: number, item: JsonObject, out: ResponseEvent[]): void {
    this.#output[index] = item;
    this.#emit({ type: "response.output_item.done", output_index: index, item }, out);
  }

  /** A delta of the upstream's reasoning: the summary text of the open reasoning item (opened if need be). */
  #reasoningDelta(delta: string, out: ResponseEvent[]): void {
    this.#closeText(out, "completed");
    let open = this.#reasoning;
    const at = (o: OpenReasoning) => ({ item_id: o.id, output_index: o.index, summary_index: 0 });
    if (open === undefined) {
      const id = gatewayReasoningId();
      open = { index: this.#add(reasoningItem(id, "in_progress", []), out), id, text: "" };
      this.#reasoning = open;
      this.#emit({ type: "response.reasoning_summary_part.added", ...at(open), part: summaryText("") }, out);
    }
    open.text += delta;
    this.texts.pushReasoning(delta);
    this.#emit({ type: "response.reasoning_summary_text.delta", ...at(open), delta }, out);
  }

  #closeReasoning(out: ResponseEvent[], status: string): void {
    const open = this.#reasoning;
    if (open === undefined) return;
    this.#reasoning = undefined;
    const at = { item_id: open.id, output_index: open.index, summary_index: 0 };
    this.#emit({ type: "response.reasoning_summary_text.done", ...at, text: open.text }, out);
    const part = summaryText(open.text);
    this.#emit({ type: "response.reasoning_summary_part.done", ...at, part }, out);
    this.#done(open.index, reasoningItem(open.id, status, [part]), out);
  }

  /** A finished content part, in the Response's form. */
  static #part(part: OpenText["parts"][number]): JsonObject {
    return part.type === "refusal" ? { type: "refusal", refusal: part.text } : outputText(part.text);
  }

  /** The `.done` events of the message's last content part. */
  #closePart(open: OpenText, out: ResponseEvent[]): void {
    const last = open.parts.at(-1);
    if (last === undefined) return;
    const at = { item_id: open.id, output_index: open.index, content_index: open.parts.length - 1 };
    if (last.type === "refusal") {
      this.#emit({ type: "response.refusal.done", ...at, refusal: last.text }, out);
    } else this.#emit({ type: "response.output_text.done", ...at, text: last.text, logprobs: [] }, out);
    this.#emit({ type: "response.content_part.done", ...at, part: ResponseEvents.#part(last) }, out);
  }

  #closeText(out: ResponseEvent[], status: string): void {
    const open = this.#text;
    if (open === undefined) return;
    this.#text = undefined;
    this.#closePart(open, out);
    this.#done(open.index, messageItem(open.id, status, open.parts.map((p) => ResponseEvents.#part(p))), out);
  }

  /** Every open function call done, in the order they started, each with its `status`. */
  #closeCalls(out: ResponseEvent[], status: (call: OpenCall) => string): void {
    for (const call of this.#calls) {
      const item = functionCallItem(call.id, status(call), call, this.#args.tools);
      for (const event of this.#args.done(call, item)) this.#emit(event, out);
      this.#done(call.index, item, out);
    }
    this.#calls = [];
    this.#callOf.clear();
  }

  /** A delta of the message's text or of its refusal (a chat `delta.refusal`), each its own content part. */
  #textDelta(delta: string, out: ResponseEvent[], type: "output_text" | "refusal" = "output_text"): void {
    this.#closeReasoning(out, "completed");
    let open = this.#text;
    if (open === undefined) {
      const id = newId("msg_");
      open = { index: this.#add(messageItem(id, "in_progress", []), out), id, parts: [] };
      this.#text = open;
    }
    let part = open.parts.at(-1);
    if (part?.type !== type) {
      this.#closePart(open, out);
      part = { type, text: "" };
      open.parts.push(part);
      this.#emit({
        type: "response.content_part.added",
        item_id: open.id,
        output_index: open.index,
        content_index: open.parts.length - 1,
        part: ResponseEvents.#part(part),
      }, out);
    }
    part.text += delta;
    this.texts.push(delta);
    const at = { item_id: open.id, output_index: open.index, content_index: open.parts.length - 1 };
    if (type === "refusal") this.#emit({ type: "response.refusal.delta", ...at, delta }, out);
    else this.#emit({ type: "response.output_text.delta", ...at, delta, logprobs: [] }, out);
  }

  /**
   * What a chunk of a tool call shows ({@linkcode ToolCallStarts}: nothing while the call has no name; a chunk
   * with another id than its `index`'s call, as Ollama gives every call 0, is another call): the call's item,
   * then its arguments.
   */
  #toolPiece(piece: ToolCallPiece | null, out: ResponseEvent[]): void {
    if (piece === null) {
      if (!this.#starts.holdsTooMuch) return;
      throw badGateway("The provider sent tool calls without a name past what is held for them.");
    }
    let open = this.#callOf.get(piece.call);
    if (piece.start !== undefined) {
      this.#closeReasoning(out, "completed");
      this.#closeText(out, "completed");
      const id = newId("fc_");
      const started = {
        id,
        call_id: piece.start.id ?? newId("call_"),
        name: piece.start.name,
        arguments: "",
      };
      open = {
        ...started,
        index: this.#add(functionCallItem(id, "in_progress", started, this.#args.tools), out),
      };
      this.#calls.push(open);
      this.#callOf.set(piece.call, open);
    }
    if (open !== undefined && piece.arguments !== "") {
      open.arguments += piece.arguments;
      this.texts.push(piece.arguments);
      for (const event of this.#args.delta(open, piece.arguments)) this.#emit(event, out);
    }
  }

  /** The events of one chat chunk (none for a chunk with nothing to show, e.g. the usage-only one). */
  chunk(chunk: ChatCompletionChunk): ResponseEvent[] {
    const out: ResponseEvent[] = [];
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices[0] as JsonObject | undefined;
    if (choice === undefined) return out;
    const delta = (choice.delta ?? {}) as JsonObject & ReasoningFields;
    if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") {
      this.#reasoningDelta(delta.reasoning_content, out);
    }
    if (typeof delta.content === "string" && delta.content !== "") this.#textDelta(delta.content, out);
    if (typeof delta.refusal === "string" && delta.refusal !== "") {
      this.#textDelta(delta.refusal, out, "refusal");
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const call of delta.tool_calls as JsonObject[]) this.#toolPiece(this.#starts.delta(call), out);
    }
    if (choice.finish_reason != null) this.#finish = choice.finish_reason;
    this.#recent = out;
    return out;
  }

  /**
   * The end of a stream that ended cleanly: open items done, then `response.completed` or `.incomplete`. At an
   * incomplete end (the output limit, a content filter) the last item, the one being written when it came (a
   * call's arguments cut off, the message), is `incomplete` and every other `completed`, as in the JSON answer
   * (`completionToResponse`). A tool call that never got a name is the upstream's fault: the stream fails
   * instead, as no client can run it.
   */
  finish(usage: Usage): ResponseEvent[] {
    if (this.#starts.nameless) {
      throw badGateway("The provider sent a tool call without a name.");
    }
    const out: ResponseEvent[] = this.#recent = [];
    for (const piece of this.#starts.end()) this.#toolPiece(piece, out);
    const end = endOf(this.#finish);
    const cut = end.status === "incomplete" ? this.#output.length - 1 : -1;
    const status = (open: { index: number } | undefined) => open?.index === cut ? "incomplete" : "completed";
    this.#closeReasoning(out, status(this.#reasoning));
    this.#closeText(out, status(this.#text));
    this.#closeCalls(out, status);
    const response = this.#snapshot(end.status, {
      usage: responseUsage(usage),
      incompleteReason: end.reason,
    });
    this.#emit(
      { type: end.status === "incomplete" ? "response.incomplete" : "response.completed", response },
      out,
    );
    return out;
  }

  /**
   * The end of a stream that broke: an `error` event, then `response.failed`, numbered on from the `sent` events
   * the client received (events built but withheld, by a budget stop, leave no gap). Its Response holds the
   * output as the client's events built it (failed_output.ts), open items `incomplete`.
   */
  fail(error: GatewayError, sent: number): ResponseEvent[] {
    // Open items closed as their deltas built them, `incomplete`; the events that would say so are not sent.
    const unsent: ResponseEvent[] = [];
    this.#closeReasoning(unsent, "incomplete");
    this.#closeText(unsent, "incomplete");
    this.#closeCalls(unsent, () => "incomplete");
    // What the closing events would have added (a custom call's held-back input) was not sent either.
    const output = sentOutput(this.#output, [...this.#recent, ...unsent], sent);
    this.#seq = sent;
    const out: ResponseEvent[] = [];
    const failed = failureEvents(
      error,
      (e) => responseObject(this.frame, { status: "failed", output, error: e }),
    );
    for (const event of failed) this.#emit(event, out);
    return out;
  }
}

/** What the stream learnt by the time it ended, for the access log and usage records. */
export interface ResponsesStreamOutcome extends StreamOutcome {
  usage?: Usage;
}

/** A provider stream whose first chunk has already been read. */
export type PeekedChunks = Peeked<ChatCompletionChunk>;

/**
 * The client-facing body of a streamed Response. `countUsage` gives the final event's usage when the upstream
 * reported none (the gateway's count). `onEnd` runs once however the stream ends, after the lease is released.
 */
export function responsesStreamBody(
  stream: PeekedChunks,
  options: StreamEnding<ResponsesStreamOutcome> & {
    frame: ResponseFrame;
    countUsage: (texts: StreamTexts) => Promise<Usage>;
    /** The final Response of a stream that ended (`failed` too, unless its client left), before it is sent. */
    onFinal?: (response: JsonObject) => void | Promise<void>;
    /** Most output characters kept: the final event carries them all (see {@linkcode outputTooLarge}). */
    maxOutput: number;
  },
): ReadableStream<Uint8Array> {
  const events = new ResponseEvents(options.frame);
  const outcome: ResponsesStreamOutcome = { end: "ok", texts: events.texts };
  let started = false;
  /** Events the client was sent (each is one write; a write the stream budget withheld is not). */
  let sent = 0;
  let counting: ReadableStreamDefaultController<Uint8Array> | undefined;
  const counted = (controller: ReadableStreamDefaultController<Uint8Array>) =>
    counting ??= {
      get desiredSize() {
        return controller.desiredSize;
      },
      enqueue(bytes: Uint8Array) {
        controller.enqueue(bytes);
        sent++;
      },
      close: () => controller.close(),
      error: (reason: unknown) => controller.error(reason),
    };
  const pull = eachValue<ChatCompletionChunk>({
    value(chunk) {
      const list = started ? events.chunk(chunk) : [...events.start(), ...events.chunk(chunk)];
      started = true;
      if (events.texts.chars > options.maxOutput) throw outputTooLarge(options.maxOutput);
      return list.map(encodeEvent);
    },
    async finish() {
      const usage = events.usage ?? await options.countUsage(events.texts);
      const last = events.finish(usage);
      await options.onFinal?.(last.at(-1)!.response as JsonObject);
      return last.map(encodeEvent);
    },
  });
  return clientStreamBody(stream, outcome, options, {
    beforeEnd: () => {
      outcome.usage = events.usage;
    },
    pull: (controller, next, end) => pull(counted(controller), next, end),
    fail: async (controller, error) => {
      const failed = events.fail(error, sent);
      if (!(error instanceof ClientGoneError)) await options.onFinal?.(failed.at(-1)!.response as JsonObject);
      for (const event of failed) controller.enqueue(encodeEvent(event));
    },
  });
}
