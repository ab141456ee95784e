import assert from "node:assert/strict";
import { handshakeOf, messageRequest, messageRequestId } from "./frame_request.ts";

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
