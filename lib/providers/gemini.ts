/**
 * PLACEHOLDER — being implemented; replaced by the real Gemini adapter.
 *
 * @module
 */
import type { GeminiProviderConfig } from "../config/schema.ts";
import { GatewayError } from "../errors.ts";
import type { Provider } from "./types.ts";

/** Creates the provider for one `type: gemini` config entry. */
export function createGeminiProvider(_config: GeminiProviderConfig): Provider {
  const missing = () => Promise.reject(new GatewayError(501, "not implemented"));
  return { chat: missing, embed: missing };
}
