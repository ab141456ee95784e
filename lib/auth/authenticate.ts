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
import type { ClientRequest } from "../runtime/types.ts";

const NO_KEY_MESSAGE =
  "You didn't provide an API key. You need to provide your API key in an Authorization " +
  "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";

/**
 * The 401s are built once, at load (below): each is the same answer every time, with no request's detail in it,
 * and on Deno building an `Error` costs about 3 µs whatever its stack (a tenth of answering a 401), which a flood
 * of bad keys need not pay per request. Frozen, so no request can change what another is answered.
 */
function unauthorized(message: string, code: string | null): GatewayError {
  const error = new GatewayError(401, message, {
    type: "invalid_request_error",
    code,
    headers: Object.freeze({ "www-authenticate": 'Bearer realm="gateway"' }),
  });
  Object.freeze(error);
  return error;
}

const NO_KEY = unauthorized(NO_KEY_MESSAGE, null);
const NO_ANTHROPIC_KEY = unauthorized(
  "You didn't provide an API key. Send your gateway token in an x-api-key header or an Authorization " +
    "header using Bearer auth.",
  null,
);
const NO_GOOGLE_KEY = unauthorized(
  "Method doesn't allow unregistered callers (callers without established identity). " +
    "Send your gateway token in an x-goog-api-key header or a key query parameter.",
  null,
);
const INVALID_KEY = unauthorized("Incorrect API key provided.", "invalid_api_key");
const DISABLED_KEY = unauthorized("This API key has been disabled.", "token_disabled");
const EXPIRED_KEY = unauthorized("This API key has expired.", "token_expired");

/** Seconds a client is told to wait by {@linkcode TOKEN_STORE_UNLOADED} (the token store is tried every second). */
const UNLOADED_RETRY_AFTER_S = 2;

/**
 * The answer to a key the config file does not have while the tokens issued through the admin API have never
 * loaded (the replica started while their store was down): it may be one of them, so it is a 503 to retry,
 * not the 401 that tells a client its key is bad (clients do not retry a 401, and behind a load balancer the
 * same key would be refused here and served by a replica that loaded them). Built once, as the 401s are; in
 * each API's own shape by the error boundary (Anthropic's `api_error`, Google's `UNAVAILABLE`).
 */
const TOKEN_STORE_UNLOADED = new GatewayError(
  503,
  "The gateway cannot check this API key right now: the tokens issued through its admin API have not been " +
    "loaded yet (their store is unreachable). Please try again shortly.",
  {
    type: "server_error",
    code: "token_store_unavailable",
    headers: Object.freeze({
      "retry-after": String(UNLOADED_RETRY_AFTER_S),
      "retry-after-ms": String(UNLOADED_RETRY_AFTER_S * 1000),
    }),
  },
);
Object.freeze(TOKEN_STORE_UNLOADED);

/** Lower-case hex SHA-256 of a token, the form the config stores. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Extracts the token from `Authorization: Bearer …` (scheme case-insensitive), or null. */
export function bearerToken(request: ClientRequest): string | null {
  const header = request.headers.get("authorization");
  if (header === null) return null;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}

/**
 * The token Anthropic's clients send in `x-api-key` (SDK 0.x, Claude Code with `ANTHROPIC_API_KEY`), read only
 * on routes that speak Anthropic's API or share a path with it (`/v1/models`), and only when no `Authorization`
 * header came (which then decides).
 */
function apiKeyHeader(request: ClientRequest): string | null {
  const value = request.headers.get("x-api-key");
  return value === null ? null : value.trim();
}

/**
 * The token Google's clients send in `x-goog-api-key` (the `@google/genai` SDK, Gemini CLI) or as `?key=`,
 * read only on routes that speak Google's API and only when no `Authorization` header came.
 */
function googleKey(request: ClientRequest): string | null {
  const header = request.headers.get("x-goog-api-key");
  if (header !== null) return header.trim();
  const query = request.url.indexOf("?");
  return query < 0 ? null : new URLSearchParams(request.url.slice(query + 1)).get("key");
}

/**
 * Returns the identity behind the request's bearer token or throws 401: missing, unknown, disabled and
 * expired tokens each get their own message, none of which repeats the token. On a route of another API's
 * dialect the token may come as that API's clients send it: `x-api-key` (Anthropic's Messages API),
 * `x-goog-api-key` or `?key=` (Google's Gemini API); the same tokens, scopes and limits. On a route OpenAI's API
 * shares with Anthropic's (`sharedWith`, `/v1/models`) `x-api-key` is taken too, and a request with neither
 * header is refused in the words of the dialect it speaks. With `unloaded` (the stored tokens have never
 * loaded: `TokenDirectory.unloaded`), a key that is none of `config`'s is a 503 `token_store_unavailable`.
 */
export function authenticate(
  request: ClientRequest,
  config: ResolvedConfig,
  now = Date.now(),
  dialect: "anthropic" | "google" | undefined = undefined,
  sharedWith: "anthropic" | undefined = undefined,
  unloaded = false,
): ResolvedToken {
  const unknown = unloaded ? TOKEN_STORE_UNLOADED : INVALID_KEY;
  if ((dialect !== undefined || sharedWith !== undefined) && !request.headers.has("authorization")) {
    const key = dialect === "google" ? googleKey(request) : apiKeyHeader(request);
    if (key !== null) return check(find(config.tokens, key), now, unknown);
    if (dialect === "anthropic") throw NO_ANTHROPIC_KEY;
    if (dialect === "google") throw NO_GOOGLE_KEY;
  }
  return lookUp(request, config.tokens, now, unknown);
}

/**
 * The identity `tokens` has for `token`, by its SHA-256. Always hashed: a cache keyed by the token itself would
 * keep clients' secrets in memory and bring back string comparisons of secrets.
 */
function find<T>(tokens: ReadonlyMap<string, T>, token: string): T | undefined {
  return tokens.get(hashToken(token));
}

/**
 * The admin identity behind the request's bearer token, from `admin_tokens` only: a client token is as
 * unknown here as a made-up one, and an admin token cannot call the model endpoints.
 */
export function authenticateAdmin(
  request: ClientRequest,
  config: ResolvedConfig,
  now = Date.now(),
): ResolvedAdminToken {
  return lookUp(request, config.adminTokens, now);
}

/** `unknown`: what a well-formed key none of `tokens` has is answered (the 401, or the 503 while unloaded). */
function lookUp<T extends { disabled: boolean; expiresAt: number | null }>(
  request: ClientRequest,
  tokens: ReadonlyMap<string, T>,
  now: number,
  unknown: GatewayError = INVALID_KEY,
): T {
  if (!request.headers.has("authorization")) throw NO_KEY;
  const token = bearerToken(request);
  if (token === null) throw INVALID_KEY;
  return check(find(tokens, token), now, unknown);
}

/** The identity found for a token, or `unknown` for none, the 401 for a disabled or expired one. */
function check<T extends { disabled: boolean; expiresAt: number | null }>(
  identity: T | undefined,
  now: number,
  unknown: GatewayError = INVALID_KEY,
): T {
  if (identity === undefined) throw unknown;
  if (identity.disabled) throw DISABLED_KEY;
  if (identity.expiresAt !== null && now >= identity.expiresAt) throw EXPIRED_KEY;
  return identity;
}
