import assert from "node:assert/strict";
import { acceptWebSocket, webSocketOf, type WebSocketSession } from "./types.ts";

Deno.test("acceptWebSocket: the edge finds the session of the answer, and of no other", () => {
  const session: WebSocketSession = {
    maxMessageBytes: 1,
    open() {},
    message() {},
    closed() {},
    shutdown() {},
  };
  const answer = acceptWebSocket(session, { "x-request-id": "r1" });
  assert.equal(webSocketOf(answer), session);
  assert.equal(answer.body, null);
  assert.equal(answer.headers.get("x-request-id"), "r1");
  assert.equal(webSocketOf(new Response(null)), undefined);
});
