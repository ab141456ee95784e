/**
 * The Responses API over a WebSocket (`GET /v1/responses` with `Upgrade: websocket`, OpenAI's "WebSocket
 * mode"). The handshake is authenticated like any request (a bad token is refused with the usual 401 before
 * upgrading). The client then sends `{"type": "response.create", ...}` text messages, each with the fields of
 * a `POST /v1/responses` body (`stream` is implied); each is answered, in turn, with exactly the events that
 * body gets over SSE, one JSON text message per event (a failure mid-stream's `error` event in the WebSocket
 * mode's form: {@linkcode asWebSocketEvent}), or with one error event:
 * `{"type": "error", "status": <HTTP status>, "error": {"type", "code", "message", "param"}}`.
 * A message that is not a `response.create` is a request too, answered with its 400 error event.
 *
 * `stream_id`, the one envelope field besides `type` and `generate` (the reference's
 * `ResponsesClientEventResponseCreate`: 1 to 256 of `A-Za-z0-9_.-`, WebSocket-only, not part of the POST body),
 * names the client's lane for the response: it is taken off the body and echoed on every event of that answer,
 * its error event included. Lanes need no scheduling of their own here: every message is answered in turn, so
 * the messages of one lane are too.
 *
 * Every message is a request of its own: it becomes a `POST /v1/responses` with the handshake's headers
 * (lib/http/frame_request.ts) and runs through the gateway's request handling with this API's own handler, so
 * authentication, scopes, limits, budgets, content rules, stored responses, `previous_response_id`, native
 * and translated aliases and its one usage record (endpoint `responses`, streamed) are those of a streamed
 * POST. `generate: false` is a prewarm (prewarm.ts). The handshake itself is not counted as a request.
 *
 * Messages are answered one at a time; one sent while another is answered waits (lib/http/serial_session.ts
 * bounds the wait, the idle time, the unread output and the connection's duration). Closing the socket aborts
 * the answer in progress; the messages still waiting are refused unanswered, each recorded with why (its
 * connection's end). A message is numbered, and known to the in-flight registry, from its arrival
 * (`MessageDispatch.waiting`), so a worker of `serve --workers N` that dies with it waiting has it recorded too.
 * An answer's record waits for its events to be sent (`awaitingDelivery`): its stream ends when its last events
 * are queued, and a client gone before they were sent did not get `response.completed`.
 *
 * A connection lasts at most `server.connections.websocket_max_duration` (60 minutes, as OpenAI's), however
 * often its client sends. Then the client gets OpenAI's error event for it ({@linkcode durationLimitEvent}:
 * 400 `websocket_connection_limit_reached`, "create a new websocket connection to continue") and the close
 * frame (1000). An answer in progress is let finish first, for at most `websocket_max_duration_grace`.
 *
 * @module
 */
import { acceptWebSocket, type ClientRequest, MAX_WEBSOCKET_MESSAGE_BYTES } from "../../runtime/types.ts";
import { CLIENT_CAUSED_ENDS, ClientGoneError, GatewayError } from "../../errors.ts";
import type { ClientContext } from "../../http/context.ts";
import {
  awaitingDelivery,
  handshakeOf,
  type MessageDispatch,
  type MessageHandler,
  messageRequest,
  messageRequestId,
} from "../../http/frame_request.ts";
import { jsonDepthExceeds } from "../../http/json_depth.ts";
import { jsonTooDeep } from "../../http/read_json_body.ts";
import { serialSession } from "../../http/serial_session.ts";
import { relaySse } from "../../http/sse_relay.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { handleResponses } from "./create.ts";
import { handleResponsesPrewarm } from "./prewarm.ts";
import { connectionResponses } from "./connection_responses.ts";
import { streamErrorEvent } from "./stream_events.ts";
import { MAX_CHAIN_BYTES } from "../../usage/responses_store.ts";

/** Messages that may wait while one is answered; one more closes the connection (1008). */
export const MAX_QUEUED_MESSAGES = 4;

/** The only client event of the mode. */
const CREATE = "response.create";

/** An error event, as OpenAI's WebSocket mode sends for a request that fails before its stream starts. */
export function errorEvent(status: number, error: JsonObject): string {
  return JSON.stringify({
    type: "error",
    status,
    error: {
      type: error.type ?? "invalid_request_error",
      code: error.code ?? null,
      message: error.message ?? "",
      param: error.param ?? null,
    },
  });
}

/** How a response stream's `error` event begins, as its SSE body writes it (`encodeEvent`: `type` first). */
const STREAM_ERROR = '{"type":"error",';

/**
 * A response stream's event as the WebSocket mode sends it: as over SSE, but an `error` event carried flat
 * (`code`, `message`, `param`: the spec's `ResponseErrorEvent`, as an OpenAI-compatible upstream passed
 * through natively may send it) gets the `error` object too (`ResponseWsError`, like the error event of a
 * request refused before its stream: {@linkcode errorEvent}; the gateway's own failure events carry both
 * already: `streamErrorEvent`), beside the stream's `sequence_number` and without a `status` (the response
 * failed, not the request: Codex reads an error event with a status as the request's HTTP failure).
 */
export function asWebSocketEvent(event: string): string {
  if (!event.startsWith(STREAM_ERROR)) return event;
  let parsed: unknown;
  try {
    parsed = JSON.parse(event);
  } catch {
    return event;
  }
  if (!isObject(parsed) || typeof parsed.message !== "string" || parsed.error !== undefined) return event;
  const { sequence_number, code, message, param } = parsed;
  const { type, ...rest } = streamErrorEvent(code, message, param);
  return JSON.stringify({ type, sequence_number, ...rest });
}

/** How a duration reads in the limit's message: OpenAI's says "(60 minutes)". */
function spoken(ms: number): string {
  const [n, unit] = ms % 60_000 === 0
    ? [ms / 60_000, "minute"]
    : ms % 1000 === 0
    ? [ms / 1000, "second"]
    : [ms, "millisecond"];
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}

/**
 * The error event a connection gets when it has lasted `maxMs`, worded as OpenAI's (its WebSocket mode guide):
 * a connection's, so without a `stream_id`. Clients such as Codex read its code and open a new connection.
 */
export function durationLimitEvent(maxMs: number): string {
  const end = CLIENT_CAUSED_ENDS.maxDuration;
  const message = `Responses websocket connection limit reached (${spoken(maxMs)}). ` +
    "Create a new websocket connection to continue.";
  return errorEvent(end.status, { type: "invalid_request_error", code: end.code, message });
}

function invalid(message: string, code: string, param: string | null = null): GatewayError {
  return new GatewayError(400, message, { type: "invalid_request_error", code, param });
}

/** A `stream_id` the reference allows: 1 to 256 letters, digits, `_`, `.` and `-`. */
const STREAM_ID = /^[A-Za-z0-9_.-]{1,256}$/;

/** `event` (a JSON object's text) with `stream_id` added, as every event of a message that named one has it. */
export function withStreamId(event: string, streamId: string): string {
  const end = event.lastIndexOf("}");
  if (end < 0 || !event.trimStart().startsWith("{")) return event;
  // Spliced rather than parsed and written again: a `response.completed` event holds the whole output.
  const head = event.slice(0, end).trimEnd();
  return `${head}${head.endsWith("{") ? "" : ","}"stream_id":${JSON.stringify(streamId)}}`;
}

/**
 * What a message asks for: a request body and its handler, or the client's mistake that answers it; with the
 * lane its events are echoed on, when it named a valid one.
 */
export type ParsedMessage =
  & ({ body: JsonObject; handler: MessageHandler } | { error: GatewayError })
  & { streamId?: string };

/**
 * Reads a client message: a `response.create` event becomes a streamed Responses body. Its nesting is bounded
 * by `maxDepth` (`server.max_json_depth`) on the raw text before it is parsed, as a POST body's is: a message
 * nested millions of levels deep would otherwise hold the event loop for seconds in parsing and writing it
 * again (Deno), or overflow the stack (Bun).
 */
export function parseMessage(data: string | Uint8Array, maxDepth: number): ParsedMessage {
  if (typeof data !== "string") {
    return {
      error: invalid("Binary messages are not supported; send JSON events as text.", "invalid_message"),
    };
  }
  if (jsonDepthExceeds(data, maxDepth)) return { error: jsonTooDeep(maxDepth) };
  let event: unknown;
  try {
    event = JSON.parse(data);
  } catch {
    return { error: invalid("The message is not valid JSON.", "invalid_json") };
  }
  if (!isObject(event)) return { error: invalid("The message must be a JSON object.", "invalid_message") };
  const { type, generate, stream_id: streamId, ...body } = event;
  if (type !== CREATE) {
    const shown = typeof type === "string" ? `'${type.slice(0, 64)}'` : "missing";
    return {
      error: invalid(`Unsupported event type (${shown}); send '${CREATE}'.`, "invalid_value", "type"),
    };
  }
  if (streamId !== undefined && typeof streamId !== "string") {
    return {
      error: invalid("Invalid type for 'stream_id': expected a string.", "invalid_type", "stream_id"),
    };
  }
  if (streamId !== undefined && !STREAM_ID.test(streamId)) {
    const message =
      "Invalid 'stream_id': expected 1 to 256 characters, each a letter, a digit, '_', '.' or '-'.";
    return { error: invalid(message, "invalid_value", "stream_id") };
  }
  const lane = streamId === undefined ? {} : { streamId };
  if (generate !== undefined && typeof generate !== "boolean") {
    return {
      error: invalid("Invalid type for 'generate': expected a boolean.", "invalid_type", "generate"),
      ...lane,
    };
  }
  // Over a WebSocket every answer is a stream, whatever the message says.
  body.stream = true;
  return { body, handler: generate === false ? handleResponsesPrewarm : handleResponses, ...lane };
}

/** What a message's request is made of: its body, its handler, and how its events reach the client. */
interface MessageParts {
  body: string;
  handler: MessageHandler;
  send: (text: string) => Promise<void>;
}

/**
 * The request a message makes. A message that is no `response.create` is a request too, refused with its
 * 400: recorded and logged once, as the same mistake in a POST would be. So is one whose reading fails in any
 * other way: the failure is its request's (a 500, logged and recorded), not the connection's, which stays
 * open; a message never ends without its record.
 */
function messageParts(
  data: string | Uint8Array,
  maxDepth: number,
  sendText: (text: string) => Promise<void>,
): MessageParts {
  try {
    const parsed = parseMessage(data, maxDepth);
    const { streamId } = parsed;
    const send = streamId === undefined ? sendText : (text: string) => sendText(withStreamId(text, streamId));
    if ("error" in parsed) return { body: "", handler: refusal(parsed.error), send };
    return { body: JSON.stringify(parsed.body), handler: parsed.handler, send };
  } catch (error) {
    return { body: "", handler: () => Promise.reject(error), send: sendText };
  }
}

/** The signal of a dropped message's request: it is refused at once, and nothing of it is left to abort. */
const NOT_ABORTED = new AbortController().signal;

/** The handler of a message that could not be read, or was dropped: it refuses the request with `error`. */
function refusal(error: GatewayError): MessageHandler {
  return () => Promise.reject(error);
}

/** Why a message's relay was stopped: the reason its connection ended with (serial_session.ts aborts with one). */
function cutShort(signal: AbortSignal): GatewayError {
  return signal.reason instanceof GatewayError ? signal.reason : new ClientGoneError();
}

/** The error event of a request that was answered with a JSON error instead of a stream. */
async function errorOf(response: Response): Promise<string> {
  const body: unknown = await response.json().catch(() => null);
  const error = isObject(body) && isObject(body.error)
    ? body.error
    : { type: "server_error", code: null, message: "The gateway gave no answer.", param: null };
  return errorEvent(response.status, error);
}

/** A message as it waits its turn: its data, its number on the connection, and the call that ends its waiting. */
interface Waiting {
  readonly data: string | Uint8Array;
  readonly n: number;
  readonly started: () => void;
}

/** Accepts a WebSocket on `/v1/responses` for an authenticated handshake. */
export function handleResponsesWebSocket(
  request: ClientRequest,
  ctx: ClientContext,
  dispatch: MessageDispatch,
): Response {
  // The handshake is logged, but each message is the request that is counted.
  ctx.record.endpoint = undefined;
  const handshake = handshakeOf(request, ctx.requestId);
  const server = ctx.state.config.server;
  const { connections } = server;
  let count = 0;
  // The connection's `store: false` responses stay chainable by its next messages (connection_responses.ts).
  // The longest conversation it keeps is the longest `previous_response_id` rebuilds from the store.
  const responses = connectionResponses(ctx.services.responses, MAX_CHAIN_BYTES);
  const session = serialSession({
    // The edges buffer a message whole: at most the client's body limit, and never past their common cap.
    maxMessageBytes: Math.min(server.max_body_size, MAX_WEBSOCKET_MESSAGE_BYTES),
    maxQueued: MAX_QUEUED_MESSAGES,
    idleTimeoutMs: connections.keep_alive_timeout,
    sendTimeoutMs: connections.send_timeout,
    maxDurationMs: connections.websocket_max_duration,
    durationGraceMs: connections.websocket_max_duration_grace,
    durationEvent: durationLimitEvent(connections.websocket_max_duration),
    // Why a connection ended after an hour is worth a line: the access log has only its handshake.
    onMaxDuration(answering) {
      ctx.logger.info("websocket_max_duration", {
        request_id: handshake.requestId,
        max_duration_ms: connections.websocket_max_duration,
        answering,
      });
    },
    // Numbered as it arrives, and known to the gateway from then on (not from its turn): a worker of
    // `serve --workers N` that dies with it waiting has it recorded as failed, as its message in progress.
    received(data): Waiting {
      const n = ++count;
      const started = dispatch.waiting({
        request_id: messageRequestId(handshake, n),
        method: "POST",
        path: ctx.record.path,
        token: ctx.record.token ?? null,
        environment: ctx.record.environment ?? null,
      });
      return { data, n, started };
    },
    async answer({ data, n, started }, sendText, signal) {
      // The message's record waits for its events to be sent, and says so when the connection ended first.
      const delivery = Promise.withResolvers<GatewayError | undefined>();
      try {
        const { body, handler, send } = messageParts(data, server.max_json_depth, sendText);
        const frameRequest = messageRequest(handshake, n, body, signal);
        const answered = dispatch(frameRequest, awaitingDelivery(handler, delivery.promise), { responses });
        // Registered in flight by now, in this turn: it waits no more.
        started();
        const response = await answered;
        const type = response.headers.get("content-type") ?? "";
        if (response.body === null || !type.startsWith("text/event-stream")) {
          return await send(await errorOf(response));
        }
        // Every event as SSE sends it, however big: a `response.completed` holds the whole output.
        const whole = await relaySse(response.body, (event) => send(asWebSocketEvent(event)), signal);
        if (!whole) delivery.resolve(cutShort(signal));
      } finally {
        started();
        delivery.resolve(undefined);
      }
    },
    // A message the connection's end left unanswered is a request refused with why: recorded and logged once.
    dropped({ n, started }, error) {
      const frameRequest = messageRequest(handshake, n, "", NOT_ABORTED);
      void dispatch(frameRequest, refusal(error), { responses }).then((r) => r.body?.cancel(), () => {});
      started();
    },
  });
  return acceptWebSocket(session);
}
