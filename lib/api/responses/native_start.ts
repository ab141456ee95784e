/**
 * When a Responses stream passed through from a native upstream (OpenAI, Azure) commits to its target
 * (lib/answer/stream_start.ts): at its first event past the response's lifecycle events. `response.created`,
 * `response.queued` and `response.in_progress` show nothing of the answer, and an upstream may still fail after
 * them, with an `error` event (thrown by the provider's stage) or by ending the response as `response.failed`.
 * Held, so such a failure is the attempt's, retried and fallen back from as the same error over HTTP would be.
 *
 * A `response.failed` before anything was shown is taken as an error only when the upstream failed on its side
 * (`server_error`, a rate limit): a failure that is about the request (an invalid prompt or image) would fail on
 * every target, and reaches the client as it came, as the stream's final event.
 *
 * @module
 */
import { GatewayError } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { StreamStart } from "../../answer/stream_start.ts";

/** The lifecycle events that open a Responses stream. */
const LIFECYCLE = new Set(["response.created", "response.queued", "response.in_progress"]);

/** The `response.failed` error codes that say the upstream failed on its side, and their HTTP status. */
const UPSTREAM_FAILURES: ReadonlyMap<string, { status: number; type: string }> = new Map([
  ["server_error", { status: 502, type: "server_error" }],
  ["rate_limit_exceeded", { status: 429, type: "rate_limit_error" }],
]);

/** The error a `response.failed` event stands for when the upstream failed on its side; undefined otherwise. */
export function responseFailure(event: JsonObject, provider: string): GatewayError | undefined {
  if (event.type !== "response.failed" || !isObject(event.response)) return undefined;
  const error = event.response.error;
  if (!isObject(error) || typeof error.code !== "string") return undefined;
  const kind = UPSTREAM_FAILURES.get(error.code);
  if (kind === undefined) return undefined;
  const detail = typeof error.message === "string" && error.message !== "" ? `: ${error.message}` : ".";
  return new GatewayError(kind.status, `Provider "${provider}" failed the response${detail}`, {
    type: kind.type,
    code: error.code,
  });
}

/** How a native Responses stream commits. */
export const RESPONSES_START: StreamStart<JsonObject> = {
  shows: (event) => !LIFECYCLE.has(event.type as string),
  failure: responseFailure,
};
