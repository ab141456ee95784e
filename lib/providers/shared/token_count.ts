/**
 * Reading the count in a vendor's token-counting answer (Anthropic's `input_tokens`, Gemini's `totalTokens`,
 * Bedrock's `inputTokens`). The answer is upstream input: anything but a non-negative whole number is a 502,
 * which the caller turns into the gateway's own estimate rather than passing a wrong number on as exact.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { isTokenCount } from "../../openai/usage_counts.ts";

/** The count under `key` in a counting answer; a 502 `upstream_invalid_response` when it is not one. */
export function tokenCountField(json: JsonObject, key: string, provider: string): number {
  const value = json[key];
  if (isTokenCount(value)) return value;
  throw badGateway(
    `Provider "${provider}" answered a token count without a valid '${key}'.`,
    "upstream_invalid_response",
  );
}
