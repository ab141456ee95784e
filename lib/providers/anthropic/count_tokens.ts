/**
 * Anthropic's token counting (`POST /v1/messages/count_tokens`): the body is the Messages request the chat
 * would send (or, for a client that sent a Messages request, its own body with the target's model), less the
 * parameters that shape the generation rather than the input (`max_tokens`, `stream`, sampling, stop
 * sequences, metadata, service tier), which the counting endpoint refuses. Every other field goes as it is
 * (`system`, `tools`, `thinking`, `cache_control`, `output_config`, `context_management`, `mcp_servers`,
 * `speed`, `compaction`, and whatever Anthropic adds next): what the request carries is counted, or Anthropic
 * says why not, never silently left out. The answer is `{input_tokens}`. Counting is free at Anthropic and
 * exact for the model named.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { tokenCountField } from "../shared/token_count.ts";
import { MESSAGES_GENERATION_PARAMS } from "../count_tokens_fields.ts";

/** What the counting endpoint refuses (the generation's parameters): left out of the body it is sent. */
const NOT_COUNTED: ReadonlySet<string> = new Set(MESSAGES_GENERATION_PARAMS);

/** `{base_url}/v1/messages/count_tokens`. */
export function countTokensUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/v1/messages/count_tokens`;
}

/** The counting body for a Messages request (translated or the client's): all of it but the generation's. */
export function countTokensBody(messages: JsonObject): JsonObject {
  const body: JsonObject = {};
  for (const [key, value] of Object.entries(messages)) if (!NOT_COUNTED.has(key)) body[key] = value;
  return body;
}

/** The count in Anthropic's answer; a 502 for an answer without one. */
export function anthropicInputTokens(json: JsonObject, provider: string): number {
  return tokenCountField(json, "input_tokens", provider);
}
