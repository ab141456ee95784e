/**
 * The 404 for a path the gateway does not serve. The usual cause is a client whose base URL lacks `/v1`
 * (`http://host:8080`, not `http://host:8080/v1`), which sends `/chat/completions`; a bare "Invalid URL"
 * leaves people guessing, so the answer names the path they probably meant, and why. The admin API is at the
 * server's root, not under `/v1`, so a script that reaches it with a trailing `/` or through a client's base
 * URL is told that instead.
 *
 * @module
 */
import { GatewayError, printable } from "../errors.ts";

/** Where the admin API's paths start (`/admin/tokens`, …). */
const ADMIN_PREFIX = "/admin/";

/**
 * Paths the client may have meant: with `/v1` added, a doubled `/v1` removed, `/v1` removed before the admin
 * API, a trailing `/` dropped.
 */
function candidates(path: string): string[] {
  const out: string[] = [];
  const trimmed = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  if (trimmed.startsWith("/v1/v1/")) out.push(trimmed.slice(3));
  else if (trimmed.startsWith(`/v1${ADMIN_PREFIX}`)) out.push(trimmed.slice(3));
  else if (!trimmed.startsWith("/v1/")) out.push(`/v1${trimmed}`);
  if (trimmed !== path) out.push(trimmed);
  return out;
}

/** Why `path` is not `meant`, in the words that fix it. */
function hint(path: string, meant: string): string {
  if (path.startsWith("/v1/v1/")) return " The base URL must end in /v1, once.";
  if (meant.startsWith(ADMIN_PREFIX)) {
    return path.startsWith("/v1/")
      ? " The admin API is at the server's root, without /v1."
      : " Admin paths take no trailing /.";
  }
  if (meant.startsWith("/v1/") && !path.startsWith("/v1/")) return " The base URL must end in /v1.";
  return " Paths take no trailing /.";
}

/**
 * 404 `unknown_url` for `method path`; `known(p)` says whether the gateway serves `p`. When one of the likely
 * corrections is served, the message says which, and what to change: the base URL's `/v1`, or the admin
 * path's.
 */
export function unknownUrl(method: string, path: string, known: (path: string) => boolean): GatewayError {
  let message = `Invalid URL (${printable(method)} ${printable(path)})`;
  const meant = candidates(path).find(known);
  if (meant !== undefined) message += `. Did you mean ${printable(meant)}?${hint(path, meant)}`;
  return new GatewayError(404, message, { type: "invalid_request_error", code: "unknown_url" });
}
