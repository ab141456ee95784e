/**
 * Which failures are worth another attempt, and how long to wait before it.
 *
 * @module
 */
import type { RoutingConfig } from "../config/schema.ts";
import { ClientGoneError, CONTEXT_LENGTH_EXCEEDED, GatewayError } from "../errors.ts";
import type { Random } from "./plan.ts";

/**
 * What a failed attempt means for routing:
 * - `retry`: transient (connection failure, timeout, 408, 429, 5xx): the same target may be tried again, and
 *   then the next one; counts against the target's health.
 * - `next`: the target is misconfigured for this request (the upstream refused the gateway's credentials,
 *   refused the operator's account for its billing — Anthropic's 402 `billing_error`, OpenRouter's, DeepSeek's
 *   and Mistral's 402 for credits or a spend limit —, or does not know the model), or the prompt is over its model's context window (`context_length_exceeded`,
 *   which an alias's next target, with a larger window, may serve): no point retrying it, but another target
 *   may serve; counts against its health only as {@linkcode countsAgainstTarget} says.
 * - `final`: the client's own mistake (other 4xx) or the client left: answered as is, never retried.
 */
export type FailureKind = "retry" | "next" | "final";

/** Classifies an attempt's error. */
export function classifyFailure(err: unknown): FailureKind {
  if (!(err instanceof GatewayError) || err instanceof ClientGoneError) return "final";
  const status = err.status;
  if (status === 408 || status === 429 || status >= 500) return "retry";
  // Errors from routing's callers (the alias itself unknown, a bad request) never get here: every 401, 402,
  // 403 or 404 seen here came from an upstream. A 402 is the operator's account, not the client's request: as
  // with a rejected key, another target (another account, another vendor) may serve it.
  if (status === 401 || status === 402 || status === 403 || status === 404) return "next";
  if (err.code === CONTEXT_LENGTH_EXCEEDED) return "next";
  return "final";
}

/**
 * Whether the upstream said its error is not worth retrying (`x-should-retry: false`, kept only when well-formed,
 * lib/providers/shared/upstream_error.ts): Anthropic sends it on a 429 a retry cannot fix soon (a spend limit).
 * Another attempt on that target would only spend an upstream call and the backoff before the client gets the
 * error, so its retries are skipped. It speaks for that upstream's account only: whether the alias's next target
 * (another account, another vendor) is tried stays as {@linkcode classifyFailure} says for the status. An
 * `x-should-retry: true` is not followed: what the gateway retries stays its own rules (a 409 or 400 the upstream
 * marks retryable is still answered at once, and the client's SDK, which gets the header, may retry it).
 */
export function upstreamForbidsRetry(err: unknown): boolean {
  if (!(err instanceof GatewayError) || err.headers === undefined) return false;
  return new Headers(err.headers).get("x-should-retry") === "false";
}

/**
 * Whether a failed attempt counts against its target's health (towards `eject_after`). A 403 or 404 moves on
 * to the next target but does not count: it may be about what the request refers to (a cached content, a file,
 * an upstream's stored response), which a client chooses, and one client's requests must not eject a target
 * for every other client. A too-long prompt is the request's size, not the target's fault, likewise. A 401 is
 * the gateway's own key.
 */
export function countsAgainstTarget(err: unknown): boolean {
  if (!(err instanceof GatewayError)) return true;
  return !(err.status === 403 || err.status === 404 || err.code === CONTEXT_LENGTH_EXCEEDED);
}

/**
 * The delay the upstream asked for, in ms: `retry-after-ms`, else `retry-after` as seconds or an HTTP date.
 * Null when it asked for nothing.
 */
export function retryAfterMs(err: unknown, now = Date.now()): number | null {
  if (!(err instanceof GatewayError) || err.headers === undefined) return null;
  const headers = new Headers(err.headers);
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const after = headers.get("retry-after");
  if (after === null) return null;
  if (/^\d+(\.\d+)?$/.test(after.trim())) return Math.ceil(Number(after) * 1000);
  const date = Date.parse(after);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * How long to wait before retry number `retry` (0-based) on the same target, or null to move on to the
 * next target at once because the upstream asked for a longer pause than `retry_after_max`.
 * Without a `Retry-After`, exponential backoff with full jitter spreads retries of many clients apart.
 */
export function retryDelay(
  err: unknown,
  retry: number,
  settings: RoutingConfig,
  random: Random,
): number | null {
  const asked = retryAfterMs(err);
  if (asked !== null) return asked <= settings.retry_after_max ? asked : null;
  const ceiling = Math.min(settings.backoff_max, settings.backoff_base * 2 ** retry);
  return Math.round(ceiling * random());
}
