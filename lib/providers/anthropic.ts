/**
 * PLACEHOLDER — being implemented; replaced by the real Anthropic adapter.
 *
 * @module
 */
import type { AnthropicProviderConfig } from "../config/schema.ts";
import { GatewayError } from "../errors.ts";
import type { Provider } from "./types.ts";

/** Creates the provider for one `type: anthropic` config entry. */
export function createAnthropicProvider(_config: AnthropicProviderConfig): Provider {
  const missing = () => Promise.reject(new GatewayError(501, "not implemented"));
  return { chat: missing, embed: missing };
}
