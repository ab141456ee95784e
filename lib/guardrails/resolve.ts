/**
 * `guardrails:` as the request path runs them: each entry resolved once per config (a reload makes new ones),
 * external ones with their service built (an `openai_moderation` entry naming a provider takes that provider's
 * key and base URL). The config's semantic checks have refused what cannot resolve.
 *
 * @module
 */
import type { GuardrailConfig } from "../config/guardrails_schema.ts";
import type { ProviderConfig } from "../config/schema.ts";
import { ConfigSetupError } from "../config/setup_error.ts";
import type { Scrubber } from "../secrets/scrubber.ts";
import { createGuardrailService, type GuardrailServiceConfig, type ServiceDeps } from "./external/index.ts";
import type { ResolvedGuardrail } from "./resolved.ts";
import type { GuardrailPhase } from "./types.ts";

const PHASES: Record<"input" | "output" | "both", readonly GuardrailPhase[]> = {
  input: ["input"],
  output: ["output"],
  both: ["input", "output"],
};

/** An external entry as its service's factory takes it: without the gateway's own keys. */
function serviceConfig(
  entry: Exclude<GuardrailConfig, { type: "pii" }>,
  providers: ReadonlyMap<string, ProviderConfig>,
): GuardrailServiceConfig {
  const { phase: _p, message: _m, action: _a, timeout: _t, on_failure: _f, ...rest } = entry;
  if (rest.type !== "openai_moderation") return rest as GuardrailServiceConfig;
  const { provider: name, ...own } = rest;
  const provider = name === undefined ? undefined : providers.get(name);
  if (provider === undefined) return own as GuardrailServiceConfig;
  const p = provider as { api_key?: string; base_url?: string };
  return {
    ...own,
    api_key: own.api_key ?? p.api_key ?? "",
    ...(own.base_url ?? p.base_url ? { base_url: own.base_url ?? p.base_url } : {}),
  } as GuardrailServiceConfig;
}

/**
 * Every guardrail of the config, by name. `scrubber` is the config's own (what an external service answers
 * passes it before it is recorded or shown).
 */
export function resolveGuardrails(
  entries: Readonly<Record<string, GuardrailConfig>>,
  providers: ReadonlyMap<string, ProviderConfig>,
  env: Readonly<Record<string, string | undefined>>,
  scrubber: Scrubber,
): ReadonlyMap<string, ResolvedGuardrail> {
  const out = new Map<string, ResolvedGuardrail>();
  for (const [name, entry] of Object.entries(entries)) {
    const base = { name, phases: new Set(PHASES[entry.phase]), message: entry.message ?? null, scrubber };
    if (entry.type === "pii") {
      out.set(
        name,
        Object.freeze({
          ...base,
          action: entry.action,
          reverse: entry.reverse,
          pii: entry.entities ?? null,
          service: null,
          timeoutMs: 0,
          onFailure: "fail_closed" as const,
        }),
      );
      continue;
    }
    out.set(
      name,
      Object.freeze({
        ...base,
        action: entry.action,
        reverse: false,
        pii: null,
        service: serviceOf(name, serviceConfig(entry, providers), { env }),
        timeoutMs: entry.timeout,
        onFailure: entry.on_failure,
      }),
    );
  }
  return out;
}

/**
 * The external service of guardrail `name`. A service that cannot be set up (a Bedrock guardrail with no region
 * or credentials anywhere) is the config's issue at `guardrails.<name>`, reported like a provider's.
 */
function serviceOf(name: string, config: GuardrailServiceConfig, deps: ServiceDeps) {
  try {
    return createGuardrailService(config, deps);
  } catch (err) {
    throw new ConfigSetupError(`guardrails.${name}`, err instanceof Error ? err.message : String(err));
  }
}

/** The guardrails `names` attach, in order (names the config checks found). */
export function attached(
  all: ReadonlyMap<string, ResolvedGuardrail>,
  names: readonly string[] | undefined,
): readonly ResolvedGuardrail[] | undefined {
  if (!names || names.length === 0) return undefined;
  return Object.freeze(names.flatMap((n) => all.get(n) ?? []));
}
