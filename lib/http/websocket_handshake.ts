/**
 * The checks of a WebSocket handshake the gateway makes itself, before it accepts one (`acceptWebSocket`), so
 * that a refused handshake is answered like any refused request: the gateway's JSON error, logged with the
 * status the client got. The edges would refuse these too, each its own way (`ws` with a `text/html` 400 and
 * accepting the obsolete version 8, Bun with an empty 426), after the access log had said the handshake was
 * accepted. What is checked is what both edges check: the key and the version (RFC 6455 §4.2.1).
 *
 * @module
 */
import { GatewayError } from "../errors.ts";

/** The key is the base64 of 16 random bytes (RFC 6455 §4.1), the form `ws` takes. */
const KEY = /^[+/0-9A-Za-z]{22}==$/;

/** The one version of the protocol the gateway speaks (RFC 6455's; both edges speak only it). */
export const WEBSOCKET_VERSION = "13";

/**
 * Why the handshake `headers` belong to cannot be accepted: a missing or malformed `Sec-WebSocket-Key` (400),
 * or a `Sec-WebSocket-Version` other than 13 (426 Upgrade Required, naming the version spoken, as RFC 6455
 * §4.4 asks); null when neither.
 */
export function handshakeError(headers: Headers): GatewayError | null {
  const key = headers.get("sec-websocket-key");
  if (key === null || !KEY.test(key.trim())) {
    return new GatewayError(
      400,
      "The request is not a valid WebSocket handshake: Sec-WebSocket-Key is missing or not the base64 of 16 bytes.",
      { type: "invalid_request_error", code: "invalid_websocket_handshake", param: null },
    );
  }
  if (headers.get("sec-websocket-version")?.trim() !== WEBSOCKET_VERSION) {
    return new GatewayError(
      426,
      `The WebSocket version asked for is not supported; this server speaks version ${WEBSOCKET_VERSION}.`,
      {
        type: "invalid_request_error",
        code: "unsupported_websocket_version",
        param: null,
        headers: { "sec-websocket-version": WEBSOCKET_VERSION },
      },
    );
  }
  return null;
}
