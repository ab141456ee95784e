/**
 * The config entry of each external guardrail service, one strict object per `type`. Kept apart from the
 * adapters and importing only zod (and the config's one header map, itself only zod), so the config schema can
 * take it without pulling in the adapters (and without an import cycle through them).
 *
 * Credentials use the key names the config loader masks in messages (`api_key`, `secret`, `access_key_id`,
 * `secret_access_key`, `session_token`, anything under `headers`). What the caller wraps around a service
 * (its timeout, fail-open or fail-closed, the phases it runs in) is not here: extend these objects with it.
 *
 * @module
 */
import { z } from "zod";
import { awsAccessKeyId, headerCredential, headerMap } from "../../config/header_map.ts";
import { AWS_REGION_MESSAGE, AWS_REGION_PATTERN } from "../../aws/identity.ts";

/** The harm categories Azure AI Content Safety scores. */
export const AZURE_CATEGORIES = ["Hate", "SelfHarm", "Sexual", "Violence"] as const;

const httpUrl = z.url({ protocol: /^https?$/ });
const awsRegion = z.string().regex(AWS_REGION_PATTERN, AWS_REGION_MESSAGE);
const azureSeverity = z.number().int().min(0).max(7);

/** The gateway's own contract: the texts POSTed as JSON, one of four actions back. */
export const webhookGuardrailSchema = z.strictObject({
  type: z.literal("webhook"),
  /** Where the texts are POSTed. */
  url: httpUrl,
  /** Extra headers sent with every call (a receiver's own auth, …); masked in messages. */
  headers: headerMap.optional(),
  /** HMAC-SHA256 key: when set, each call carries `x-gateway-signature: sha256=<hex>` over the raw body. */
  secret: z.string().min(1).optional(),
});

/** OpenAI's moderation endpoint. */
export const openaiModerationGuardrailSchema = z.strictObject({
  type: z.literal("openai_moderation"),
  /** The API's base URL, `/moderations` appended; default `https://api.openai.com/v1`. */
  base_url: httpUrl.optional(),
  /** Sent as `Authorization: Bearer …`. */
  api_key: headerCredential.min(1),
  /** The moderation model; default `omni-moderation-latest`. */
  model: z.string().min(1).optional(),
  /** Category (`violence`, `harassment/threatening`, …) → score in [0, 1] that catches a text, flagged or not. */
  thresholds: z.record(z.string().min(1), z.number().min(0).max(1)).optional(),
  /** What a caught text does: `deny` (default) refuses, `flag` only records the categories. */
  action_on_flag: z.enum(["deny", "flag"]).optional(),
  /** Extra headers (OpenAI-Organization, a proxy's auth, …); masked in messages. */
  headers: headerMap.optional(),
});

/** An Amazon Bedrock guardrail, through `ApplyGuardrail`. */
export const bedrockGuardrailSchema = z.strictObject({
  type: z.literal("bedrock"),
  /** The guardrail's id or ARN. */
  guardrail_identifier: z.string().regex(
    /^([a-z0-9]+|arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail\/[a-z0-9]+)$/,
    "must be a guardrail id or ARN",
  ),
  /** A published version number, or `DRAFT`. */
  guardrail_version: z.string().regex(/^(DRAFT|[1-9][0-9]{0,7})$/, "must be a version number or DRAFT"),
  /** AWS region; falls back to AWS_REGION / AWS_DEFAULT_REGION. */
  region: awsRegion.optional(),
  /** Overrides `https://bedrock-runtime.{region}.amazonaws.com` (VPC endpoints, proxies, test fakes). */
  endpoint: httpUrl.optional(),
  /** Credentials; each falls back to AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN. */
  access_key_id: awsAccessKeyId.min(1).optional(),
  secret_access_key: z.string().min(1).optional(),
  session_token: headerCredential.min(1).optional(),
});

/** Azure AI Content Safety's `text:analyze`. */
export const azureContentSafetyGuardrailSchema = z.strictObject({
  type: z.literal("azure_content_safety"),
  /** The resource's endpoint, `https://<resource>.cognitiveservices.azure.com`. */
  endpoint: httpUrl,
  /** One of the resource's keys, sent as `Ocp-Apim-Subscription-Key`. */
  api_key: headerCredential.min(1),
  /** The categories asked about; all four when absent. */
  categories: z.array(z.enum(AZURE_CATEGORIES)).min(1).optional(),
  /** Severity (0, 2, 4, 6) at or above which a text is caught; default 4. */
  severity_threshold: azureSeverity.optional(),
  /** Per-category thresholds that override `severity_threshold` (`{ Hate: 2 }`). */
  category_thresholds: z.partialRecord(z.enum(AZURE_CATEGORIES), azureSeverity).optional(),
  /** Blocklists to check as well; a match catches the text as `Blocklist:<name>`. */
  blocklist_names: z.array(z.string().regex(/^[0-9A-Za-z_.~-]{1,64}$/, "must be a blocklist name")).min(1)
    .optional(),
  /** Calls in flight at most for one check (long texts are split into 10,000-character pieces); default 4. */
  concurrency: z.number().int().min(1).max(32).optional(),
});

/** One external guardrail service, by `type`. */
export const guardrailServiceSchema = z.discriminatedUnion("type", [
  webhookGuardrailSchema,
  openaiModerationGuardrailSchema,
  bedrockGuardrailSchema,
  azureContentSafetyGuardrailSchema,
]);

export type GuardrailServiceConfig = z.output<typeof guardrailServiceSchema>;
export type WebhookGuardrailEntry = z.output<typeof webhookGuardrailSchema>;
export type OpenAIModerationGuardrailEntry = z.output<typeof openaiModerationGuardrailSchema>;
export type BedrockGuardrailEntry = z.output<typeof bedrockGuardrailSchema>;
export type AzureContentSafetyGuardrailEntry = z.output<typeof azureContentSafetyGuardrailSchema>;
