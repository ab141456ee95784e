/**
 * Bearer-token authentication. Tokens are looked up by their SHA-256, so the gateway never holds a client's
 * secret and never compares secrets character by character (a hash lookup reveals nothing about how close a
 * guess was).
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { ResolvedAdminToken, ResolvedConfig, ResolvedToken } from "../config/types.ts";
import { GatewayError } from "../errors.ts";

const NO_KEY_MESSAGE =
  "You didn't provide an API key. You need to provide your API key in an Authorization " +
  "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";

function unauthorized(message: string, code: string | null): GatewayError {
  return new GatewayError(401, message, {
    type: "invalid_request_error",
    code,
    headers: { "www-authenticate": 'Bearer realm="gateway"' },
  });
}

/** Lower-case hex SHA-256 of a token, the form the config stores. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Extracts the token from `Authorization: Bearer …` (scheme case-insensitive), or null. */
export function bearerToken(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (header === null) return null;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}

const NO_ANTHROPIC_KEY_MESSAGE =
  "You didn't provide an API key. Send your gateway token in an x-api-key header or an Authorization " +
  "header using Bearer auth.";

/**
 * The token Anthropic's clients send in `x-api-key` (SDK 0.x, Claude Code with `ANTHROPIC_API_KEY`), read only
 * on routes that speak Anthropic's API and only when no `Authorization` header came (which then decides).
 */
function apiKeyHeader(request: Request): string | null {
  const value = request.headers.get("x-api-key");
  return value === null ? null : value.trim();
}

const NO_GOOGLE_KEY_MESSAGE =
  "Method doesn't allow unregistered callers (callers without established identity). " +
  "Send your gateway token in an x-goog-api-key header or a key query parameter.";

/**
 * The token Google's clients send in `x-goog-api-key` (the `@google/genai` SDK, Gemini CLI) or as `?key=`,
 * read only on routes that speak Google's API and only when no `Authorization` header came.
 */
function googleKey(request: Request): string | null {
  const header = request.headers.get("x-goog-api-key");
  if (header !== null) return header.trim();
  const query = request.url.indexOf("?");
  return query < 0 ? null : new URLSearchParams(request.url.slice(query + 1)).get("key");
}

/**
 * Returns the identity behind the request's bearer token or throws 401: missing, unknown, disabled and
 * expired tokens each get their own message, none of which repeats the token. On a route of another API's
 * dialect the token may come as that API's clients send it: `x-api-key` (Anthropic's Messages API),
 * `x-goog-api-key` or `?key=` (Google's Gemini API); the same tokens, scopes and limits.
 */
export function authenticate(
  request: Request,
  config: ResolvedConfig,
  now = Date.now(),
  dialect: "anthropic" | "google" | undefined = undefined,
): ResolvedToken {
  if (dialect !== undefined && !request.headers.has("authorization")) {
    const key = dialect === "anthropic" ? apiKeyHeader(request) : googleKey(request);
    if (key === null) {
      throw unauthorized(dialect === "anthropic" ? NO_ANTHROPIC_KEY_MESSAGE : NO_GOOGLE_KEY_MESSAGE, null);
    }
    return check(config.tokens.get(hashToken(key)), now);
  }
  return lookUp(request, config.tokens, now);
}

/**
 * The admin identity behind the request's bearer token, from `admin_tokens` only: a client token is as
 * unknown here as a made-up one, and an admin token cannot call the model endpoints.
 */
export function authenticateAdmin(
  request: Request,
  config: ResolvedConfig,
  now = Date.now(),
): ResolvedAdminToken {
  return lookUp(request, config.adminTokens, now);
}

function lookUp<T extends { disabled: boolean; expiresAt: number | null }>(
  request: Request,
  tokens: ReadonlyMap<string, T>,
  now: number,
): T {
  if (!request.headers.has("authorization")) throw unauthorized(NO_KEY_MESSAGE, null);
  const token = bearerToken(request);
  if (token === null) throw unauthorized("Incorrect API key provided.", "invalid_api_key");
  // Always hash: a cache keyed by the token itself would bring back string comparisons of secrets.
  return check(tokens.get(hashToken(token)), now);
}

/** The identity found for a token, or the 401 for an unknown, disabled or expired one. */
function check<T extends { disabled: boolean; expiresAt: number | null }>(
  identity: T | undefined,
  now: number,
): T {
  if (identity === undefined) {
    throw unauthorized("Incorrect API key provided.", "invalid_api_key");
  }
  if (identity.disabled) throw unauthorized("This API key has been disabled.", "token_disabled");
  if (identity.expiresAt !== null && now >= identity.expiresAt) {
    throw unauthorized("This API key has expired.", "token_expired");
  }
  return identity;
}
