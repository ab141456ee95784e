/**
 * Where and as whom a Bedrock provider calls: region, endpoint and credentials from the config entry or the
 * standard AWS environment variables, and the URL of each action.
 *
 * @module
 */
import type { BedrockProviderConfig } from "../../config/schema.ts";
import { type AwsCredentials, uriEncode } from "../../aws/sigv4.ts";
import { resolveAwsIdentity } from "../../aws/identity.ts";

/** Where and as whom a Bedrock provider calls. */
export interface BedrockSettings {
  region: string;
  baseUrl: string;
  credentials: AwsCredentials;
}

/**
 * Region, endpoint and credentials for a config entry, the region and credentials falling back to the AWS
 * environment variables (`aws/identity.ts`). Throws an `Error` naming what is missing.
 */
export function resolveBedrockSettings(
  config: BedrockProviderConfig,
  env: Readonly<Record<string, string | undefined>>,
): BedrockSettings {
  const { region, credentials } = resolveAwsIdentity(config, env, "provider");
  const baseUrl = (config.base_url ?? `https://bedrock-runtime.${region}.amazonaws.com`).replace(/\/+$/, "");
  return { region, baseUrl, credentials };
}

/** The Bedrock runtime actions the gateway calls (the last segment of the path). */
export type BedrockAction =
  | "converse"
  | "converse-stream"
  | "invoke"
  | "invoke-with-response-stream"
  | "count-tokens";

/** `{base}/model/{modelId}/{action}` with the model id percent-encoded once (`:` → `%3A`, `/` → `%2F`). */
export function bedrockUrl(baseUrl: string, modelId: string, action: BedrockAction) {
  return `${baseUrl}/model/${uriEncode(modelId)}/${action}`;
}
