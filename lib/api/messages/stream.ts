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
 * nothing is buffered and backpressure reaches the upstream.
 *
 * @module
 */
import type { ChatCompletionChunk, JsonObject, ReasoningFields, Usage } from "../../openai/types.ts";
import { concatBytes } from "../../streams/concat_bytes.ts";
import {
  clientStreamBody,
  eachValue,
  type Peeked,
  type StreamEnding,
  type StreamOutcome,
} from "../../answer/stream_body.ts";
import { type MessageFrame, messageObject, messagesUsage, newId, stopOf } from "./response.ts";
import { encodeMessagesEvent, errorEvent, type MessagesEvent, PING } from "./sse.ts";

/** The content block being streamed (text or thinking; tool calls are kept in `#calls`). */
interface OpenBlock {
  index: number;
  type: "text" | "thinking";
}

/**
 * Translates chat chunks into Messages events. Text and thinking blocks close as soon as another block
 * starts. Tool calls stay open until the stream ends: the chat form may interleave parallel calls' argument
 * deltas (index 0, 1, 0 …), and a closed block cannot take a late delta; each delta names its block's index.
 */
export class MessageEvents {
  #next = 0;
  #open: OpenBlock | undefined;
  /** Open tool_use blocks by their chat `index`, in the order they started. */
  #calls = new Map<number, number>();
  #finish: unknown = null;
  #matched: unknown = null;
  /** The upstream's usage, when it sent one. */
  usage: Usage | undefined;
  /** What the client received (thinking, text, arguments), to count tokens when no usage came. */
  readonly texts: string[] = [];

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
    if (this.#open === undefined) return;
    out.push({ type: "content_block_stop", index: this.#open.index });
    this.#open = undefined;
  }

  #delta(type: OpenBlock["type"], text: string, out: MessagesEvent[]): void {
    if (this.#open?.type !== type) {
      this.#close(out);
      this.#open = { index: this.#next++, type };
      const block = type === "text" ? { type, text: "" } : { type, thinking: "", signature: "" };
      out.push({ type: "content_block_start", index: this.#open.index, content_block: block });
    }
    this.texts.push(text);
    const delta = type === "text" ? { type: "text_delta", text } : { type: "thinking_delta", thinking: text };
    out.push({ type: "content_block_delta", index: this.#open.index, delta });
  }

  #toolDelta(call: JsonObject, out: MessagesEvent[]): void {
    const chatIndex = typeof call.index === "number" ? call.index : 0;
    const fn = (call.function ?? {}) as { name?: unknown; arguments?: unknown };
    let index = this.#calls.get(chatIndex);
    if (index === undefined) {
      this.#close(out);
      index = this.#next++;
      this.#calls.set(chatIndex, index);
      out.push({
        type: "content_block_start",
        index,
        content_block: {
          type: "tool_use",
          id: typeof call.id === "string" && call.id !== "" ? call.id : newId("toolu_"),
          name: typeof fn.name === "string" ? fn.name : "",
          input: {},
        },
      });
    }
    if (typeof fn.arguments === "string" && fn.arguments !== "") {
      this.texts.push(fn.arguments);
      out.push({
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: fn.arguments },
      });
    }
  }

  /** The events of one chat chunk (none for a chunk with nothing to show, e.g. the usage-only one). */
  chunk(chunk: ChatCompletionChunk): MessagesEvent[] {
    const out: MessagesEvent[] = [];
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices[0] as JsonObject | undefined;
    if (choice === undefined) return out;
    const delta = (choice.delta ?? {}) as JsonObject & ReasoningFields;
    if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") {
      this.#delta("thinking", delta.reasoning_content, out);
    }
    if (typeof delta.content === "string" && delta.content !== "") this.#delta("text", delta.content, out);
    if (typeof delta.refusal === "string" && delta.refusal !== "") {
      this.#delta("text", delta.refusal, out);
      this.#finish = "content_filter";
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const call of delta.tool_calls as JsonObject[]) this.#toolDelta(call, out);
    }
    if (choice.finish_reason != null && this.#finish !== "content_filter") {
      this.#finish = choice.finish_reason;
    }
    if (typeof choice.stop_reason === "string") this.#matched = choice.stop_reason;
    return out;
  }

  /** The end of a clean stream: open blocks stopped, `message_delta` with the real usage, `message_stop`. */
  finish(usage: Usage): MessagesEvent[] {
    const out: MessagesEvent[] = [];
    this.#close(out);
    for (const index of this.#calls.values()) out.push({ type: "content_block_stop", index });
    this.#calls.clear();
    out.push({
      type: "message_delta",
      delta: stopOf(this.#finish, this.#matched, this.frame.stopSequences),
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
    countUsage: (texts: string[]) => Promise<Usage>;
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
