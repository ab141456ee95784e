/**
 * Google API errors → OpenAI errors. Google's body is `{"error":{"code","message","status","details":[…]}}`
 * (sometimes wrapped in a one-element array); this module reads it, fixes the statuses Google uses
 * differently (an invalid key is a 400 `API_KEY_INVALID`, not a 401), turns `RetryInfo.retryDelay` into a
 * `retry-after` header, keeps the `details` (bounded, scrubbed) for a client of Google's own shape, and leaves
 * wording, scrubbing and 5xx policy to `upstreamHttpError`.
 *
 * @module
 */
import { CONTEXT_LENGTH_EXCEEDED, GatewayError, type GoogleErrorDetail } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { parseScrubbed } from "../../secrets/scrub_json.ts";
import { scrubberOf } from "../../secrets/scrubber.ts";
import {
  isErrorBody,
  mapsAsHttpError,
  MAX_UPSTREAM_MESSAGE,
  type ParsedUpstreamError,
  upstreamHttpError,
  upstreamStreamError,
} from "../shared/upstream_error.ts";

/** What a Google error body says. */
export interface GoogleError {
  message: string | null;
  /** Canonical code name: INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE, … */
  status: string | null;
  /** `ErrorInfo.reason`, e.g. API_KEY_INVALID. */
  reason: string | null;
  /** `RetryInfo.retryDelay`, e.g. "33s". */
  retryDelay: string | null;
  /** The HTTP status Google put in `code` (429, 500, …), when it is one. */
  code: number | null;
  /** Every detail with a `@type`, as sent. */
  details: GoogleErrorDetail[];
}

function str(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

/** Reads Google's error object (the value of `error`). */
export function readGoogleError(error: unknown): GoogleError {
  const out: GoogleError = {
    message: null,
    status: null,
    reason: null,
    retryDelay: null,
    code: null,
    details: [],
  };
  if (!isObject(error)) return out;
  out.message = str(error.message);
  out.status = str(error.status);
  const code = error.code;
  if (typeof code === "number" && Number.isInteger(code) && code >= 400 && code <= 599) out.code = code;
  for (const detail of Array.isArray(error.details) ? error.details : []) {
    if (!isObject(detail)) continue;
    const type = String(detail["@type"] ?? "");
    if (typeof detail["@type"] === "string") out.details.push(detail as GoogleErrorDetail);
    if (type.endsWith("google.rpc.ErrorInfo")) out.reason ??= str(detail.reason);
    if (type.endsWith("google.rpc.RetryInfo")) out.retryDelay ??= str(detail.retryDelay);
  }
  return out;
}

/** Parses an error body as Google sends it; anything unreadable yields all-null fields. */
export function parseGoogleErrorBody(text: string): GoogleError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  if (Array.isArray(json)) json = json[0];
  return readGoogleError(isObject(json) ? json.error : undefined);
}

/** The status the client should see: Google's 400 for a bad key is a credentials failure, so 401. */
export function effectiveStatus(status: number, error: GoogleError): number {
  if (error.reason === "API_KEY_INVALID" || error.status === "UNAUTHENTICATED") return 401;
  return status;
}

/** `"33s"` / `"0.5s"` → whole seconds, at least 1 (Retry-After's form); null when unparsable. */
export function retryAfterSeconds(delay: string | null): string | null {
  const match = delay === null ? null : /^(\d+(?:\.\d+)?)s$/.exec(delay);
  if (!match) return null;
  return String(Math.max(1, Math.ceil(Number(match[1]))));
}

/**
 * Google's words for a prompt over the context window, in a 400 INVALID_ARGUMENT: "The input token count
 * (1200293) exceeds the maximum number of tokens allowed (1048576)." (Vertex AI's alike; the count is sometimes
 * left out).
 */
const TOO_LONG = /input token count\b.*\bexceeds the maximum number of tokens/i;

/** OpenAI's fields for a Google error: a too-long prompt ({@linkcode TOO_LONG}) is `context_length_exceeded`. */
function toParsed(status: number, error: GoogleError): ParsedUpstreamError {
  if (status === 400 && error.status === "INVALID_ARGUMENT" && TOO_LONG.test(error.message ?? "")) {
    return { message: error.message, type: null, code: CONTEXT_LENGTH_EXCEEDED, param: "messages" };
  }
  const code = status === 429 ? "rate_limit_exceeded" : error.status?.toLowerCase() ?? null;
  return {
    message: error.message,
    type: null,
    code: status === 401 || status === 403 ? null : code,
    param: null,
  };
}

/**
 * The `GatewayError` for a non-2xx Gemini answer: 400 API_KEY_INVALID → 401 (reworded), 403 → 403
 * (reworded), other 4xx pass through (429 keeps or gains `retry-after`), 503 → 503 `upstream_overloaded`,
 * other 5xx → 502. `secrets` (the API key) are scrubbed from any message that is kept.
 */
export function geminiHttpError(
  provider: string,
  status: number,
  text: string,
  headers: Headers,
  secrets: readonly string[],
): GatewayError {
  return googleError(provider, status, parseGoogleErrorBody(text), headers, secrets);
}

function googleError(
  provider: string,
  status: number,
  error: GoogleError,
  headers: Headers,
  secrets: readonly string[],
): GatewayError {
  const effective = effectiveStatus(status, error);
  const retryAfter = retryAfterSeconds(error.retryDelay);
  let pass = headers;
  if (retryAfter !== null && !headers.has("retry-after")) {
    pass = new Headers(headers);
    pass.set("retry-after", retryAfter);
  }
  const mapped = upstreamHttpError(provider, effective, toParsed(effective, error), pass, secrets);
  // The gateway's own credentials refused: its reworded error is the gateway's, not the details of its key.
  const details = effective === 401 || effective === 403 ? null : keptDetails(error.details, secrets);
  if (details === null) return mapped;
  return new GatewayError(mapped.status, mapped.message, {
    type: mapped.type,
    code: mapped.code,
    param: mapped.param,
    headers: mapped.headers,
    googleDetails: details,
  });
}

/** Which details are kept first when not all fit: what Google's clients decide a retry by. */
const FIRST = ["google.rpc.RetryInfo", "google.rpc.QuotaFailure", "google.rpc.ErrorInfo"];

/**
 * The `details` passed on to a client of Google's shape, bounded as every upstream text is: whole, while their
 * JSON is at most {@linkcode MAX_UPSTREAM_MESSAGE} characters; else as many as fit, those of {@linkcode FIRST}
 * taken first, in the order sent. Every string and key of what is kept is scrubbed of `secrets` (cut first,
 * then scrubbed: the scrub's cost stays bounded). Null for none.
 */
export function keptDetails(
  details: readonly GoogleErrorDetail[],
  secrets: readonly string[],
): GoogleErrorDetail[] | null {
  const rank = (detail: GoogleErrorDetail) => {
    const at = FIRST.findIndex((type) => detail["@type"].endsWith(type));
    return at < 0 ? FIRST.length : at;
  };
  const sizes = details.map((detail) => JSON.stringify(detail).length + 1);
  const kept = new Set<number>();
  let room = MAX_UPSTREAM_MESSAGE;
  for (const i of [...details.keys()].sort((a, b) => rank(details[a]) - rank(details[b]))) {
    if (sizes[i] > room) continue;
    kept.add(i);
    room -= sizes[i];
  }
  if (kept.size === 0) return null;
  const scrubber = scrubberOf(secrets);
  const text = JSON.stringify(details.filter((_, i) => kept.has(i)));
  return parseScrubbed(text, (value) => scrubber.scrub(value)) as GoogleErrorDetail[];
}

/**
 * The HTTP status of each canonical code Google names in `status` (google.rpc.Code's mapping), for an error
 * whose `code` is missing.
 */
const STATUS_OF_CODE: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ABORTED: 409,
  ALREADY_EXISTS: 409,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  UNKNOWN: 500,
  INTERNAL: 500,
  DATA_LOSS: 500,
  NOT_IMPLEMENTED: 501,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

/**
 * The `GatewayError` for an `{"error":…}` event inside a stream that had already answered 200. Google's event
 * carries the error as its HTTP answer would (`code` 429, `status` RESOURCE_EXHAUSTED), so it is mapped as
 * {@linkcode geminiHttpError} maps that answer (when {@linkcode mapsAsHttpError}): a rate limit before the stream
 * started is the client's 429, not a 502. A server error, or no status at all, is a 502 in the upstream's words.
 */
export function geminiStreamError(
  provider: string,
  data: JsonObject,
  secrets: readonly string[],
): GatewayError {
  const error = readGoogleError(data.error);
  const status = error.code ?? STATUS_OF_CODE[error.status ?? ""];
  if (status !== undefined && mapsAsHttpError(status)) {
    return googleError(provider, status, error, new Headers(), secrets);
  }
  return upstreamStreamError(provider, {
    error: { message: error.message, type: "server_error", code: error.status?.toLowerCase() ?? null },
  }, secrets);
}

/**
 * Throws the upstream's error when a 200's JSON `body` is Google's error body in place of the answer
 * ({@linkcode isErrorBody}; `answered` false: no candidates or prompt feedback, no embedding, no count), as a proxy
 * in Google's format may answer. It is mapped as the same error inside a 200 stream is ({@linkcode geminiStreamError},
 * `secrets` scrubbed): a 429 RESOURCE_EXHAUSTED is the client's 429, retried and fallen back from as the HTTP one.
 */
export function throwGeminiErrorBody(
  provider: string,
  body: JsonObject,
  answered: boolean,
  secrets: readonly string[],
): void {
  if (isErrorBody(body, answered)) throw geminiStreamError(provider, body, secrets);
}
