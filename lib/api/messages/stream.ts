/**
 * A chat chunk stream as Anthropic's Messages event stream: `message_start` (with the input tokens: the
 * gateway's count, since chat upstreams report usage only at the end), then per content block
 * `content_block_start`, its deltas (`thinking_delta`, `text_delta`, `input_json_delta`) and
 * `content_block_stop`, then `message_delta` (stop reason, the upstream's real usage) and `message_stop`.
 * After an upstream failure: one `error` event and nothing more, never `message_stop`. `ping` frames keep
 * the connection alive while the upstream is silent.
 *
 * {@linkcode MessageEvents} is the pure translation (chunk in, events out); {@linkcode messagesStreamBody} is
 * the client's body, one pull-based stage: each pull reads the next chunk and enqueues its events at once, so
 * nothing is buffered (but what an interleaved tool call holds back) and backpressure reaches the upstream.
 *
 * @module
 */
import type { ChatCompletionChunk, JsonObject, ReasoningFields, Usage } from "../../openai/types.ts";
import { concatBytes } from "../../streams/concat_bytes.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";
import { pushText } from "../../openai/said_fields.ts";
import {
  clientStreamBody,
  eachValue,
  type Peeked,
  type StreamEnding,
  type StreamOutcome,
} from "../../answer/stream_body.ts";
import { badGateway } from "../../errors.ts";
import { JsonValueEnd } from "./json_value_end.ts";
import { type ToolCallPiece, ToolCallStarts } from "../../openai/tool_call_starts.ts";
import {
  type MessageFrame,
  messageObject,
  messagesUsage,
  newId,
  noFinishReason,
  stopOf,
} from "./response.ts";
import { encodeMessagesEvent, errorEvent, type MessagesEvent, PING } from "./sse.ts";

/** What a content block is, and for a tool call what its `content_block_start` names. */
interface BlockPiece {
  type: "text" | "thinking" | "tool_use";
  /** A tool call's `index` in the chat form. */
  call?: number;
  id?: string;
  name?: string;
}

/** The block the client has seen start and not yet stop. */
interface OpenBlock extends BlockPiece {
  index: number;
  /** A tool call's arguments so far: whether they are a whole JSON object yet. */
  args?: JsonValueEnd;
}

/** A block held back behind an open tool call whose arguments are not whole yet: what it will carry. */
interface HeldBlock extends BlockPiece {
  parts: string[];
}

/**
 * How many characters of later blocks are held back behind an unfinished tool call before the call is closed
 * anyway (an upstream interleaving calls that long is broken, and memory stays bounded).
 */
export const HELD_LIMIT = 1 << 20;

/**
 * Translates chat chunks into Messages events. Blocks come one at a time, as Anthropic sends them and its
 * SDKs read them (`messages.stream()` reports a block at its `content_block_stop` as the last one started):
 * a block stops before the next starts. The chat form may interleave parallel calls' argument deltas
 * (index 0, 1, 0 …), and a stopped block takes no late delta, so what comes while a tool call's arguments are
 * not a whole JSON object yet (a later call, text) is held back until they are, or until the stream ends, or
 * until {@linkcode HELD_LIMIT} characters are held. Arguments for a call that has stopped end the stream with
 * an error: they cannot reach the client. A call's block starts once its name is known (ToolCallStarts: some
 * servers name a call after its first delta).
 */
export class MessageEvents {
  #next = 0;
  #open: OpenBlock | undefined;
  #held: HeldBlock[] = [];
  #heldChars = 0;
  /** The tool calls (numbered by {@linkcode ToolCallStarts}) whose blocks have stopped. */
  #closed = new Set<number>();
  /** The tool calls so far: each starts its block once its name is known. */
  #calls = new ToolCallStarts();
  #finish: unknown = null;
  #matched: unknown = null;
  /** A stopped tool call's arguments were not one JSON object (cut short, an array, a scalar, …). */
  #badArgs = false;
  /** The upstream's usage, when it sent one. */
  usage: Usage | undefined;
  /** What the client received (thinking, text, arguments), to count tokens when no usage came. */
  readonly texts = new StreamTexts();

  constructor(private readonly frame: MessageFrame) {}

  /** `message_start`, with the input tokens known before the upstream answers. */
  start(inputTokens: number): MessagesEvent[] {
    const usage = {
      input_tokens: inputTokens,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
    return [{
      type: "message_start",
      message: messageObject(this.frame, [], { stop_reason: null, stop_sequence: null }, usage),
    }];
  }

  #close(out: MessagesEvent[]): void {
    const open = this.#open;
    if (open === undefined) return;
    if (open.args !== undefined && !open.args.empty && !open.args.wholeObject) this.#badArgs = true;
    out.push({ type: "content_block_stop", index: open.index });
    if (open.call !== undefined) this.#closed.add(open.call);
    this.#open = undefined;
  }

  /** Starts `piece`'s block (the open one stopped first) with `text` as its first delta. */
  #begin(piece: BlockPiece, text: string, out: MessagesEvent[]): void {
    this.#close(out);
    const open: OpenBlock = { ...piece, index: this.#next++ };
    const block = piece.type === "text"
      ? { type: "text", text: "" }
      : piece.type === "thinking"
      ? { type: "thinking", thinking: "", signature: "" }
      : { type: "tool_use", id: piece.id ?? newId("toolu_"), name: piece.name ?? "", input: {} };
    if (piece.type === "tool_use") open.args = new JsonValueEnd();
    this.#open = open;
    out.push({ type: "content_block_start", index: open.index, content_block: block });
    this.#emit(open, text, out);
  }

  #emit(open: OpenBlock, text: string, out: MessagesEvent[]): void {
    if (text === "") return;
    open.args?.feed(text);
    const delta = open.type === "text"
      ? { type: "text_delta", text }
      : open.type === "thinking"
      ? { type: "thinking_delta", thinking: text }
      : { type: "input_json_delta", partial_json: text };
    out.push({ type: "content_block_delta", index: open.index, delta });
  }

  /** Whether the open block keeps what follows waiting: a tool call whose arguments are not whole yet. */
  #waiting(): boolean {
    return this.#open?.args !== undefined && !this.#open.args.complete;
  }

  /** Starts the held blocks in order, as far as the open one lets them (all of them when `force`). */
  #release(out: MessagesEvent[], force: boolean): void {
    while (this.#held.length > 0 && (force || !this.#waiting())) {
      const held = this.#held.shift()!;
      const text = held.parts.join("");
      this.#heldChars -= text.length;
      this.#begin(held, text, out);
    }
  }

  #hold(piece: BlockPiece, text: string): void {
    const last = this.#held.at(-1);
    const same = piece.call !== undefined
      ? this.#held.find((h) => h.call === piece.call)
      : last?.type === piece.type
      ? last
      : undefined;
    if (same) same.parts.push(text);
    else this.#held.push({ ...piece, parts: [text] });
    this.#heldChars += text.length;
  }

  /** One piece of content as it arrives: a delta of the open block, held back, or a new block. */
  #piece(piece: BlockPiece, text: string, out: MessagesEvent[]): void {
    if (text !== "") pushText(this.texts, text, piece.type === "thinking");
    const open = this.#open;
    if (open !== undefined && open.type === piece.type && open.call === piece.call) {
      this.#emit(open, text, out);
      this.#release(out, false);
      return;
    }
    if (piece.call !== undefined && this.#closed.has(piece.call)) {
      if (text.trim() === "") return;
      throw badGateway(
        `Provider "${this.frame.provider}" sent arguments for tool call ${piece.call} after they had ended.`,
      );
    }
    if (this.#held.length > 0 || this.#waiting()) {
      this.#hold(piece, text);
      if (this.#heldChars > HELD_LIMIT) this.#release(out, true);
      return;
    }
    this.#begin(piece, text, out);
  }

  /** What a tool call delta shows: nothing while the call has no name, then its block (ToolCallStarts). */
  #toolPiece(call: ToolCallPiece | null, out: MessagesEvent[]): void {
    if (call === null) {
      if (!this.#calls.holdsTooMuch) return;
      throw badGateway(
        `Provider "${this.frame.provider}" sent tool calls without a name past what is held for them.`,
      );
    }
    const piece: BlockPiece = { type: "tool_use", call: call.call };
    if (call.start !== undefined) {
      piece.id = call.start.id;
      piece.name = call.start.name;
    }
    this.#piece(piece, call.arguments, out);
  }

  /** The events of one chat chunk (none for a chunk with nothing to show, e.g. the usage-only one). */
  chunk(chunk: ChatCompletionChunk): MessagesEvent[] {
    const out: MessagesEvent[] = [];
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices[0] as JsonObject | undefined;
    if (choice === undefined) return out;
    const delta = (choice.delta ?? {}) as JsonObject & ReasoningFields;
    if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") {
      this.#piece({ type: "thinking" }, delta.reasoning_content, out);
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      this.#piece({ type: "text" }, delta.content, out);
    }
    if (typeof delta.refusal === "string" && delta.refusal !== "") {
      this.#piece({ type: "text" }, delta.refusal, out);
      this.#finish = "content_filter";
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const call of delta.tool_calls as JsonObject[]) this.#toolPiece(this.#calls.delta(call), out);
    }
    if (choice.finish_reason != null && this.#finish !== "content_filter") {
      this.#finish = choice.finish_reason;
    }
    if (typeof choice.stop_reason === "string") this.#matched = choice.stop_reason;
    return out;
  }

  /**
   * The end of a clean stream: the held blocks given, the last block stopped, `message_delta` with the real
   * usage, `message_stop`. A tool call that never got a name, or whose arguments are not one JSON object when
   * the answer was not cut off by the output limit, is the upstream's fault: the stream ends with an error
   * instead (as the whole answer is a 502), as no client can run it, and an SDK would run what its lenient
   * parser made of a cut-off `input`. So is a stream that ended (`[DONE]`) without a finish reason: not known
   * to have finished, it is given no stop reason, which the client and a cache would take as whole
   * ({@linkcode noFinishReason}).
   */
  finish(usage: Usage): MessagesEvent[] {
    if (this.#calls.nameless) {
      throw badGateway(`Provider "${this.frame.provider}" sent a tool call without a name.`);
    }
    if (this.#finish === null) throw noFinishReason(this.frame.provider);
    const out: MessagesEvent[] = [];
    for (const call of this.#calls.end()) this.#toolPiece(call, out);
    this.#release(out, true);
    this.#close(out);
    if (this.#badArgs && this.#finish !== "length") {
      throw badGateway(
        `Provider "${this.frame.provider}" gave tool call arguments that are not a JSON object.`,
      );
    }
    out.push({
      type: "message_delta",
      delta: stopOf(this.#finish, this.#matched, this.frame.stopSequences, this.#calls.anyStarted),
      usage: messagesUsage(usage),
    });
    out.push({ type: "message_stop" });
    return out;
  }
}

/** What the stream learnt by the time it ended, for the access log and usage records. */
export interface MessagesStreamOutcome extends StreamOutcome {
  usage?: Usage;
}

/** How long the upstream may be silent before the client gets a `ping`. */
export const PING_INTERVAL_MS = 10_000;

/** Several events as one write: the events of one upstream chunk go out together, at once. */
export function encodeMessagesEvents(list: readonly MessagesEvent[]): Uint8Array {
  return list.length === 1 ? encodeMessagesEvent(list[0]) : concatBytes(list.map(encodeMessagesEvent));
}

/**
 * The client-facing body of a streamed Message. `inputTokens` goes into `message_start`; `countUsage` gives the
 * usage for `message_delta` when the upstream reported none. `onEnd` runs exactly once, however the stream
 * ends, after the lease is released.
 */
export function messagesStreamBody(
  stream: Peeked<ChatCompletionChunk>,
  options: StreamEnding<MessagesStreamOutcome> & {
    frame: MessageFrame;
    inputTokens: number;
    countUsage: (texts: StreamTexts) => Promise<Usage>;
    /** Silence before a `ping` (default {@linkcode PING_INTERVAL_MS}). */
    pingMs?: number;
  },
): ReadableStream<Uint8Array> {
  const events = new MessageEvents(options.frame);
  const outcome: MessagesStreamOutcome = { end: "ok", texts: events.texts };
  let started = false;
  return clientStreamBody(stream, outcome, options, {
    idle: { afterMs: options.pingMs ?? PING_INTERVAL_MS, event: encodeMessagesEvent(PING) },
    beforeEnd: () => {
      outcome.usage = events.usage;
    },
    pull: eachValue({
      value(chunk) {
        if (started) {
          const list = events.chunk(chunk);
          return list.length > 0 ? [encodeMessagesEvents(list)] : [];
        }
        // message_start goes out at once, with what the chunk routing waited for.
        started = true;
        return [encodeMessagesEvents([...events.start(options.inputTokens), ...events.chunk(chunk)])];
      },
      async finish() {
        const usage = events.usage ?? await options.countUsage(events.texts);
        return [encodeMessagesEvents(events.finish(usage))];
      },
    }),
    fail: (controller, error) => controller.enqueue(encodeMessagesEvent(errorEvent(error))),
  });
}
