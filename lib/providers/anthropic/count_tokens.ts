/**
 * Anthropic's token counting (`POST /v1/messages/count_tokens`): the body is the Messages request the chat
 * would send (or, for a client that sent a Messages request, its own body with the target's model), without the fields the counting endpoint refuses (`max_tokens`, `stream`, sampling, metadata),
 * and the answer is `{input_tokens}`. Counting is free at Anthropic and exact for the model named.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { tokenCountField } from "../shared/token_count.ts";

/** The Messages fields the counting endpoint takes (the ones that can change the input's token count). */
const COUNTED = ["model", "messages", "system", "tools", "tool_choice", "thinking"] as const;

/** `{base_url}/v1/messages/count_tokens`. */
export function countTokensUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/v1/messages/count_tokens`;
}

/** The counting body for a Messages request (translated or the client's): its counted fields only. */
export function countTokensBody(messages: JsonObject): JsonObject {
  const body: JsonObject = {};
  for (const key of COUNTED) if (messages[key] !== undefined) body[key] = messages[key];
  return body;
}

/** The count in Anthropic's answer; a 502 for an answer without one. */
export function anthropicInputTokens(json: JsonObject, provider: string): number {
  return tokenCountField(json, "input_tokens", provider);
}
