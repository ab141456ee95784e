/**
 * The config entry of each provider type (`builtin`, `openai`, `anthropic`, `gemini`, `azure`, `bedrock`):
 * how to reach its upstream and what it accepts. One place to read or change when a provider is added
 * (docs/architecture.md, "How to add a provider"); `schema.ts` puts it in the whole file's schema, and
 * `provider_capabilities.ts` says what each type speaks (alias types, native passthroughs, token counting).
 *
 * @module
 */
import { z } from "zod";
import { awsAccessKeyId, headerCredential, headerMap } from "./header_map.ts";
import { positiveTimeout } from "./units_schema.ts";
import { AWS_REGION_MESSAGE, AWS_REGION_PATTERN } from "../aws/identity.ts";

/** An upstream call's deadline: above 0, which would end every call (or stream) at once. */
export const upstreamTimeout = positiveTimeout("0 would time out every upstream call at once");
/** A stream's silence deadline: above 0, which would cut every stream after its first chunk. */
export const upstreamIdleTimeout = positiveTimeout("0 would cut every stream after its first chunk");

/** Upstream timeouts; each may be overridden per provider and per target. */
export const timeoutsSchema = z.strictObject({
  /** Until the upstream's response headers (and so its first byte) arrive. */
  first_byte: upstreamTimeout.optional(),
  /** Longest silence between two chunks of a streamed answer. */
  idle: upstreamIdleTimeout.optional(),
  /** The whole upstream call, stream included. */
  total: upstreamTimeout.optional(),
});

/**
 * How an assistant turn's reasoning in the history (a chat client's `reasoning_content`, a Responses `reasoning`
 * item's text, a Messages `thinking` block's) goes to an OpenAI-compatible upstream. Vendors disagree: DeepSeek's
 * thinking mode and Kimi K2 refuse a tool loop's next turn without it as `reasoning_content` (the default),
 * OpenRouter reads it as `reasoning`, and Groq and Cerebras refuse an assistant turn carrying it (`drop`: not
 * sent; like `stream_usage`, for upstreams that reject it). Applied in `lib/providers/openai/reasoning_history.ts`.
 */
const reasoningHistory = z.enum(["reasoning_content", "reasoning", "drop"]).default("reasoning_content");

const builtinProvider = z.strictObject({ type: z.literal("builtin") });

const openaiProvider = z.strictObject({
  type: z.literal("openai"),
  base_url: z.url({ protocol: /^https?$/ }),
  api_key: headerCredential.optional(),
  /** Extra headers sent upstream (OpenAI-Organization, a proxy's auth, …). */
  headers: headerMap.default({}),
  timeouts: timeoutsSchema.default({}),
  /**
   * Ask the upstream for usage on streams (`stream_options.include_usage`) so every request is counted; the
   * extra chunk is removed again when the client did not ask for it. Turn off for upstreams that reject it.
   */
  stream_usage: z.boolean().default(true),
  reasoning_history: reasoningHistory,
  /**
   * The upstream speaks OpenAI's Responses API (`POST {base_url}/responses`): `/v1/responses` requests routed to
   * it are passed through (model rewritten, policy applied) instead of translated to chat, so built-in tools and
   * reasoning items keep their full fidelity.
   */
  native_responses: z.boolean().default(false),
});

/** Fields every vendor provider shares. */
const vendorCommon = {
  /** Extra headers sent upstream (a proxy's auth, beta flags, …). */
  headers: headerMap.default({}),
  timeouts: timeoutsSchema.default({}),
  /**
   * What to do with an OpenAI parameter the vendor cannot honour (`n > 1`, `logprobs`, …): `error` answers 400
   * naming the parameter; `drop` leaves it out of the vendor request. Nothing is dropped silently by default.
   */
  unsupported_params: z.enum(["error", "drop"]).default("error"),
};

const anthropicProvider = z.strictObject({
  type: z.literal("anthropic"),
  /** The API root; `/v1/messages` is appended. */
  base_url: z.url({ protocol: /^https?$/ }).default("https://api.anthropic.com"),
  api_key: headerCredential.min(1),
  anthropic_version: z.string().min(1).default("2023-06-01"),
  /** `max_tokens` is required by Anthropic; used when the client gives neither max_tokens nor max_completion_tokens. */
  default_max_tokens: z.number().int().min(1).default(4096),
  ...vendorCommon,
});

const geminiProvider = z.strictObject({
  type: z.literal("gemini"),
  /** The API root including the version; `/models/{model}:generateContent` etc. are appended. */
  base_url: z.url({ protocol: /^https?$/ }).default("https://generativelanguage.googleapis.com/v1beta"),
  api_key: headerCredential.min(1),
  ...vendorCommon,
});

const azureProvider = z.strictObject({
  type: z.literal("azure"),
  /**
   * The resource endpoint, `https://{resource}.openai.azure.com` (classic deployments form, needs
   * `api_version`), or the v1 API root `https://{resource}.openai.azure.com/openai/v1`.
   */
  base_url: z.url({ protocol: /^https?$/ }),
  api_key: headerCredential.min(1),
  /** Required for the classic `/openai/deployments/{deployment}/…?api-version=` form. */
  api_version: z.string().min(1).optional(),
  stream_usage: z.boolean().default(true),
  reasoning_history: reasoningHistory,
  /** As for `type: openai`: the resource's Responses API (`/openai/v1/responses`, or `/openai/responses`). */
  native_responses: z.boolean().default(false),
  ...vendorCommon,
});

const bedrockProvider = z.strictObject({
  type: z.literal("bedrock"),
  /** AWS region; falls back to AWS_REGION / AWS_DEFAULT_REGION. */
  region: z.string().regex(AWS_REGION_PATTERN, AWS_REGION_MESSAGE).optional(),
  /** Overrides `https://bedrock-runtime.{region}.amazonaws.com` (VPC endpoints, proxies, test fakes). */
  base_url: z.url({ protocol: /^https?$/ }).optional(),
  /** Credentials; each falls back to AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN. */
  access_key_id: awsAccessKeyId.min(1).optional(),
  secret_access_key: z.string().min(1).optional(),
  session_token: headerCredential.min(1).optional(),
  /**
   * The `anthropic-beta` names forwarded to Claude (InvokeModel's `anthropic_beta`); a client's other names are
   * left out and named in `x-gateway-dropped`, since Bedrock refuses a request naming one it does not take.
   * Unset: the built-in list (`lib/providers/bedrock/betas.ts`); `[]` forwards none.
   */
  anthropic_betas: z.array(
    z.string().regex(
      /^[A-Za-z0-9._-]{1,128}$/,
      "must be a beta name such as interleaved-thinking-2025-05-14",
    ),
  ).optional(),
  ...vendorCommon,
});

/** One provider: a kind of upstream plus how to reach it. */
export const providerSchema = z.discriminatedUnion("type", [
  builtinProvider,
  openaiProvider,
  anthropicProvider,
  geminiProvider,
  azureProvider,
  bedrockProvider,
]);

export type Timeouts = z.output<typeof timeoutsSchema>;
export type ProviderConfig = z.output<typeof providerSchema>;
export type OpenAIProviderConfig = z.output<typeof openaiProvider>;
export type AnthropicProviderConfig = z.output<typeof anthropicProvider>;
export type GeminiProviderConfig = z.output<typeof geminiProvider>;
/** How a provider sends the history's reasoning: {@linkcode reasoningHistory}. */
export type ReasoningHistory = z.output<typeof reasoningHistory>;
export type AzureProviderConfig = z.output<typeof azureProvider>;
export type BedrockProviderConfig = z.output<typeof bedrockProvider>;
