/**
 * `output_config.effort` as a hint. Claude Code sends `output_config: {effort: "high"}` (with adaptive thinking:
 * the model decides whether to think) on every request; the chat form carries it as `reasoning_effort`, which a
 * translated target may have no control for (Bedrock's models other than Claude: Converse has no field for it).
 * How much effort an answer gets is how it is worked out, not what the client reads, as `speed` and
 * `thinking.display` are: such a target gets the chat form without it, and `output_config.effort` is named in
 * `x-gateway-dropped` and the usage record's `dropped` (the chat form's name, in the client's terms), whatever
 * the provider's `unsupported_params`, rather than refused or the target left out for the alias's others. A
 * `strict` alias refuses the drop, as every drop. An effort that came with `thinking: {type: "enabled"}` is the
 * thinking the client asked for: judged by the target's rules as before (refused by a target that cannot think).
 *
 * @module
 */
import type { ResolvedTarget } from "../../config/types.ts";
import { chatParamsOn } from "../../providers/capabilities.ts";
import type { MessagesRequest } from "./request.ts";

/** What {@linkcode effortWithheld} withholds. */
const EFFORT: readonly string[] = ["reasoning_effort"];
const NOTHING: readonly string[] = [];

/**
 * The chat form's params a target does not get of `parsed` (`ChatForm.withheld`): `reasoning_effort` when it is
 * a hint (`MessagesRequest.effortHint`) and the target's parameter rules cannot take it (would refuse it, or
 * drop it); undefined when the request has no such hint, so nothing is withheld from any target.
 */
export function effortWithheld(
  parsed: MessagesRequest,
): ((target: ResolvedTarget) => readonly string[]) | undefined {
  if (!parsed.effortHint) return undefined;
  const chat = parsed.chat;
  return (target) => {
    // In `drop` mode a target's rules list what it cannot take instead of refusing the first one.
    const verdict = chatParamsOn(target, chat, "drop");
    const cannot = verdict !== null && "dropped" in verdict && verdict.dropped.includes("reasoning_effort");
    return cannot ? EFFORT : NOTHING;
  };
}
