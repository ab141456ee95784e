/**
 * A WebSocket session that answers its client's messages one at a time, in the order they came: the shape of
 * an API whose messages are requests (Responses' `response.create`). A message that arrives while another is
 * answered waits its turn, so the answers' events never interleave and a later message can build on an
 * earlier answer (`previous_response_id`). Everything a connection holds is bounded:
 *
 * - messages waiting: at most `maxQueued`; one more closes the connection with 1008 (a client that sends
 *   without reading is not waiting for answers, and its messages would each hold up to the body size limit);
 * - message size: `maxMessageBytes`, enforced by the runtime edge (1009);
 * - idle time: closed with 1000 after `idleTimeoutMs` without a message while nothing is being answered;
 * - unread output: sending waits while more than {@linkcode HIGH_WATER_BYTES} are queued for the client; a
 *   client that takes none of them for `sendTimeoutMs` (`server.connections.send_timeout`, as over HTTP) has
 *   its answer aborted and the connection closed with 1008. Without that deadline a client that stops reading
 *   would hold the answer, its upstream call and its concurrency slot, unrecorded, until it closed the socket;
 * - the connection's duration: `maxDurationMs` from its opening (OpenAI's WebSocket mode lasts 60 minutes), also
 *   for a client that sends often enough never to be idle. Then the client gets `durationEvent` (the API's own
 *   error) and the connection is closed with 1000. An answer in progress then is let finish first, for at most
 *   `durationGraceMs` (past it, it is ended like the connection, so the client gets that event after the
 *   failure, never a clean end); the messages waiting, and those sent meanwhile, are dropped with why.
 *
 * A client that goes away, or a connection the session closes itself, aborts the answer in progress at once
 * (its signal; the gateway request it made is cancelled and its upstream call aborted), and the waiting
 * messages are dropped unanswered. Each of those is still a request: the abort reason (a
 * {@linkcode ClientGoneError}) and the error each dropped message is given to `dropped` with say why the
 * connection ended, so every message leaves one record that tells it (`client_closed_request` when the client
 * left, `websocket_queue_full`, …).
 *
 * @module
 */
import { CLIENT_CAUSED_ENDS, ClientGoneError, type ConnectionEnd, type GatewayError } from "../errors.ts";
import type { WebSocketPeer, WebSocketSession } from "../runtime/types.ts";
import { serverShuttingDown } from "./in_flight.ts";

/** Bytes queued for a client above which sending waits for it to read. */
export const HIGH_WATER_BYTES = 1024 * 1024;
/** How often a waiting sender looks whether the client has read (the edges have no drain event in common). */
const DRAIN_POLL_MS = 10;

/** Options of {@linkcode serialSession}; `M` is what a message is while it waits its turn (`received`). */
export interface SerialSessionOptions<M = string | Uint8Array> {
  maxMessageBytes: number;
  maxQueued: number;
  idleTimeoutMs: number;
  /** How long a client may take none of the unread output before its answer is aborted (1008). */
  sendTimeoutMs: number;
  /** The longest the connection lasts, from its opening; then it is closed with 1000 after `durationEvent`. */
  maxDurationMs: number;
  /** How long an answer in progress at `maxDurationMs` may still take before it is ended. */
  durationGraceMs: number;
  /** What the client gets just before the close frame when the connection has lasted its time. */
  durationEvent: string;
  /** Told when `maxDurationMs` is reached, and whether an answer is in progress (to be let finish). */
  onMaxDuration?(answering: boolean): void;
  /**
   * Each message as it arrives, in order, before it waits its turn: what `answer` or `dropped` is given for it. A
   * session whose messages are requests numbers each here and tells the gateway of it at once, so that one still
   * waiting when its thread dies is known (and recorded) all the same.
   */
  received(message: string | Uint8Array): M;
  /**
   * Answers one message through `send` (which resolves when the client can take more); resolves when the
   * answer is complete. `signal` aborts when the connection ends, whichever side closes it. A rejection closes
   * the connection (1011).
   */
  answer(
    message: M,
    send: (text: string) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void>;
  /**
   * A message dropped unanswered (the connection ended before its turn, or it was one too many), with the
   * error that ends it: it is a request all the same, to be recorded. Nothing can be sent for it.
   */
  dropped(message: M, error: GatewayError): void;
}

/** A reason the session closes a connection itself. */
interface Closing {
  /** The WebSocket close code and reason. */
  readonly close: number;
  readonly reason: string;
  /** What the records of the requests it cuts short say; without it, what a client's leaving does. */
  readonly ends?: ConnectionEnd;
}

/** Why the session closes a connection itself. */
export const CLOSE = {
  idle: { close: 1000, reason: "The connection was idle for too long." },
  queueFull: {
    close: 1008,
    reason: "Too many messages are waiting; send the next one after the previous answer.",
    ends: CLIENT_CAUSED_ENDS.queueFull,
  },
  // As a stream over HTTP whose client takes none of it: `client_closed_request` (docs/configuration.md).
  stalled: { close: 1008, reason: "The client took none of the answer for too long." },
  shutdown: { close: 1001, reason: "The server is shutting down." },
  maxDuration: {
    close: 1000,
    reason: "The connection reached its maximum duration; open a new one.",
    ends: CLIENT_CAUSED_ENDS.maxDuration,
  },
  failed: {
    close: 1011,
    reason: "The answer failed.",
    ends: {
      status: 500,
      code: "internal_error",
      message: "An answer on the WebSocket failed: the gateway closed it (1011).",
    },
  },
} as const satisfies Record<string, Closing>;

/** A session answering messages in turn with `options.answer`. */
export function serialSession<M>(options: SerialSessionOptions<M>): WebSocketSession {
  let peer: WebSocketPeer | null = null;
  let closed = false;
  let draining = false;
  let busy = false;
  /** The connection has lasted its time: it ends once the answer in progress does. */
  let expired = false;
  let current: AbortController | null = null;
  const queue: M[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** The duration limit's timer, then its grace's. */
  let lifetime: ReturnType<typeof setTimeout> | undefined;

  /** Drops the messages waiting, each recorded as ended by `error`, in the order they came. */
  const drop = (error: GatewayError) => {
    for (const message of queue.splice(0)) options.dropped(message, error);
  };
  /** The connection is over: the answer in progress is aborted and the messages waiting dropped. */
  const end = (error: ClientGoneError) => {
    closed = true;
    clearTimeout(timer);
    clearTimeout(lifetime);
    current?.abort(error);
    drop(error);
  };
  /** Closes the connection for `why`, after `last` when given (the edges send frames in order). */
  const close = (why: Closing, last?: string) => {
    if (closed) return;
    // Nothing more of the answer in progress can reach the client: it is aborted now, not when the client has
    // answered the close frame (an edge may learn of the end only then, or after its own timeout).
    end(new ClientGoneError(why.ends));
    if (last !== undefined) peer?.send(last);
    peer?.close(why.close, why.reason);
  };
  const expire = () => close(CLOSE.maxDuration, options.durationEvent);
  /** The connection has lasted `maxDurationMs`: closed now, or once the answer in progress is over. */
  const lasted = () => {
    expired = true;
    options.onMaxDuration?.(busy);
    if (!busy) return expire();
    // Let finish, but not for ever: past the grace the answer is ended like the connection.
    lifetime = setTimeout(expire, options.durationGraceMs);
  };
  const idle = () => {
    clearTimeout(timer);
    if (draining) return close(CLOSE.shutdown);
    timer = setTimeout(() => close(CLOSE.idle), options.idleTimeoutMs);
  };
  const send = async (text: string): Promise<void> => {
    if (closed || peer === null) return;
    peer.send(text);
    // The deadline restarts whenever the client takes some of the output: only a client taking none is cut.
    let unread = peer.bufferedAmount;
    let since = performance.now();
    while (!closed && unread > HIGH_WATER_BYTES) {
      if (performance.now() - since >= options.sendTimeoutMs) return close(CLOSE.stalled);
      await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
      const now = peer.bufferedAmount;
      if (now < unread) since = performance.now();
      unread = now;
    }
  };
  const next = async () => {
    busy = true;
    while (!closed && !expired && queue.length > 0) {
      const message = queue.shift()!;
      current = new AbortController();
      try {
        await options.answer(message, send, current.signal);
      } catch {
        close(CLOSE.failed);
      }
      current = null;
    }
    busy = false;
    if (closed) return;
    if (expired) return expire();
    idle();
  };

  return {
    maxMessageBytes: options.maxMessageBytes,
    open(p) {
      peer = p;
      if (closed) return p.close(CLOSE.shutdown.close, CLOSE.shutdown.reason);
      lifetime = setTimeout(lasted, options.maxDurationMs);
      idle();
    },
    message(data) {
      if (closed) return;
      // Not answered, but recorded: every message the client sent leaves its usage record.
      if (draining) return options.dropped(options.received(data), serverShuttingDown());
      const full = queue.length >= options.maxQueued;
      clearTimeout(timer);
      // One too many is dropped with those waiting, after them.
      queue.push(options.received(data));
      if (full) return close(CLOSE.queueFull);
      if (!busy) void next();
    },
    closed(code) {
      // A 1009 is the edge refusing a message too big; any other end is the client's.
      end(new ClientGoneError(code === 1009 ? CLIENT_CAUSED_ENDS.tooBig : undefined));
    },
    shutdown() {
      draining = true;
      // Messages not yet begun are dropped; the one being answered is let finish (the grace period bounds it).
      drop(serverShuttingDown());
      if (!busy) close(CLOSE.shutdown);
    },
  };
}
