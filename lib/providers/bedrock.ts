/**
 * PLACEHOLDER — being implemented; replaced by the real Bedrock adapter.
 *
 * @module
 */
import type { BedrockProviderConfig } from "../config/schema.ts";
import { GatewayError } from "../errors.ts";
import type { Provider } from "./types.ts";

/** Creates the provider for one `type: bedrock` config entry. */
export function createBedrockProvider(
  _config: BedrockProviderConfig,
  _env: Readonly<Record<string, string | undefined>>,
): Provider {
  const missing = () => Promise.reject(new GatewayError(501, "not implemented"));
  return { chat: missing, embed: missing };
}
