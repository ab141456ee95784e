/**
 * The origin the edges give request URLs: the address served, never the Host header. Handlers route on the
 * URL's path, and a Host holding `/`, `?` or `#` would put a path of the client's choosing before the request
 * line's when a URL is built from it; nothing in the gateway reads the URL's host.
 *
 * @module
 */

/** The origin for `hostname` (an IPv6 address in brackets), or `localhost` for one no URL can hold (a zone). */
export function originOf(hostname: string): string {
  const origin = `http://${hostname.includes(":") ? `[${hostname}]` : hostname}`;
  return URL.canParse(origin) ? origin : "http://localhost";
}
