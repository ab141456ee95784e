/**
 * What each provider type speaks: the one table behind every "can this target do X?" question. It is pure data
 * keyed by the config entry's `type`, and it lives beside the entries (`provider_schema.ts`) because both sides
 * need it: config validation asks which alias types a type may serve (`PROVIDER_SERVES`, below), and config
 * must not depend on the providers, which depend on it. Everything else asks through
 * `lib/providers/capabilities.ts`, which applies this table to one resolved target (its `native_responses`
 * flag, its model) — so nothing outside `lib/providers/` and `lib/config/` reads a provider's `type`.
 *
 * Adding a provider type without a row here does not compile; `lib/providers/capabilities_test.ts` holds each
 * row against what the type's adapter actually implements.
 *
 * @module
 */
import type { ProviderConfig } from "./provider_schema.ts";
import type { ModelType } from "./schema.ts";

/** A provider entry's `type`. */
export type ProviderType = ProviderConfig["type"];

/** What one provider type can do, as the gateway's client APIs and config validation need to know it. */
export interface ProviderCapabilities {
  /**
   * The alias types (`models.<alias>.type`) its targets may serve: chat completions, embeddings, moderations
   * (OpenAI's `/moderations`, which only OpenAI itself has: Azure OpenAI does not offer it, its moderation is
   * the separate Content Safety service).
   */
  readonly serves: readonly ModelType[];
  /**
   * Speaks OpenAI's Responses API, so `/v1/responses` is passed through instead of translated:
   * `when_configured` means only an entry with `native_responses: true`.
   */
  readonly responses: "never" | "when_configured";
  /**
   * Where it speaks the Responses API: takes the client's opt-in to a beta of it (the `openai-beta` header and
   * `?beta=true`, as the openai SDK's `client.beta.responses` sends them), which is then passed on as sent.
   * OpenAI's own API does; Azure OpenAI is not known to (its Responses API documents no such header), so there
   * the opt-in is named as dropped, as on a translated target.
   */
  readonly openaiBeta: boolean;
  /**
   * Speaks Anthropic's Messages API, so `/v1/messages` is passed through instead of translated: with every
   * model, or only with Claude models (Bedrock, where the same entry also serves Nova, Llama, …).
   */
  readonly messages: "never" | "always" | "claude_models";
  /** Speaks Google's Gemini API, so `/v1beta/models/{alias}:generateContent` is passed through. */
  readonly gemini: boolean;
  /**
   * Has a vendor endpoint that counts a request's input tokens exactly (the gateway estimates otherwise):
   * `when_configured` means the Responses API's own counting endpoint, so only with `native_responses: true`,
   * and only a Responses request's count (`countsInputTokens`).
   */
  readonly countTokens: "never" | "always" | "when_configured";
  /**
   * Takes `top_k` in the chat form (OpenAI-compatible servers such as vLLM and Ollama do; OpenAI itself answers
   * its own 400). A translated Messages request with `top_k` is kept from targets that do not.
   */
  readonly topK: boolean;
  /**
   * The upstream as the OpenTelemetry GenAI conventions name it (`gen_ai.provider.name`, one of their
   * well-known values): `openai` also for an OpenAI-compatible server (vLLM, Ollama), as the conventions have
   * it for whatever an OpenAI client reaches; the built-in model is the gateway's own, `gateway.builtin`.
   */
  readonly genAiProviderName: string;
}

/** The table: one row per provider type. */
export const PROVIDER_CAPABILITIES: Readonly<Record<ProviderType, ProviderCapabilities>> = {
  builtin: {
    serves: ["chat", "embedding"],
    gemini: false,
    responses: "never",
    openaiBeta: false,
    messages: "never",
    countTokens: "never",
    topK: false,
    genAiProviderName: "gateway.builtin",
  },
  openai: {
    serves: ["chat", "embedding", "moderation"],
    gemini: false,
    responses: "when_configured",
    openaiBeta: true,
    messages: "never",
    countTokens: "when_configured",
    topK: true,
    genAiProviderName: "openai",
  },
  anthropic: {
    serves: ["chat"],
    gemini: false,
    responses: "never",
    openaiBeta: false,
    messages: "always",
    countTokens: "always",
    topK: true,
    genAiProviderName: "anthropic",
  },
  gemini: {
    serves: ["chat", "embedding"],
    gemini: true,
    responses: "never",
    openaiBeta: false,
    messages: "never",
    countTokens: "always",
    topK: false,
    genAiProviderName: "gcp.gemini",
  },
  azure: {
    serves: ["chat", "embedding"],
    gemini: false,
    responses: "when_configured",
    openaiBeta: false,
    messages: "never",
    countTokens: "when_configured",
    topK: false,
    genAiProviderName: "azure.ai.openai",
  },
  bedrock: {
    serves: ["chat", "embedding"],
    gemini: false,
    responses: "never",
    openaiBeta: false,
    messages: "claude_models",
    countTokens: "always",
    topK: false,
    genAiProviderName: "aws.bedrock",
  },
};

/** Every provider type, in the table's order. */
export const PROVIDER_TYPES: readonly ProviderType[] = Object.freeze(
  Object.keys(PROVIDER_CAPABILITIES) as ProviderType[],
);

/**
 * Which alias types each provider type can serve: the table's `serves` column, which `semantic_checks.ts`
 * holds every target to.
 */
export const PROVIDER_SERVES: Readonly<Record<ProviderType, readonly ModelType[]>> = Object.freeze(
  Object.fromEntries(PROVIDER_TYPES.map((type) => [type, PROVIDER_CAPABILITIES[type].serves])) as Record<
    ProviderType,
    readonly ModelType[]
  >,
);
