/**
 * The tolerance rule (lib/http/tolerance.ts) for chat completions. An OpenAI-compatible target gets every
 * parameter as sent; a vendor target (Anthropic, Gemini, Bedrock) translates what it can, and each parameter
 * it cannot serve is refused (400 `unsupported_parameter`) or, with its provider's `unsupported_params: drop`,
 * dropped — as its adapter's rules say, asked here before routing (`chatParamsOn`):
 *
 * - a target that would refuse a parameter is left out, so an alias mixing vendors is served by a target that
 *   takes the request, and the 400 comes only when no target can serve it (routing never sees a refusal, so it
 *   never ends the request at the first one);
 * - a `strict` alias leaves out the targets that would drop a parameter too (the 400 names the first one);
 * - the answer of a target that dropped some names them (`x-gateway-dropped`, the record's `dropped`), as on
 *   every other client API.
 *
 * @module
 */
import type { ResolvedModel, ResolvedTarget, RoutedTarget } from "../../config/types.ts";
import { type GatewayError, invalidRequest } from "../../errors.ts";
import type { ChatRequest } from "../../openai/types.ts";
import { chatParamsOn } from "../../providers/capabilities.ts";
import type { Tolerance } from "../../http/tolerance.ts";

/** The 400 of a `strict` alias whose target would go without `param`. */
function strictRefusal(param: string): GatewayError {
  return invalidRequest(
    `The parameter '${param}' is not supported by this alias's target, and the alias is strict; send the ` +
      "request without it.",
    param,
    "unsupported_parameter",
  );
}

/** Why `target` cannot serve `chat` on `model`, or null when it can. */
function cannotServe(model: ResolvedModel, target: ResolvedTarget, chat: ChatRequest): GatewayError | null {
  const verdict = chatParamsOn(target, chat);
  if (verdict === null) return null;
  if ("refusal" in verdict) return verdict.refusal;
  return model.strict ? strictRefusal(verdict.dropped[0]) : null;
}

/**
 * `model` with only the targets that serve `chat` (`model` itself when all do: nothing is allocated then); the
 * first target's refusal when none does.
 */
export function chatServingTargets(model: ResolvedModel, chat: ChatRequest): ResolvedModel {
  let kept: RoutedTarget[] | null = null;
  let refusal: GatewayError | null = null;
  const targets = model.targets;
  for (let i = 0; i < targets.length; i++) {
    const reason = cannotServe(model, targets[i], chat);
    if (reason === null) {
      kept?.push(targets[i]);
      continue;
    }
    refusal ??= reason;
    kept ??= targets.slice(0, i);
  }
  if (kept === null) return model;
  if (kept.length === 0) throw refusal!;
  return { ...model, targets: kept };
}

/**
 * What `target` (the one that answered) went without of `chat`, as the request's tolerance for `noteDropped`;
 * null when it got every parameter.
 */
export function chatTolerance(target: ResolvedTarget, chat: ChatRequest): Tolerance | null {
  const verdict = chatParamsOn(target, chat);
  return verdict !== null && "dropped" in verdict
    ? { refusal: null, native: [], dropped: verdict.dropped }
    : null;
}
