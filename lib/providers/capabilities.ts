/**
 * What a target speaks: the capability table (`lib/config/provider_capabilities.ts`, one row per provider type)
 * applied to one resolved target, whose entry may switch a passthrough on (`native_responses`) and whose model
 * may narrow it (Claude on Bedrock). Routing's target narrowing and every client API ask here, never the
 * provider's `type` or whether a `Provider` object happens to have a method, so the answer is the same
 * everywhere and a new vendor changes one row.
 *
 * @module
 */
import {
  PROVIDER_CAPABILITIES,
  type ProviderCapabilities,
  type ProviderType,
} from "../config/provider_capabilities.ts";
import type { ResolvedTarget } from "../config/types.ts";
import type { GatewayError } from "../errors.ts";
import type { ChatRequest, EmbeddingRequest, JsonObject } from "../openai/types.ts";
import { servesMessages, versionReplaced } from "./bedrock/messages.ts";
import { bedrockBetas } from "./bedrock/betas.ts";
import { splitBetas } from "./anthropic/native.ts";
import { ANTHROPIC_PARAM_RULES } from "./anthropic/request.ts";
import { bedrockParamRules, isClaudeModel } from "./bedrock/request.ts";
import { geminiParamRules } from "./gemini/request.ts";
import { type ParamRules, paramVerdict } from "./shared/unsupported_params.ts";
import { claudeSamplingDropped } from "./shared/claude_sampling.ts";
import { cacheControlPaths } from "./shared/cache_control.ts";
import { messageNamesDropped } from "./shared/message_names.ts";
import { anthropicCacheDropped } from "./anthropic/cache_dropped.ts";
import { bedrockCacheDropped } from "./bedrock/cache_dropped.ts";
import { bedrockEmbeddingRefusal, bedrockEmbeddingRules } from "./bedrock/embeddings.ts";
import { GEMINI_EMBEDDING_RULES, geminiEmbeddingRefusal } from "./gemini/embeddings.ts";
import { builtinEmbeddingRefusal } from "./builtin/provider.ts";

export {
  PROVIDER_CAPABILITIES,
  PROVIDER_TYPES,
  type ProviderCapabilities,
  type ProviderType,
} from "../config/provider_capabilities.ts";

/** A client API other than chat and embeddings that an upstream may speak itself (its body passed through). */
export type NativeApi = "responses" | "messages" | "gemini";

/** The table's row for a provider type. */
export function capabilitiesOf(type: ProviderType): ProviderCapabilities {
  return PROVIDER_CAPABILITIES[type];
}

/**
 * Whether `target` speaks `api` itself, so a request of that API is passed through rather than translated to
 * the chat form. The provider built for such a target has the matching method (`responses`, `messages`).
 */
export function speaksNatively(target: ResolvedTarget, api: NativeApi): boolean {
  const row = PROVIDER_CAPABILITIES[target.providerConfig.type];
  if (api === "responses") return row.responses === "when_configured" && nativeResponsesOn(target);
  if (api === "gemini") return row.gemini;
  if (row.messages === "claude_models") return servesMessages(target.model);
  return row.messages === "always";
}

/** The entry's `native_responses` switch (false for a type that has none). */
function nativeResponsesOn(target: ResolvedTarget): boolean {
  const config = target.providerConfig;
  return "native_responses" in config && config.native_responses;
}

/** A client API with a token-counting endpoint: Responses' `input_tokens`, Messages' and Gemini's counts. */
export type CountingApi = "responses" | "messages" | "gemini";

/**
 * Whether `target`'s vendor counts exactly the input tokens of a count the client sent through `api` (its
 * provider has `countInputTokens`). `when_configured` is the Responses API's own counting endpoint, which counts
 * a Responses request only: a Messages or Gemini count is the gateway's there, decided before routing, so no
 * attempt is made (nor traced) on a target that would have nothing to send. `chatFormOnly`: the client's
 * body may not be sent (an input guardrail changed a text it cannot carry), only the chat form, which that
 * endpoint cannot count either; an `always` vendor counts it.
 */
export function countsInputTokens(target: ResolvedTarget, api: CountingApi, chatFormOnly = false): boolean {
  const counts = PROVIDER_CAPABILITIES[target.providerConfig.type].countTokens;
  return counts === "always" ||
    (counts === "when_configured" && api === "responses" && !chatFormOnly && nativeResponsesOn(target));
}

/**
 * `target`'s upstream as the OpenTelemetry GenAI conventions name it (`gen_ai.provider.name`): by its type, not
 * by the entry's name in config (see {@linkcode ProviderCapabilities.genAiProviderName}).
 */
export function genAiProviderName(target: ResolvedTarget): string {
  return PROVIDER_CAPABILITIES[target.providerConfig.type].genAiProviderName;
}

/**
 * Whether `target` takes `top_k` in the chat form: its type's row ({@linkcode ProviderCapabilities.topK}),
 * narrowed by the target as {@linkcode speaksNatively} narrows the Messages API. Claude on Bedrock takes it
 * (Converse has no field for it; Claude reads it from `additionalModelRequestFields`, as AWS's own Converse
 * examples for Claude send it), Bedrock's other models do not. An `openai` entry whose `base_url` is OpenAI's
 * own API (`api.openai.com`) does not: OpenAI answers "Unrecognized request argument supplied: top_k", where
 * the OpenAI-compatible servers the type also reaches (vLLM, Ollama, …) take it.
 */
export function takesTopK(target: ResolvedTarget): boolean {
  const config = target.providerConfig;
  const row = PROVIDER_CAPABILITIES[config.type].topK;
  if (config.type === "bedrock") return row || isClaudeModel(target.model);
  if (config.type === "openai") return row && !isOpenAIsOwnApi(config.base_url);
  return row;
}

/** Whether `baseUrl` is OpenAI's own API (which takes no parameter its reference does not list). */
function isOpenAIsOwnApi(baseUrl: string): boolean {
  try {
    return new URL(baseUrl).hostname.toLowerCase() === "api.openai.com";
  } catch {
    return false;
  }
}

/**
 * What `target` does with a chat request's parameters, decided before routing from the same rules its adapter
 * applies: null when it serves every one (always for OpenAI-compatible targets, which get them as sent); the
 * 400 naming the first one it refuses; or the ones it would go without (`unsupported_params: drop`), the
 * `top_p` Claude (Anthropic, Claude on Bedrock) goes without beside a `temperature`, and the `top_k` beside the
 * thinking a `reasoning_effort` turns on, whatever the mode (`shared/claude_sampling.ts`), the participant names
 * (`messages[i].name`) none of them has a field for, whatever the mode (`shared/message_names.ts`), and the
 * prompt-caching markers (`cache_control` on a message, a part, a tool call or a tool definition) it would
 * go without, by their paths: every one on Gemini and on Bedrock models other than Claude, those past the four
 * Anthropic and Claude on Bedrock take (`shared/cache_control.ts`). A client API routes only to targets without
 * a refusal, so an alias whose first target refuses a parameter is still served by one that takes it. `mode`
 * is the provider's `unsupported_params` unless given: a token count's body is built in `drop` mode whatever
 * the provider's (what it leaves out does not change the input's count), and names what it dropped so.
 */
export function chatParamsOn(
  target: ResolvedTarget,
  request: ChatRequest,
  mode?: "error" | "drop",
): { refusal: GatewayError } | { dropped: string[] } | null {
  const config = target.providerConfig;
  let rules: ParamRules;
  let markers: string[];
  let claude: boolean;
  switch (config.type) {
    case "anthropic":
      rules = ANTHROPIC_PARAM_RULES;
      markers = anthropicCacheDropped(request);
      claude = true;
      break;
    case "gemini":
      rules = geminiParamRules(request.stream === true);
      markers = cacheControlPaths(request);
      claude = false;
      break;
    case "bedrock":
      rules = bedrockParamRules(target.model);
      markers = bedrockCacheDropped(target.model, request);
      claude = isClaudeModel(target.model);
      break;
    default:
      return null;
  }
  const verdict = paramVerdict(request, rules, mode ?? config.unsupported_params);
  if (verdict !== null && "refusal" in verdict) return verdict;
  const dropped = verdict?.dropped ?? [];
  const sampling = claude ? claudeSamplingDropped(request, dropped) : [];
  // Every translated vendor goes without participant names (`shared/message_names.ts`).
  const names = messageNamesDropped(request.messages);
  if (markers.length === 0 && sampling.length === 0 && names.length === 0) return verdict;
  return { dropped: [...dropped, ...sampling, ...names, ...markers] };
}

/**
 * What `target` does with an embeddings request, decided before routing from the same checks its adapter's
 * `embed` makes, as {@linkcode chatParamsOn} for chat: null when it takes the request whole (always for
 * OpenAI-compatible targets, which get every field as sent); the 400 it would answer (Gemini and Bedrock take
 * text only, Bedrock's families offer a few `dimensions` each, the builtin model has its bounds; a field its
 * translation does not read, under `unsupported_params: error`); or the fields it would go without
 * (`unsupported_params: drop`). A client API routes only to targets without a refusal, so an alias whose first
 * target cannot take a request is still served by one that can.
 */
export function embeddingParamsOn(
  target: ResolvedTarget,
  request: EmbeddingRequest,
): { refusal: GatewayError } | { dropped: string[] } | null {
  const config = target.providerConfig;
  let refusal: GatewayError | null;
  let rules: ParamRules;
  switch (config.type) {
    case "gemini":
      refusal = geminiEmbeddingRefusal(request);
      rules = GEMINI_EMBEDDING_RULES;
      break;
    case "bedrock":
      refusal = bedrockEmbeddingRefusal(target.model, request);
      rules = bedrockEmbeddingRules(target.model);
      break;
    case "builtin":
      refusal = builtinEmbeddingRefusal(target.model, request);
      return refusal === null ? null : { refusal };
    default:
      return null;
  }
  if (refusal !== null) return { refusal };
  return paramVerdict(request, rules, config.unsupported_params);
}

/**
 * The client's beta names that `target`, the target that answered a Messages request, leaves out, as
 * `x-gateway-dropped` names them (`anthropic-beta:<name>`): those of `anthropicBeta` (its `anthropic-beta`, as
 * forwarded), and on Claude on Bedrock those of the body's `anthropic_beta` too (`body`, InvokeModel's own field,
 * held to the same list). None on Anthropic, which gets them all (the body as sent); on Claude on Bedrock the ones
 * its entry's list does not take (Bedrock refuses a request naming any other); every header name on a translated
 * target, whose chat form has no betas (the body's field is named there as a field the chat form goes without).
 */
export function anthropicBetasDropped(
  target: ResolvedTarget,
  anthropicBeta: string | null,
  body: JsonObject = {},
): string[] {
  if (!speaksNatively(target, "messages")) return anthropicBetaPaths(anthropicBeta);
  const config = target.providerConfig;
  if (config.type !== "bedrock") return [];
  return bedrockBetas(config, anthropicBeta, body.anthropic_beta).dropped.map(droppedBetaPath);
}

/**
 * `["anthropic_version"]` when `target`, the target that answered a Messages request, went without the body's
 * own `anthropic_version` (`body`): Claude on Bedrock, which gets the version Bedrock takes whatever the body
 * says. Nothing elsewhere: Anthropic gets the body as sent, and a translated target's chat form names it as a
 * field it goes without.
 */
export function anthropicVersionDropped(target: ResolvedTarget, body: JsonObject): string[] {
  const bedrock = speaksNatively(target, "messages") && target.providerConfig.type === "bedrock";
  return bedrock && versionReplaced(body) ? ["anthropic_version"] : [];
}

/**
 * Every name of the client's `anthropic-beta` (`anthropicBeta`, as forwarded), each once in the client's order,
 * as `x-gateway-dropped` names them: what a request that reached no Messages API went without (a translated
 * target's, or a count the gateway made from the chat form).
 */
export function anthropicBetaPaths(anthropicBeta: string | null): string[] {
  return [...new Set(splitBetas(anthropicBeta ?? ""))].map(droppedBetaPath);
}

/**
 * How a dropped beta name is shown in `x-gateway-dropped` and the usage record's `dropped`: a header's, told from
 * the body's field paths by its `anthropic-beta:` prefix.
 */
function droppedBetaPath(name: string): string {
  return `anthropic-beta:${name}`;
}

/**
 * The client's `openai-beta` names (`openaiBeta`, as forwarded) that a Responses request went without, as
 * `x-gateway-dropped` names them (`openai-beta:<name>`, each once). `target` is the target the client's
 * Responses body was sent to, with the opt-in: none on one whose row takes it (the table's
 * {@linkcode ProviderCapabilities.openaiBeta}), every one on another (Azure is not known to take them). Every one
 * when no target was sent that body (`target` null, or one that speaks no Responses API): the chat form has no
 * betas, whichever target it went to (a translated one, or a native one the request's guardrails served so), and
 * a count the gateway made reached none.
 */
export function openaiBetasDropped(target: ResolvedTarget | null, openaiBeta: string | null): string[] {
  if (openaiBeta === null) return [];
  const takes = target !== null && speaksNatively(target, "responses") &&
    PROVIDER_CAPABILITIES[target.providerConfig.type].openaiBeta;
  if (takes) return [];
  const names = openaiBeta.split(",").map((name) => name.trim()).filter((name) => name !== "");
  return [...new Set(names)].map((name) => `openai-beta:${name}`);
}
