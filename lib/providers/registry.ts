/**
 * Builds one {@linkcode Provider} per configured provider entry. The only file that knows every provider
 * module; adding a vendor means a schema entry in `config/schema.ts` and one line here.
 *
 * @module
 */
import type { ProviderConfig } from "../config/schema.ts";
import { createBuiltinProvider } from "./builtin.ts";
import { createOpenAIProvider } from "./openai.ts";
import type { Provider } from "./types.ts";

/** Creates the provider for one config entry. */
export function createProvider(config: ProviderConfig): Provider {
  switch (config.type) {
    case "builtin":
      return createBuiltinProvider();
    case "openai":
      return createOpenAIProvider(config);
  }
}

/** Creates every configured provider, keyed by its name in config. */
export function createProviders(providers: ReadonlyMap<string, ProviderConfig>): Map<string, Provider> {
  const out = new Map<string, Provider>();
  for (const [name, config] of providers) out.set(name, createProvider(config));
  return out;
}
