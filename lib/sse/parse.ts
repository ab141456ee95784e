/**
 * Server-sent events in: bytes from an upstream become {@linkcode SseEvent}s, following the WHATWG
 * EventSource parsing rules (HTML § 9.2.6) so that any upstream that a browser could read, we can read.
 *
 * @module
 */

import { badGateway } from "../errors.ts";
import { utf8Length } from "../encoding/utf8_length.ts";
import type { SyncTransformer } from "../streams/pull_through.ts";

/** One dispatched server-sent event. */
export interface SseEvent {
  /** The `event:` field of this event; absent when the event had none (a browser would call it "message"). */
  event?: string;
  /** The `data:` lines of this event joined with "\n". */
  data: string;
  /**
   * The last event ID, as EventSource keeps it: set by an `id:` field and kept for later events until another
   * `id:` field changes it. Absent while it is empty.
   */
  id?: string;
  /** The `retry:` value (milliseconds) when this event's block had a valid one. */
  retry?: number;
}

/** Options for {@linkcode sseParseTransformer}. */
export interface SseParseOptions {
  /**
   * The largest event accepted, in UTF-8 bytes of its field lines (line ends and comments not counted).
   * A bigger one errors the stream with a 502 `upstream_response_too_large` (an upstream fault: routing
   * retries it and counts it against the target), so a hostile or broken upstream cannot make the gateway
   * buffer without bound. Default 16 MiB; the gateway passes `server.upstream_limits.max_event_size`.
   */
  maxEventBytes?: number;
  /** The provider's name in config, for the error message. */
  provider?: string;
}

/** 16 MiB: far above any real chat chunk, far below what would hurt the process. */
export const DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024;

/**
 * Parses a byte stream of server-sent events into {@linkcode SseEvent}s.
 *
 * - Lines end with LF, CRLF or CR; a CR that ends one chunk and an LF that starts the next are one line end.
 * - A leading BOM is dropped and UTF-8 is decoded in streaming mode, so characters split across chunks survive.
 * - `field: value` and `field:value` are the same; `:` lines are comments (keep-alive pings) and are skipped.
 * - An event is dispatched at a blank line, and only if it had at least one `data` line.
 * - Each event is enqueued as soon as its blank line has been read, not when the chunk or the stream ends.
 *
 * Deviation from the standard: at the end of the stream a final event whose blank line never came is still
 * dispatched (EventSource would drop it). Upstreams that forget the last blank line should not lose their
 * last event.
 *
 * Each chunk is scanned once from where the previous one stopped, and a partial line is kept as a short list
 * of pieces joined when its end arrives, so a big event that trickles in one byte at a time costs
 * O(n log n) at worst instead of quadratic rescanning and copying. Comment lines are never buffered.
 */
export function sseParseTransformer(options: SseParseOptions = {}): SyncTransformer<Uint8Array, SseEvent> {
  const parser = new SseLineParser(options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES, options.provider);
  const decoder = new TextDecoder("utf-8");
  return {
    transform(chunk, controller) {
      parser.push(decoder.decode(chunk, { stream: true }), (e) => controller.enqueue(e));
    },
    flush(controller) {
      const emit = (e: SseEvent) => controller.enqueue(e);
      parser.push(decoder.decode(), emit);
      parser.end(emit);
    },
  };
}

/** The text-level state machine behind {@linkcode sseParseTransformer}; one instance per stream. */
class SseLineParser {
  readonly #maxEventBytes: number;
  /** Per instance: a global regex carries `lastIndex`, so sharing one between streams would be fragile. */
  readonly #lineEnd = /\r\n|\r|\n/g;
  /** Pieces of the line that has started but not yet ended. */
  #pending: string[] = [];
  /** Whether the pending line is a comment; `undefined` while the pending line is still empty. */
  #pendingIsComment: boolean | undefined = undefined;
  /** The previous text ended with CR, so an LF at the start of the next one belongs to that line end. */
  #skipLf = false;
  /** UTF-8 bytes of the field lines of the event being read, for the size limit. */
  #eventBytes = 0;
  #data: string[] = [];
  #eventType: string | undefined = undefined;
  #retry: number | undefined = undefined;
  #lastEventId = "";

  readonly #provider: string | undefined;

  constructor(maxEventBytes: number, provider?: string) {
    this.#maxEventBytes = maxEventBytes;
    this.#provider = provider;
  }

  /** Feeds decoded text; complete events are passed to `emit` in order. */
  push(text: string, emit: (event: SseEvent) => void): void {
    let start = 0;
    if (this.#skipLf) {
      if (text.length === 0) return;
      this.#skipLf = false;
      if (text.charCodeAt(0) === 0x0a) start = 1;
    }
    const lineEnd = this.#lineEnd;
    lineEnd.lastIndex = start;
    for (let m = lineEnd.exec(text); m !== null; m = lineEnd.exec(text)) {
      this.#append(text, start, m.index);
      this.#endLine(emit);
      start = lineEnd.lastIndex;
      // A CR at the very end may be the first half of a CRLF split across chunks.
      if (start === text.length && m[0] === "\r") this.#skipLf = true;
    }
    this.#append(text, start, text.length);
  }

  /** Ends the stream: a last unterminated line is a line, and a last event without its blank line is sent. */
  end(emit: (event: SseEvent) => void): void {
    if (this.#pendingIsComment !== undefined) this.#endLine(emit);
    this.#dispatch(emit);
  }

  /** Adds `text[from, to)` to the pending line; comment text is dropped instead of buffered. */
  #append(text: string, from: number, to: number): void {
    if (from >= to) return;
    if (this.#pendingIsComment === undefined) this.#pendingIsComment = text.charCodeAt(from) === 0x3a; // ":"
    if (this.#pendingIsComment) return;
    this.#eventBytes += utf8Length(text, from, to);
    if (this.#eventBytes > this.#maxEventBytes) {
      const who = this.#provider === undefined ? "The upstream" : `Provider "${this.#provider}"`;
      throw badGateway(
        `${who} sent a stream event larger than the gateway's limit of ${this.#maxEventBytes} bytes ` +
          "(server.upstream_limits.max_event_size).",
        "upstream_response_too_large",
      );
    }
    const pending = this.#pending;
    pending.push(from === 0 && to === text.length ? text : text.slice(from, to));
    // Merge neighbours of similar size (flat, via join) so that a line trickling in one byte per chunk is
    // held in O(log n) strings, each byte copied O(log n) times, not in millions of tiny strings.
    while (
      pending.length > 1 && pending[pending.length - 2].length <= 2 * pending[pending.length - 1].length
    ) {
      const last = pending.pop() as string;
      pending[pending.length - 1] = [pending[pending.length - 1], last].join("");
    }
  }

  #endLine(emit: (event: SseEvent) => void): void {
    const isComment = this.#pendingIsComment;
    const line = this.#pending.length === 1 ? this.#pending[0] : this.#pending.join("");
    this.#pending = [];
    this.#pendingIsComment = undefined;
    if (isComment) return;
    if (isComment === undefined) {
      this.#dispatch(emit);
      return;
    }
    this.#field(line);
  }

  #field(line: string): void {
    const colon = line.indexOf(":");
    let name = line;
    let value = "";
    if (colon !== -1) {
      name = line.slice(0, colon);
      value = line.charCodeAt(colon + 1) === 0x20 ? line.slice(colon + 2) : line.slice(colon + 1);
    }
    switch (name) {
      case "data":
        this.#data.push(value);
        break;
      case "event":
        this.#eventType = value;
        break;
      case "id":
        if (!value.includes("\0")) this.#lastEventId = value;
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) this.#retry = Number(value);
        break;
      default:
        // Unknown fields are ignored, as the standard says.
    }
  }

  /** Sends the event being read, if it has data, and starts a new one. */
  #dispatch(emit: (event: SseEvent) => void): void {
    const data = this.#data;
    const eventType = this.#eventType;
    const retry = this.#retry;
    this.#data = [];
    this.#eventType = undefined;
    this.#retry = undefined;
    this.#eventBytes = 0;
    if (data.length === 0) return;
    const event: SseEvent = { data: data.length === 1 ? data[0] : data.join("\n") };
    if (eventType !== undefined && eventType !== "") event.event = eventType;
    if (this.#lastEventId !== "") event.id = this.#lastEventId;
    if (retry !== undefined) event.retry = retry;
    emit(event);
  }
}
