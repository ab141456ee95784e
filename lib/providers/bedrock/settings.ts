/**
 * Where and as whom a Bedrock provider calls: region, endpoint and credentials from the config entry or the
 * standard AWS environment variables, and the URL of each action.
 *
 * @module
 */
import type { BedrockProviderConfig } from "../../config/schema.ts";
import { type AwsCredentials, uriEncode } from "../../aws/sigv4.ts";

/** Where and as whom a Bedrock provider calls. */
export interface BedrockSettings {
  region: string;
  baseUrl: string;
  credentials: AwsCredentials;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== "" ? value : undefined;
}

/**
 * Region, endpoint and credentials for a config entry. Each credential falls back to the AWS environment
 * variables; a session token from the environment is used only with the environment's key pair, so a key pair
 * written in config is never mixed with another identity's token. Throws an `Error` naming what is missing.
 */
export function resolveBedrockSettings(
  config: BedrockProviderConfig,
  env: Readonly<Record<string, string | undefined>>,
): BedrockSettings {
  const region = config.region ?? nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION);
  if (region === undefined) {
    throw new Error("no AWS region: set `region` in the provider entry, or AWS_REGION / AWS_DEFAULT_REGION");
  }
  const fromConfig = config.access_key_id !== undefined || config.secret_access_key !== undefined;
  const accessKeyId = config.access_key_id ?? nonEmpty(env.AWS_ACCESS_KEY_ID);
  const secretAccessKey = config.secret_access_key ?? nonEmpty(env.AWS_SECRET_ACCESS_KEY);
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    throw new Error(
      "no AWS credentials: set `access_key_id` and `secret_access_key` in the provider entry, or " +
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment",
    );
  }
  const sessionToken = config.session_token ?? (fromConfig ? undefined : nonEmpty(env.AWS_SESSION_TOKEN));
  const baseUrl = (config.base_url ?? `https://bedrock-runtime.${region}.amazonaws.com`).replace(/\/+$/, "");
  return { region, baseUrl, credentials: { accessKeyId, secretAccessKey, sessionToken } };
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
