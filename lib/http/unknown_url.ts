/**
 * The 404 for a path the gateway does not serve. The usual cause is a client whose base URL lacks `/v1`
 * (`http://host:8080`, not `http://host:8080/v1`), which sends `/chat/completions`; a bare "Invalid URL"
 * leaves people guessing, so the answer names the path they probably meant.
 *
 * @module
 */
import { GatewayError, printable } from "../errors.ts";

/** Paths the client may have meant: with `/v1` added, a doubled `/v1` removed, a trailing `/` dropped. */
function candidates(path: string): string[] {
  const out: string[] = [];
  const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  if (trimmed.startsWith("/v1/v1/")) out.push(trimmed.slice(3));
  else if (!trimmed.startsWith("/v1/")) out.push(`/v1${trimmed}`);
  if (trimmed !== path) out.push(trimmed);
  return out;
}

/**
 * 404 `unknown_url` for `method path`; `known(p)` says whether the gateway serves `p`. When one of the likely
 * corrections is served, the message says which, and that the base URL must end in `/v1`.
 */
export function unknownUrl(method: string, path: string, known: (path: string) => boolean): GatewayError {
  let message = `Invalid URL (${printable(method)} ${printable(path)})`;
  const meant = candidates(path).find(known);
  if (meant !== undefined) {
    message += `. Did you mean ${printable(meant)}?`;
    if (path.startsWith("/v1/v1/")) message += " The base URL must end in /v1, once.";
    else if (!path.startsWith("/v1/")) message += " The base URL must end in /v1.";
  }
  return new GatewayError(404, message, { type: "invalid_request_error", code: "unknown_url" });
}
