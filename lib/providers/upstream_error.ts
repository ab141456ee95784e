/**
 * Normalises an OpenAI-compatible upstream's error into OpenAI's own shape and the status the client should
 * see. Upstreams differ: OpenAI wraps in `{"error":{…}}`, older vLLM sends `{"object":"error",…}` with an
 * integer code, FastAPI-based servers send `{"detail":…}`, proxies send HTML.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";

/** The fields an upstream's error body yielded, before the gateway decides status and wording. */
export interface ParsedUpstreamError {
  message: string | null;
  type: string | null;
  code: string | null;
  param: string | null;
}

function stringOrNull(value: unknown): string | null {
  if (typeof value === "string" && value !== "") return value;
  if (typeof value === "number") return String(value);
  return null;
}

/** Extracts message/type/code/param from any of the error bodies OpenAI-compatible servers send. */
export function parseUpstreamErrorBody(text: string): ParsedUpstreamError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { message: null, type: null, code: null, param: null };
  }
  if (json === null || typeof json !== "object") {
    return { message: null, type: null, code: null, param: null };
  }
  const obj = json as Record<string, unknown>;
  const inner = typeof obj.error === "object" && obj.error !== null
    ? obj.error as Record<string, unknown>
    : obj;
  let message = stringOrNull(inner.message) ?? stringOrNull(obj.error) ?? null;
  if (message === null && obj.detail !== undefined) {
    message = typeof obj.detail === "string" ? obj.detail : JSON.stringify(obj.detail);
  }
  // vLLM's integer `code` is an HTTP status, not an OpenAI error code.
  const code = typeof inner.code === "number" ? null : stringOrNull(inner.code);
  return { message, type: stringOrNull(inner.type), code, param: stringOrNull(inner.param) };
}

/** Maps vendor error types (vLLM's Python exception names and the like) onto OpenAI's vocabulary. */
function openaiType(status: number, type: string | null): string {
  const known = [
    "invalid_request_error",
    "authentication_error",
    "permission_error",
    "not_found_error",
    "rate_limit_error",
    "insufficient_quota",
    "server_error",
  ];
  if (type !== null && known.includes(type)) return type;
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/** Upstream headers worth passing on with an error: when to retry. */
const RETRY_HEADERS = ["retry-after", "retry-after-ms"];

/**
 * The error the client gets for an upstream's non-2xx answer: 4xx passes through with a normalised body,
 * an overloaded upstream (503, Anthropic's 529) becomes 503, and other 5xx or anything else becomes 502.
 * Credentials errors are reworded: the upstream's message may quote part of the gateway's provider key, and
 * the fix is the operator's, not the client's. `secrets` are scrubbed from any upstream message that is kept.
 *
 * `body` is the raw error body of an OpenAI-compatible upstream, or the fields a vendor module already
 * parsed from its own error format.
 */
export function upstreamHttpError(
  provider: string,
  status: number,
  body: string | ParsedUpstreamError,
  headers: Headers,
  secrets: readonly string[] = [],
): GatewayError {
  const parsed = typeof body === "string" ? parseUpstreamErrorBody(body) : body;
  let message = parsed.message;
  for (const secret of secrets) {
    if (message !== null && secret.length >= 4) message = message.split(secret).join("***");
  }
  const passHeaders: Record<string, string> = {};
  for (const name of RETRY_HEADERS) {
    const value = headers.get(name);
    if (value !== null) passHeaders[name] = value;
  }
  if (status === 401 || status === 403) {
    return new GatewayError(
      status,
      `Provider "${provider}" rejected the gateway's credentials (HTTP ${status}); the gateway operator must ` +
        "check this provider's key.",
      { type: openaiType(status, parsed.type), code: parsed.code ?? "upstream_auth_error" },
    );
  }
  if (status >= 400 && status < 500) {
    return new GatewayError(
      status,
      message ?? `Provider "${provider}" refused the request (HTTP ${status}).`,
      {
        type: openaiType(status, parsed.type),
        code: parsed.code,
        param: parsed.param,
        headers: passHeaders,
      },
    );
  }
  const detail = message === null ? "" : `: ${message}`;
  if (status === 503 || status === 529) {
    return new GatewayError(503, `Provider "${provider}" is overloaded (HTTP ${status})${detail}`, {
      type: "server_error",
      code: "upstream_overloaded",
      headers: passHeaders,
    });
  }
  return new GatewayError(502, `Provider "${provider}" failed with HTTP ${status}${detail}`, {
    type: "server_error",
    code: parsed.code ?? "upstream_error",
    headers: passHeaders,
  });
}

/** The error for an `{"error":…}` event inside an upstream stream that had already answered 200. */
export function upstreamStreamError(provider: string, data: unknown): GatewayError {
  const parsed = parseUpstreamErrorBody(JSON.stringify(data));
  return new GatewayError(502, parsed.message ?? `Provider "${provider}" reported an error mid-stream.`, {
    type: parsed.type ?? "server_error",
    code: parsed.code ?? "upstream_error",
  });
}
