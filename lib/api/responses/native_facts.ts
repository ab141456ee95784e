/**
 * What a Responses answer passed through from a native target (lib/answer/routed.ts `NativeFacts`) tells its
 * request's trace, read only when the request is traced: the upstream's Response id and model, how it ended in
 * the chat form's words (as a translated answer reports it), the cached input and reasoning of its usage, and
 * its texts. A stream's Response comes in its `response.*` events, the final one with the status and usage.
 *
 * @module
 */
import type { NativeAnswerFacts, NativeFacts } from "../../answer/runner.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { nativeUsage } from "./native.ts";
import { outputSaid } from "./output_texts.ts";
import { callsClient } from "./client_calls.ts";

/**
 * How a Response ended as a chat `finish_reason`: completed is `stop` (`tool_calls` when it asks the client to
 * run a call, client_calls.ts); incomplete for the output limit is `length`, for the content filter
 * `content_filter`; a Response not yet ended, or failed, has none.
 */
export function responseFinishReason(response: JsonObject): string | undefined {
  if (response.status === "completed") return callsClient(response) ? "tool_calls" : "stop";
  if (response.status !== "incomplete") return undefined;
  const reason = isObject(response.incomplete_details) ? response.incomplete_details.reason : undefined;
  if (reason === "max_output_tokens") return "length";
  return typeof reason === "string" ? reason : "length";
}

/** What a Response (whole, or in a stream event) says of itself. */
function responseFacts(response: JsonObject): NativeAnswerFacts {
  const reason = responseFinishReason(response);
  const usage = nativeUsage(response);
  return {
    id: response.id,
    model: response.model,
    finishReasons: reason === undefined ? undefined : [reason],
    tokens: usage && { cachedRead: usage.cachedRead, reasoning: usage.reasoning },
  };
}

/** The facts of Responses answers. */
export const RESPONSES_FACTS: NativeFacts = {
  answer: (body) => ({ ...responseFacts(body), said: outputSaid(body) }),
  event: (event) => isObject(event.response) ? responseFacts(event.response) : undefined,
};
