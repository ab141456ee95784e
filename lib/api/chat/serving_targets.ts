/**
 * The alias's targets that can serve a chat request, decided before routing from each target's parameter
 * rules (`chatParamsOn`, the rules its adapter applies): a target that would refuse a parameter is left out,
 * so an alias mixing vendors is served by a target that takes the request, and the 400 comes only when no
 * target can serve it. Routing never sees a target's refusal, so it never ends the request on the first one.
 *
 * @module
 */
import type { ResolvedModel, RoutedTarget } from "../../config/types.ts";
import type { GatewayError } from "../../errors.ts";
import type { ChatRequest } from "../../openai/types.ts";
import { chatParamsOn } from "../../providers/capabilities.ts";

/**
 * `model` with only the targets that serve `chat` (`model` itself when all do: nothing is allocated then); the
 * first target's refusal when none does.
 */
export function chatServingTargets(model: ResolvedModel, chat: ChatRequest): ResolvedModel {
  let kept: RoutedTarget[] | null = null;
  let refusal: GatewayError | null = null;
  const targets = model.targets;
  for (let i = 0; i < targets.length; i++) {
    const verdict = chatParamsOn(targets[i], chat);
    if (verdict === null || !("refusal" in verdict)) {
      kept?.push(targets[i]);
      continue;
    }
    refusal ??= verdict.refusal;
    kept ??= targets.slice(0, i);
  }
  if (kept === null) return model;
  if (kept.length === 0) throw refusal!;
  return { ...model, targets: kept };
}
