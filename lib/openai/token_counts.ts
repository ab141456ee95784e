/**
 * The parameters of OpenAI's `TokenCountsBody` (`POST /v1/responses/input_tokens`, "Get input token counts"):
 * one list for the gateway's own endpoint, which refuses any other field as OpenAI does, and for the native
 * upstreams that count, whose counting request carries only these fields of a Responses body (`stream`,
 * `store`, `metadata`… would be refused there as unknown).
 *
 * @module
 */
export const TOKEN_COUNTS_FIELDS: readonly string[] = [
  "model",
  "input",
  "previous_response_id",
  "tools",
  "text",
  "reasoning",
  "truncation",
  "instructions",
  "personality",
  "conversation",
  "tool_choice",
  "parallel_tool_calls",
];
