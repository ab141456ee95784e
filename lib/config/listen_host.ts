/**
 * What the gateway can listen on: an IP address (`127.0.0.1`, `0.0.0.0`, `::`) or a host name (`localhost`, a
 * container's service name), and nothing else. `server.host: "0.0.0.0:8080"` or `http://0.0.0.0` passed the
 * schema's "a non-empty string" and made `serve` fail at start (`getaddrinfo ENOTFOUND 0.0.0.0:8080`) on a config
 * `check` had called valid; the port has its own key (`server.port`, `--port`, `$PORT`). One rule for the file and
 * `serve --host`. Only `node:net`'s address test is imported, so the schema stays free of the runtime.
 *
 * @module
 */
import { isIP } from "node:net";

/** A DNS label as resolvers take it: letters, digits, `-` inside, and `_` (container service names). */
const LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;

/** What a listen host must be, as a message ends (`server.host: …`, `Invalid --host: …`). */
export const LISTEN_HOST_RULE =
  "must be an IP address or a host name, without a scheme or a port (the port is server.port, --port or $PORT)";

/** True for an IPv4 or IPv6 address (unbracketed) or a host name of DNS labels, at most 253 characters. */
export function isListenHost(host: string): boolean {
  if (isIP(host) !== 0) return true;
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  return name.length > 0 && name.length <= 253 && name.split(".").every((label) => LABEL.test(label));
}
