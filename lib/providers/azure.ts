/**
 * PLACEHOLDER — being implemented; replaced by the real Azure adapter.
 *
 * @module
 */
import type { AzureProviderConfig } from "../config/schema.ts";
import { GatewayError } from "../errors.ts";
import type { Provider } from "./types.ts";

/** Creates the provider for one `type: azure` config entry. */
export function createAzureProvider(_config: AzureProviderConfig): Provider {
  const missing = () => Promise.reject(new GatewayError(501, "not implemented"));
  return { chat: missing, embed: missing };
}
