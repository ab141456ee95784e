/**
 * Normalises an OpenAI-compatible upstream's error into OpenAI's own shape and the status the client should
 * see. Upstreams differ: OpenAI wraps in `{"error":{…}}`, older vLLM sends `{"object":"error",…}` with an
 * integer code, FastAPI-based servers send `{"detail":…}`, proxies send HTML.
 *
 * @module
 */
import { badGateway, CONTEXT_LENGTH_EXCEEDED, GatewayError } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { type Scrubber, scrubberOf } from "../../secrets/scrubber.ts";

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

/**
 * OpenAI's own types of a 429 (docs: "Rate limit reached … on tokens per min"): which limit was reached. Passed
 * on as sent, so a client that reads them can tell a token limit from a request limit; only on a 429, where
 * OpenAI uses them.
 */
const OPENAI_RATE_LIMIT_TYPES = ["tokens", "requests"];

/** Maps vendor error types (vLLM's Python exception names and the like) onto OpenAI's vocabulary. */
function openaiType(status: number, type: string | null): string {
  if (status === 429 && type !== null && OPENAI_RATE_LIMIT_TYPES.includes(type)) return type;
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

/**
 * Whether a 400 without a code is an OpenAI-compatible server's prompt over the context window: OpenAI's own
 * words, which vLLM, DeepSeek and OpenRouter copy ("This model's maximum context length is 8192 tokens. However,
 * …"), or llama.cpp's `exceed_context_size_error`. Such an error gets OpenAI's `context_length_exceeded`.
 */
function saysTooLong(type: string | null, message: string | null): boolean {
  return type === "exceed_context_size_error" || /maximum context length is \d+ tokens/i.test(message ?? "");
}

/**
 * Upstream headers worth passing on with an error: when to retry, and whether to. Anthropic's and OpenAI's SDKs
 * obey `x-should-retry` before anything else (an Anthropic `x-should-retry: false` on a 429 would otherwise be
 * retried by every SDK client, up to its `maxRetries`).
 */
const RETRY_HEADERS = ["retry-after", "retry-after-ms", "x-should-retry"];

/**
 * The retry headers of an upstream answer that are well-formed (a number, or an HTTP date for `retry-after`;
 * exactly `true` or `false` for `x-should-retry`, the only values the SDKs act on): header values are upstream
 * text too, and anything else in them is passed to no one.
 */
export function retryHeadersOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of RETRY_HEADERS) {
    const value = headers.get(name)?.trim();
    if (value === undefined || value.length > 64) continue;
    if (name === "x-should-retry") {
      if (value === "true" || value === "false") out[name] = value;
      continue;
    }
    const date = name === "retry-after" &&
      /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(value);
    if (/^\d+(\.\d+)?$/.test(value) || date) out[name] = value;
  }
  return out;
}

/** Longest upstream message passed on; past it the message is cut (an upstream may send megabytes). */
export const MAX_UPSTREAM_MESSAGE = 2_000;

/**
 * `text` cut to {@linkcode MAX_UPSTREAM_MESSAGE} characters (`…` marks the cut) with the `scrubber`'s secrets
 * masked. It is cut before it is scrubbed, not after: an error body may be megabytes (up to the upstream body
 * limit; a stream's error event up to the event limit), and scrubbing all of it to keep 2,000 characters cost
 * seconds of the event loop, which every other request on the process waited out. The scrubber is handed the
 * kept part and a margin of its longest secret, so a secret that straddles the cut is still masked whole.
 */
export function scrubClip(text: string, scrubber: Scrubber): string {
  const head = text.length > MAX_UPSTREAM_MESSAGE + scrubber.longest
    ? text.slice(0, MAX_UPSTREAM_MESSAGE + scrubber.longest)
    : text;
  const kept = scrubber.scrubHead(head, MAX_UPSTREAM_MESSAGE);
  return text.length > MAX_UPSTREAM_MESSAGE ? `${kept}…` : kept;
}

/** `text` with the provider's credentials `secrets` masked and cut as {@linkcode scrubClip} does. */
export function scrubbedClip(text: string | null, secrets: readonly string[]): string | null {
  return text === null ? null : scrubClip(text, scrubberOf(secrets));
}

/**
 * The error the client gets for an upstream's non-2xx answer: 4xx passes through with a normalised body,
 * an overloaded upstream (503, Anthropic's 529) becomes 503, and other 5xx or anything else becomes 502.
 * Credentials errors are reworded: the upstream's message may quote part of the gateway's provider key, and
 * the fix is the operator's, not the client's. `secrets` (the provider's own credentials) are scrubbed, whole
 * and quoted in part, from every upstream field that is kept (message, code, param), so they never even reach
 * routing's attempt records; the config-wide scrubber at the edge then covers every other secret.
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
  const parsed = scrubFields(typeof body === "string" ? parseUpstreamErrorBody(body) : body, secrets);
  const message = parsed.message;
  const passHeaders = retryHeadersOf(headers);
  if (status === 401 || status === 403) {
    return new GatewayError(
      status,
      `Provider "${provider}" rejected the gateway's credentials (HTTP ${status}); the gateway operator must ` +
        "check this provider's key.",
      { type: openaiType(status, parsed.type), code: parsed.code ?? "upstream_auth_error" },
    );
  }
  if (status >= 400 && status < 500) {
    const tooLong = status === 400 && parsed.code === null && saysTooLong(parsed.type, message);
    return new GatewayError(
      status,
      message ?? `Provider "${provider}" refused the request (HTTP ${status}).`,
      {
        type: openaiType(status, parsed.type),
        code: tooLong ? CONTEXT_LENGTH_EXCEEDED : parsed.code,
        param: tooLong ? parsed.param ?? "messages" : parsed.param,
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

/** The parsed fields, each cut to {@linkcode MAX_UPSTREAM_MESSAGE} and then scrubbed of `secrets` ({@linkcode scrubClip}). */
export function scrubFields(parsed: ParsedUpstreamError, secrets: readonly string[]): ParsedUpstreamError {
  const clean = (value: string | null) => scrubbedClip(value, secrets);
  return {
    message: clean(parsed.message),
    type: clean(parsed.type),
    code: clean(parsed.code),
    param: clean(parsed.param),
  };
}

/** The error types and codes by which OpenAI-compatible servers say "rate limited" or "quota spent": HTTP 429. */
const RATE_LIMITED = new Set(["rate_limit_error", "rate_limit_exceeded", "insufficient_quota"]);

/**
 * The HTTP status an error event inside a 200 stream stands for, as the upstream answers the same error over
 * HTTP: an integer `code` between 400 and 599 (vLLM's), or a numeric-string one (Azure's), is that status; a
 * rate limit or spent quota ({@linkcode RATE_LIMITED}, by type or code) is 429; `context_length_exceeded` is
 * 400. Null when the event says nothing of a status.
 */
function statusOfStreamError(data: unknown): number | null {
  const inner = isObject(data) && isObject(data.error) ? data.error : isObject(data) ? data : {};
  const code = typeof inner.code === "string" && /^\d{3}$/.test(inner.code) ? Number(inner.code) : inner.code;
  if (typeof code === "number" && Number.isInteger(code) && code >= 400 && code <= 599) return code;
  for (const word of [inner.type, inner.code]) {
    if (typeof word === "string" && RATE_LIMITED.has(word)) return 429;
  }
  return inner.code === CONTEXT_LENGTH_EXCEEDED ? 400 : null;
}

/**
 * Whether an error event that names `status` is mapped as the upstream's HTTP answer with that status would be:
 * a 4xx (a rate limit above all) or an overload (503, 529). Any other 5xx stays the mid-stream 502 in the
 * upstream's own words, which says as much and claims no HTTP answer that was not given.
 */
export function mapsAsHttpError(status: number): boolean {
  return status < 500 || status === 503 || status === 529;
}

/**
 * Whether a 200's JSON `body` is the upstream's error in place of its answer: an `error` that is not null, and none
 * of the answer's fields (`answered` false). Proxies and servers answer so (OpenRouter once the model has started,
 * LiteLLM, vLLM), each in its vendor's error format, and every one keeps the error under `error`: OpenAI's
 * `{"error": {…}}`, Google's `{"error": {"code", "message", "status"}}`, Anthropic's `{"type": "error", "error":
 * {"type", "message"}}`. A body that is the answer is left alone, whatever its `error` says (a Response carries
 * `error: null`, or the error of a failed response). The one rule for every vendor; each maps the error as it
 * maps the same error sent inside a 200 stream, so routing retries, falls back and counts it as that status.
 */
export function isErrorBody(body: JsonObject, answered: boolean): boolean {
  return !answered && body.error !== undefined && body.error !== null;
}

/**
 * The error for an `{"error":…}` event inside an upstream stream that had already answered 200; `secrets` are
 * scrubbed from every field. An event that says which HTTP error it is ({@linkcode statusOfStreamError}: a rate
 * limit, a status code) is mapped as {@linkcode upstreamHttpError} maps that answer when
 * {@linkcode mapsAsHttpError}, so a rate limit reaching the client before the stream started is its 429 (it
 * backs off; routing retries it as an HTTP 429), not a 502; any other is a 502 in the upstream's words.
 */
export function upstreamStreamError(
  provider: string,
  data: unknown,
  secrets: readonly string[] = [],
): GatewayError {
  const parsed = parseUpstreamErrorBody(JSON.stringify(data));
  const status = statusOfStreamError(data);
  if (status !== null && mapsAsHttpError(status)) {
    // A numeric-string code is a status, as in Azure's HTTP errors; the 429 gains OpenAI's code.
    if (parsed.code !== null && /^\d+$/.test(parsed.code)) parsed.code = null;
    if (status === 429) parsed.code ??= "rate_limit_exceeded";
    return upstreamHttpError(provider, status, parsed, new Headers(), secrets);
  }
  const clean = scrubFields(parsed, secrets);
  return new GatewayError(502, clean.message ?? `Provider "${provider}" reported an error mid-stream.`, {
    type: clean.type ?? "server_error",
    code: clean.code ?? "upstream_error",
  });
}

/**
 * The 502 `upstream_malformed_function_call` for an answer the model ended with output nobody can use (`what`, by
 * the vendor's `reason`, and its own words `detail` when it gave some): Gemini's MALFORMED_FUNCTION_CALL and
 * kin, Bedrock's `malformed_tool_use` and `malformed_model_output`. No OpenAI finish reason says it, and a `stop`
 * with empty content would read as a final answer; a 5xx lets SDKs retry, and routing try again or fall back
 * (before a stream commits).
 */
export function unusableOutput(
  provider: string,
  what: string,
  reason: string,
  detail?: unknown,
): GatewayError {
  const said = typeof detail === "string" && detail !== "" ? `: ${detail.slice(0, 300)}` : ".";
  return badGateway(
    `Provider "${provider}" produced an unusable ${what} (${reason})${said}`,
    "upstream_malformed_function_call",
  );
}
