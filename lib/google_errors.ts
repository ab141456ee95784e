/**
 * Google's error shape, `{"error":{"code","message","status","details"?}}`: how the Gemini API's routes answer
 * every error, a failed stream's last chunk too. Beside lib/errors.ts (OpenAI's shape) and lib/anthropic_errors.ts.
 *
 * `details` say what Google's clients act on: Gemini CLI (`classifyGoogleError`) retries a 429 or 503 after a
 * `google.rpc.RetryInfo`'s `retryDelay` (up to 300 s; a longer one it does not retry), and stops at once on a
 * `google.rpc.QuotaFailure` whose `quotaId` names a day (`…PerDay`); with no details it retries every 429 on its
 * own backoff, up to ten times. So a rate limit says its wait, a spent budget says its period and its reset, and a
 * Google upstream's own details are passed on.
 *
 * @module
 */
import { type GatewayError, type GoogleErrorDetail, jsonError, type QuotaReset } from "./errors.ts";

/** Google's canonical status names by HTTP status, as the Gemini API answers them. */
const GOOGLE_STATUS: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  405: "UNIMPLEMENTED",
  408: "DEADLINE_EXCEEDED",
  409: "ABORTED",
  413: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** The body of a Google API error: `{"error":{"code","message","status","details"?}}`. */
export interface GoogleErrorBody {
  error: { code: number; message: string; status: string; details?: GoogleErrorDetail[] };
}

const RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo";
const QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure";

/** Google's `Duration` in JSON for `ms`: whole seconds, or up to milliseconds (`"59.966s"`); at least a millisecond. */
function duration(ms: number): string {
  return `${Number((Math.max(1, Math.ceil(ms)) / 1000).toFixed(3))}s`;
}

/**
 * The wait `err`'s headers give (`retry-after-ms`, else `retry-after` in seconds or as an HTTP date), in ms;
 * undefined without one.
 */
function retryAfterMs(err: GatewayError, now: number): number | undefined {
  const headers = new Headers(err.headers);
  const number = (value: string | null) => value !== null && /^\d+(\.\d+)?$/.test(value.trim());
  const ms = headers.get("retry-after-ms");
  if (number(ms)) return Number(ms);
  const after = headers.get("retry-after");
  if (after === null) return undefined;
  const wait = number(after) ? Number(after) * 1000 : Date.parse(after) - now;
  return Number.isFinite(wait) && wait >= 0 ? wait : undefined;
}

/** `"PerDay"`, `"PerMonth"`: how Google's quota ids name their period, which Gemini CLI reads. */
const PER: Readonly<Record<QuotaReset["period"], string>> = { day: "PerDay", month: "PerMonth" };

/** A spent budget as Google's `QuotaFailure`: its id names whose budget and its period (`TokenBudgetPerDay`). */
function quotaFailure(quota: QuotaReset): GoogleErrorDetail {
  const whose = quota.scope.split("_").map((word) => word[0].toUpperCase() + word.slice(1)).join("");
  return {
    "@type": QUOTA_FAILURE,
    violations: [{
      quotaMetric: `gateway/budget_${quota.unit}`,
      quotaId: `${whose}Budget${PER[quota.period]}`,
      quotaValue: String(quota.limit),
    }],
  };
}

/**
 * `err`'s details in Google's terms: a Google upstream's own, then what the gateway knows that they do not say: a
 * spent budget's `QuotaFailure` and its `RetryInfo` counting down to the reset; a 429 or 503 with a wait in its
 * headers (the gateway's rate limits, any upstream's `retry-after`), that wait's `RetryInfo`.
 */
export function googleDetails(err: GatewayError, now: number = Date.now()): GoogleErrorDetail[] {
  const details = [...err.googleDetails ?? []];
  const has = (type: string) => details.some((detail) => detail["@type"] === type);
  if (err.quota !== null && !has(QUOTA_FAILURE)) details.push(quotaFailure(err.quota));
  if (has(RETRY_INFO)) return details;
  const wait = err.quota !== null
    ? err.quota.resetsAt - now
    : err.status === 429 || err.status === 503
    ? retryAfterMs(err, now)
    : undefined;
  if (wait !== undefined) details.push({ "@type": RETRY_INFO, retryDelay: duration(wait) });
  return details;
}

/** `err` in Google's error shape (the Gemini API's routes answer every error this way, streams' last chunk too). */
export function googleErrorBody(err: GatewayError, now: number = Date.now()): GoogleErrorBody {
  const status = GOOGLE_STATUS[err.status] ?? (err.status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT");
  const body: GoogleErrorBody = { error: { code: err.status, message: err.message, status } };
  const details = googleDetails(err, now);
  if (details.length > 0) body.error.details = details;
  return body;
}

/** Serialises `err` in Google's shape with its status: the error boundary's answer on the Gemini API's routes. */
export function googleErrorResponse(err: GatewayError): Response {
  return jsonError(JSON.stringify(googleErrorBody(err)), err.status, err.headers);
}
