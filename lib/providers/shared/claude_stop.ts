/**
 * Claude's rule for stop sequences, on Anthropic's Messages API and Claude on Bedrock alike: each must contain a
 * character other than whitespace. Anthropic refuses the whole request otherwise ("stop_sequences: each stop
 * sequence must contain non-whitespace"), naming a field the OpenAI client never sent, and Bedrock passes
 * Claude's own validation on ("The model returned the following errors: …").
 *
 * A blank stop sequence is not a value that changes nothing: `stop: ["\n"]` (one line of answer) is a common
 * completion-style request, and an answer without it is longer than the client asked. So it is a value Claude
 * cannot honour, under the one rule for those (`./unsupported_params.ts`), as a temperature above 1 is: checked
 * before routing, so an alias's target that takes it (an OpenAI-compatible one) serves the request; refused by
 * name (`stop`) when no target does; left out and named under `unsupported_params: drop`.
 *
 * @module
 */

/** For the parameter rules: a `stop` (a string or a list of them) with a sequence that is blank. */
export function claudeStopUnsupported(value: unknown): boolean {
  const sequences: unknown[] = Array.isArray(value) ? value : [value];
  return sequences.some((s) => typeof s === "string" && s.trim() === "");
}

/** Why a `stop` is refused, for the 400's message (`ParamRules.reason`). */
export const CLAUDE_STOP_REASON =
  "with an empty or whitespace-only sequence (Claude takes only sequences with a non-whitespace character)";
