/**
 * External guardrail services (issue 27): the config entry of each (`schema.ts`) and one factory that turns
 * an entry into a {@linkcode GuardrailService}. Each adapter only asks its service and maps the answer to a
 * verdict, throwing on transport errors, non-2xx and malformed answers; the caller adds the timeout (through
 * the signal) and decides whether a failure fails open or closed.
 *
 * The table below dispatches by `type` rather than a `switch`, so each adapter's config type follows from
 * its `type` literal and adding a service is one row.
 *
 * @module
 */
import type { GuardrailService } from "../types.ts";
import { createAzureContentSafetyGuardrail } from "./azure_content_safety.ts";
import { createBedrockGuardrail } from "./bedrock_guardrail.ts";
import type { ServiceDeps } from "./http.ts";
import { createOpenAIModerationGuardrail } from "./openai_moderation.ts";
import type { GuardrailServiceConfig } from "./schema.ts";
import { createWebhookGuardrail } from "./webhook.ts";

export {
  AZURE_CATEGORIES,
  azureContentSafetyGuardrailSchema,
  bedrockGuardrailSchema,
  guardrailServiceSchema,
  openaiModerationGuardrailSchema,
  webhookGuardrailSchema,
} from "./schema.ts";
export type {
  AzureContentSafetyGuardrailEntry,
  BedrockGuardrailEntry,
  GuardrailServiceConfig,
  OpenAIModerationGuardrailEntry,
  WebhookGuardrailEntry,
} from "./schema.ts";
export { type FetchLike, GuardrailServiceError, MAX_ANSWER_BYTES, type ServiceDeps } from "./http.ts";
export { createAzureContentSafetyGuardrail, createBedrockGuardrail, createOpenAIModerationGuardrail };
export { createWebhookGuardrail };

type Factories = {
  [K in GuardrailServiceConfig["type"]]: (
    config: Extract<GuardrailServiceConfig, { type: K }>,
    deps: ServiceDeps,
  ) => GuardrailService;
};

const FACTORIES: Factories = {
  webhook: createWebhookGuardrail,
  openai_moderation: createOpenAIModerationGuardrail,
  bedrock: createBedrockGuardrail,
  azure_content_safety: createAzureContentSafetyGuardrail,
};

/**
 * The service for a config entry. `deps.fetch` defaults to the global `fetch`; `deps.env` supplies the AWS
 * variables a Bedrock entry falls back to (nothing is read from the process here). Throws when an entry
 * cannot make a service (a Bedrock entry with no region or credentials).
 */
export function createGuardrailService(
  config: GuardrailServiceConfig,
  deps: ServiceDeps = {},
): GuardrailService {
  const factory = FACTORIES[config.type] as (
    config: GuardrailServiceConfig,
    deps: ServiceDeps,
  ) => GuardrailService;
  return factory(config, deps);
}
