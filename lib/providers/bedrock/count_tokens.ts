/**
 * Bedrock's token counting (CountTokens, `POST /model/{modelId}/count-tokens`) for the Converse form: the
 * body is `{input: {converse: {messages, system, toolConfig, additionalModelRequestFields}}}` — the parts of the
 * Converse request that are input (inference settings are not) — and the answer is `{inputTokens}`. Only some models can count (AWS
 * answers others with a 400 ValidationException), so a failure here is routine and the caller estimates.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { tokenCountField } from "../shared/token_count.ts";

/** The Converse fields CountTokens takes. */
const COUNTED = ["messages", "system", "toolConfig", "additionalModelRequestFields"] as const;

/**
 * The CountTokens body for a translated Converse request. Claude's `top_k` is a sampling setting, not input:
 * it is left out of `additionalModelRequestFields` (its `thinking` stays: it is counted).
 */
export function countTokensBody(converse: JsonObject): JsonObject {
  const counted: JsonObject = {};
  for (const key of COUNTED) if (converse[key] !== undefined) counted[key] = converse[key];
  const additional = counted.additionalModelRequestFields;
  if (isObject(additional) && additional.top_k !== undefined) {
    const { top_k: _sampling, ...input } = additional;
    if (Object.keys(input).length > 0) counted.additionalModelRequestFields = input;
    else delete counted.additionalModelRequestFields;
  }
  return { input: { converse: counted } };
}

/**
 * A cross-region inference profile id (`us.anthropic.claude-…`), or an inference-profile ARN ending in one, and
 * the foundation model id it names. AWS's geographic prefixes; an application inference profile ARN names no
 * model, so it has none.
 */
const PROFILE_ID =
  /^(?:arn:aws[\w-]*:bedrock:[\w-]*:\d*:inference-profile\/)?(?:us|us-gov|eu|apac|jp|au|ca|global)\.([\w-]+\.[^/]+)$/;

/**
 * The model ids to count with, in order: for an inference profile, its foundation model first, then the profile
 * as configured; any other id alone. CountTokens takes "the unique identifier or ARN of the foundation model",
 * and public reports show it refusing profile ids for Claude ("The provided model doesn't support counting
 * tokens.") while counting the bare id; one report has the opposite for some models, hence the second try.
 * Newer Claude models are invoked through profiles only, so without this nearly every Claude-on-Bedrock count
 * would be the gateway's estimate.
 */
export function countModelIds(model: string): readonly string[] {
  const foundation = PROFILE_ID.exec(model)?.[1];
  return foundation === undefined ? [model] : [foundation, model];
}

/** The count in Bedrock's answer; a 502 for an answer without one. */
export function bedrockInputTokens(json: JsonObject, provider: string): number {
  return tokenCountField(json, "inputTokens", provider);
}
