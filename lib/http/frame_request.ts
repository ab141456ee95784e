/**
 * A request that arrives as a WebSocket message becomes an ordinary HTTP request of the gateway: the
 * handshake's headers (its credential, its `OpenAI-*` and other client headers) and URL, with the message as
 * its JSON body. Running it through the gateway's normal request handling is what makes every message a
 * request of its own (authentication, scopes, limits, budgets, content rules, one usage record), with no
 * second implementation of any of them.
 *
 * @module
 */
import type { GatewayError } from "../errors.ts";
import type { Answer, Outcome } from "./accounting.ts";
import type { ClientContext, GatewayServices } from "./context.ts";
import type { InFlightSubject } from "./in_flight.ts";
import type { ClientRequest } from "../runtime/types.ts";

/** A client route's handler, as a message's request is answered by it. */
export type MessageHandler = (request: ClientRequest, ctx: ClientContext) => Promise<Answer>;

/**
 * Runs a message's request through the gateway's normal request handling (its own request id, the in-flight
 * registry, authentication, the error boundary, one report when it is over) with `handler` as its route's
 * handler; given by the server to a route that accepts a WebSocket. `services` replaces some of the gateway's
 * services for this request (a connection's own view of the responses store). The request is registered in
 * flight before the call returns.
 */
export interface MessageDispatch {
  (request: ClientRequest, handler: MessageHandler, services?: Partial<GatewayServices>): Promise<Response>;
  /**
   * Tells the in-flight registry of a message that waits its turn (`InFlightRequests.waiting`); the call it
   * returns is made once the message's request is dispatched, in the same turn, or dropped.
   */
  waiting(subject: InFlightSubject): () => void;
}

/**
 * `handler`, whose streamed answer is settled only once its events were sent: `delivered` resolves when the
 * message's relay is over, with why the connection ended first when it did (its abort reason). A stream's body
 * ends when its last events are queued, before the relay has sent them to the socket; a record written then
 * would call an answer whose client left without its final events (`response.completed`) clean. The answer
 * keeps its own failure when it had one; otherwise its record says why the connection ended, as a stream's
 * whose HTTP client went away does (`client_closed_request`, or the gateway's own reason for closing). An
 * answer known at once (a JSON error, sent as one message) is settled as it is.
 */
export function awaitingDelivery(
  handler: MessageHandler,
  delivered: Promise<GatewayError | undefined>,
): MessageHandler {
  return async (request, ctx) => {
    const answer = await handler(request, ctx);
    if (!(answer.outcome instanceof Promise)) return answer;
    // The answer ends when its events were sent, not when its body was pulled (nor when its tokens were
    // counted): its latency and spans end then.
    const sent = delivered.then((cut) => ({ cut, endedAt: performance.now() }));
    const outcome = Promise.all([answer.outcome, sent]).then(([outcome, { cut, endedAt }]): Outcome => {
      return cut === undefined || outcome.errorCode !== undefined
        ? { ...outcome, endedAt }
        : { ...outcome, endedAt, errorCode: cut.code ?? "client_closed_request" };
    });
    return { response: answer.response, outcome };
  };
}

/** Headers of the handshake that describe the connection or its body, not the client: never copied. */
const CONNECTION_HEADERS = [
  "connection",
  "upgrade",
  "sec-websocket-key",
  "sec-websocket-version",
  "sec-websocket-extensions",
  "sec-websocket-protocol",
  "content-length",
  "content-type",
  "transfer-encoding",
  "keep-alive",
  "x-request-id",
];

/** The longest request id a message request gets (the gateway keeps ids of at most 128 characters). */
const MAX_ID = 128;

/** What is kept of a WebSocket handshake, to build each message's request from. */
export interface Handshake {
  readonly url: string;
  readonly headers: Headers;
  /** The handshake's request id; message `n` is `<id>.<n>`, so its records and log lines can be found. */
  readonly requestId: string;
}

/** Keeps what the requests of a connection's messages need from its handshake. */
export function handshakeOf(request: ClientRequest, requestId: string): Handshake {
  const headers = new Headers(request.headers);
  for (const name of CONNECTION_HEADERS) headers.delete(name);
  headers.set("content-type", "application/json");
  return { url: request.url, headers, requestId };
}

/** The `n`th message's request id: the handshake's, and the message number (shortened to stay valid). */
export function messageRequestId(handshake: Handshake, n: number): string {
  const suffix = `.${n}`;
  return handshake.requestId.slice(0, MAX_ID - suffix.length) + suffix;
}

/** The request of the `n`th message: a `POST` of `body` to the handshake's URL, aborted by `signal`. */
export function messageRequest(handshake: Handshake, n: number, body: string, signal: AbortSignal): Request {
  const headers = new Headers(handshake.headers);
  headers.set("x-request-id", messageRequestId(handshake, n));
  return new Request(handshake.url, { method: "POST", headers, body, signal });
}
