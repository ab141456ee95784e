import assert from "node:assert/strict";
import { ClientGoneError, type GatewayError } from "../errors.ts";
import type { Outcome } from "./accounting.ts";
import type { ClientContext } from "./context.ts";
import {
  awaitingDelivery,
  handshakeOf,
  type MessageHandler,
  messageRequest,
  messageRequestId,
} from "./frame_request.ts";

Deno.test("messageRequest: a POST of the message with the handshake's client headers, not its connection's", async () => {
  const handshake = handshakeOf(
    new Request("http://gw.test/v1/responses?x=1", {
      headers: {
        authorization: "Bearer t",
        "openai-beta": "responses_websockets=2026-02-06",
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-key": "k",
        "sec-websocket-version": "13",
        "x-request-id": "hs-1",
      },
    }),
    "hs-1",
  );
  const aborter = new AbortController();
  const request = messageRequest(handshake, 3, '{"model":"m"}', aborter.signal);
  assert.equal(request.method, "POST");
  assert.equal(request.url, "http://gw.test/v1/responses?x=1");
  assert.equal(request.headers.get("authorization"), "Bearer t");
  assert.equal(request.headers.get("openai-beta"), "responses_websockets=2026-02-06");
  assert.equal(request.headers.get("content-type"), "application/json");
  assert.equal(request.headers.get("x-request-id"), "hs-1.3");
  for (const name of ["upgrade", "connection", "sec-websocket-key", "sec-websocket-version"]) {
    assert.equal(request.headers.get(name), null, name);
  }
  assert.equal(await request.text(), '{"model":"m"}');
  aborter.abort();
  assert.equal(request.signal.aborted, true);
});

Deno.test("messageRequestId: stays within the 128 characters of a request id", () => {
  const handshake = handshakeOf(new Request("http://gw.test/"), "x".repeat(128));
  const id = messageRequestId(handshake, 12);
  assert.equal(id.length, 128);
  assert.ok(id.endsWith(".12"));
});

/** A handler answering a stream whose body has ended with `ended`. */
function streamed(ended: Outcome): MessageHandler {
  return () => Promise.resolve({ response: new Response("data: {}\n\n"), outcome: Promise.resolve(ended) });
}

const CTX = {} as ClientContext;
const REQUEST = new Request("http://gw.test/v1/responses", { method: "POST" });

Deno.test("awaitingDelivery: a stream's outcome is settled only once its events were sent, and ends then", async () => {
  const delivery = Promise.withResolvers<GatewayError | undefined>();
  // The body was pulled whole at `bodyEnded`; a slow client had its last events only later.
  const bodyEnded = performance.now();
  const answer = await awaitingDelivery(streamed({ ttftMs: 5, endedAt: bodyEnded }), delivery.promise)(
    REQUEST,
    CTX,
  );
  let settled = false;
  const outcome = (answer.outcome as Promise<Outcome>).then((o) => (settled = true, o));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(settled, false, "the body has ended, its events are not sent yet");
  const sentAt = performance.now();
  delivery.resolve(undefined);
  const { endedAt, ...rest } = await outcome;
  assert.deepEqual(rest, { ttftMs: 5 });
  // Its latency and spans end when the events were sent, not when the relay pulled the body.
  assert.ok(endedAt !== undefined && endedAt >= sentAt, `ended at ${endedAt}, sent at ${sentAt}`);
});

Deno.test("awaitingDelivery: a clean stream whose connection ended first says why; a failed one keeps its failure", async () => {
  const gone = new ClientGoneError();
  const clean = await awaitingDelivery(streamed({}), Promise.resolve(gone))(REQUEST, CTX);
  assert.equal((await clean.outcome).errorCode, "client_closed_request");
  const limited = new ClientGoneError({ status: 429, code: "websocket_queue_full", message: "full" });
  const cut = await awaitingDelivery(streamed({}), Promise.resolve(limited))(REQUEST, CTX);
  assert.equal((await cut.outcome).errorCode, "websocket_queue_full");
  const failed = await awaitingDelivery(streamed({ errorCode: "upstream_error" }), Promise.resolve(gone))(
    REQUEST,
    CTX,
  );
  assert.equal((await failed.outcome).errorCode, "upstream_error");
});

Deno.test("awaitingDelivery: an answer known at once is not held", async () => {
  const json: MessageHandler = () =>
    Promise.resolve({ response: Response.json({}), outcome: { errorCode: "invalid_json" } });
  const never = new Promise<GatewayError | undefined>(() => {});
  const answer = await awaitingDelivery(json, never)(REQUEST, CTX);
  assert.deepEqual(answer.outcome, { errorCode: "invalid_json" });
});
