/**
 * Builds one {@linkcode Provider} per configured provider entry. The only file that knows every provider
 * module; adding a vendor means a schema entry in `config/schema.ts` and one line here.
 *
 * @module
 */
import type { ProviderConfig } from "../config/schema.ts";
import { createAnthropicProvider } from "./anthropic/adapter.ts";
import { createAzureProvider } from "./azure/adapter.ts";
import { createBedrockProvider } from "./bedrock/adapter.ts";
import { createBuiltinProvider } from "./builtin/provider.ts";
import { createGeminiProvider } from "./gemini/adapter.ts";
import { createOpenAIProvider } from "./openai/adapter.ts";
import type { Provider } from "./types.ts";

/** The process environment, for providers whose credentials may come from standard variables (AWS). */
export type Env = Readonly<Record<string, string | undefined>>;

/** A provider entry that passed the schema but cannot be used (for example, no credentials anywhere). */
export class ProviderSetupError extends Error {
  constructor(readonly provider: string, message: string) {
    super(message);
    this.name = "ProviderSetupError";
  }
}

/** Creates the provider for one config entry; throws a plain `Error` with the reason if it cannot. */
export function createProvider(config: ProviderConfig, env: Env = {}): Provider {
  switch (config.type) {
    case "builtin":
      return createBuiltinProvider();
    case "openai":
      return createOpenAIProvider(config);
    case "anthropic":
      return createAnthropicProvider(config);
    case "gemini":
      return createGeminiProvider(config);
    case "azure":
      return createAzureProvider(config);
    case "bedrock":
      return createBedrockProvider(config, env);
  }
}

/**
 * Creates every configured provider, keyed by its name in config. Throws {@linkcode ProviderSetupError}
 * naming the provider when one cannot be set up, so `check` and `serve` report it like a config issue.
 */
export function createProviders(
  providers: ReadonlyMap<string, ProviderConfig>,
  env: Env = {},
): Map<string, Provider> {
  const out = new Map<string, Provider>();
  for (const [name, config] of providers) {
    try {
      out.set(name, createProvider(config, env));
    } catch (err) {
      throw new ProviderSetupError(name, err instanceof Error ? err.message : String(err));
    }
  }
  return out;
}
