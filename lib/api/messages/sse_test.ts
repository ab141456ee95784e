import assert from "node:assert/strict";
import { badGateway, GatewayError, gatewayTimeout } from "../../errors.ts";
import { anthropicErrorResponse } from "../../anthropic_errors.ts";
import { encodeMessagesEvent, errorEvent } from "./sse.ts";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

Deno.test("messages sse: one frame per event, its type on the event line", () => {
  assert.equal(text(encodeMessagesEvent({ type: "ping" })), 'event: ping\ndata: {"type":"ping"}\n\n');
  // A type that could break the framing is not written on the event line.
  assert.equal(
    text(encodeMessagesEvent({ type: "x\ndata: forged" })),
    'event: unknown\ndata: {"type":"x\\ndata: forged"}\n\n',
  );
});

Deno.test("messages sse: errors take Anthropic's types, the upstream's own when it gave one", () => {
  const type = (err: GatewayError) => (errorEvent(err).error as { type: string }).type;
  assert.equal(type(badGateway("down")), "api_error");
  assert.equal(type(gatewayTimeout("slow")), "timeout_error");
  assert.equal(type(new GatewayError(503, "busy", { code: "upstream_overloaded" })), "overloaded_error");
  assert.equal(type(new GatewayError(502, "x", { anthropicType: "overloaded_error" })), "overloaded_error");
  assert.equal(type(new GatewayError(429, "slow down")), "rate_limit_error");
  assert.equal(type(new GatewayError(413, "big")), "request_too_large");
  assert.equal(type(new GatewayError(405, "no")), "invalid_request_error");
  assert.deepEqual(errorEvent(badGateway("down")), {
    type: "error",
    error: { type: "api_error", message: "down" },
  });
});

Deno.test("messages sse: an overloaded upstream answers 529 in Anthropic's shape, with the request id", async () => {
  const response = anthropicErrorResponse(
    new GatewayError(503, "busy", { code: "upstream_overloaded", headers: { "retry-after": "3" } }),
    "req_1",
  );
  assert.equal(response.status, 529);
  assert.equal(response.headers.get("retry-after"), "3");
  assert.deepEqual(await response.json(), {
    type: "error",
    error: { type: "overloaded_error", message: "busy" },
    request_id: "req_1",
  });
});
