/**
 * Turns a schema-valid, cross-checked config into the {@linkcode ResolvedConfig} the gateway runs on: every
 * default applied, timeouts merged, token globs expanded and tokens keyed by hash, so that the request path
 * only does map lookups.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { type AliasIndex, indexAliases } from "./alias_patterns.ts";
import { createScrubber } from "../secrets/scrubber.ts";
import type { ConfigOutput, ProviderConfig, Timeouts } from "./schema.ts";
import { configSecrets, type SecretSources } from "./secrets.ts";
import type {
  EffectiveTimeouts,
  ResolvedAdminToken,
  ResolvedAliasCache,
  ResolvedConfig,
  ResolvedModel,
  ResolvedToken,
  ResolvedTokenCache,
  RoutedTarget,
} from "./types.ts";
import type { TokenCacheConfig } from "./cache_schema.ts";
import type { PriceConfig } from "./schema.ts";
import { defaultCatalog, lookupPrice, type PriceCatalog, toTokenPrices } from "../pricing/catalog.ts";
import { configTokenId, type ResolvedTeam, teamId } from "./types.ts";
import { attached, resolveGuardrails } from "../guardrails/resolve.ts";

const DAY_MS = 86_400_000;

/**
 * The lower-case hex SHA-256 of a client token, which is how tokens are stored and looked up so that the
 * gateway never has to keep the token itself.
 */
export function tokenSha256(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/**
 * Epoch milliseconds at which a token stops working. A date-time is taken as written (it carries its offset).
 * A date-only value means the token is valid through that whole day in UTC, so it expires at 00:00 UTC of the
 * next day: `expires_at: 2026-12-31` still works on New Year's Eve. Returns NaN when unparseable.
 */
export function parseExpiry(expiresAt: string): number {
  if (/^\d{4}-\d{2}-\d{2}$/.test(expiresAt)) {
    const start = Date.parse(`${expiresAt}T00:00:00Z`);
    return Number.isNaN(start) ? NaN : start + DAY_MS;
  }
  return Date.parse(expiresAt);
}

/**
 * Merges timeouts by precedence: the target's own, then its provider's (every type but `builtin` has them),
 * then the server-wide defaults, which always exist.
 */
export function mergeTimeouts(
  server: ConfigOutput["server"]["timeouts"],
  provider: ProviderConfig,
  target: Timeouts,
): EffectiveTimeouts {
  const fromProvider: Timeouts = "timeouts" in provider ? provider.timeouts : {};
  return {
    firstByteMs: target.first_byte ?? fromProvider.first_byte ?? server.first_byte,
    idleMs: target.idle ?? fromProvider.idle ?? server.idle,
    totalMs: target.total ?? fromProvider.total ?? server.total,
  };
}

/**
 * Builds the resolved config. Expects a config that passed `checkConfig`: a target naming an unknown
 * provider, a token with neither or both of `sha256`/`token`, or a duplicate token hash throws, because
 * reaching that here is a programming error, not an operator one.
 *
 * @param now Epoch ms used as the default `created` of aliases (defaults to the current time).
 * @param secrets What the loader knows of secrets beyond the config itself (`${VAR}` values, the environment),
 *   for the config's scrubber.
 */
export function resolveConfig(
  cfg: ConfigOutput,
  source: string,
  now: number = Date.now(),
  secrets: SecretSources = {},
  catalog: PriceCatalog = defaultCatalog(),
): ResolvedConfig {
  const providers = new Map<string, ProviderConfig>(Object.entries(cfg.providers));
  // Built first: the guardrails scrub what their services answer with it.
  const scrubber = createScrubber(configSecrets(cfg, secrets));
  const guardrails = resolveGuardrails(cfg.guardrails, providers, secrets.env ?? {}, scrubber);
  const created = Math.floor(now / 1000);
  const limits = Object.freeze({
    maxBodyBytes: cfg.server.upstream_limits.max_body_size,
    maxEventBytes: cfg.server.upstream_limits.max_event_size,
    maxStreamBytes: cfg.server.upstream_limits.max_stream_size,
  });

  const models = new Map<string, ResolvedModel>();
  for (const [alias, model] of Object.entries(cfg.models)) {
    const targets = model.targets.map((target): RoutedTarget => {
      const providerConfig = providers.get(target.provider);
      if (providerConfig === undefined) {
        throw new Error(`resolveConfig: alias "${alias}" names unknown provider "${target.provider}"`);
      }
      return Object.freeze({
        provider: target.provider,
        providerConfig,
        model: target.model,
        timeouts: Object.freeze(mergeTimeouts(cfg.server.timeouts, providerConfig, target.timeouts)),
        limits,
        key: targetKey(target.provider, target.model, providerConfig),
        weight: target.weight,
        maxInFlight: target.max_in_flight ?? null,
        retries: target.retries,
        price: typeof target.price === "object"
          ? target.price
          : catalogPrice(catalog, providerConfig, target.model),
        priceFrom: typeof target.price === "object" ? "config" : "catalog",
      });
    });
    models.set(
      alias,
      Object.freeze({
        alias,
        type: model.type,
        strategy: model.strategy,
        targets: Object.freeze(targets),
        ownedBy: model.owned_by ?? model.targets[0].provider,
        created: model.created ?? created,
        limits: model.limits ?? null,
        strict: model.strict,
        cache: resolveAliasCache(model, targets, cfg.cache.ttl),
        endUserLimits: model.end_user_limits ?? null,
        guardrails: attached(guardrails, model.guardrails),
        contentRules: Object.freeze(model.content_rules.map((rule) =>
          Object.freeze({
            name: rule.name,
            regex: new RegExp(rule.pattern, rule.flags.includes("g") ? rule.flags : `${rule.flags}g`),
            action: rule.action,
            message: rule.message ?? null,
            replacement: rule.replacement,
          })
        )),
      }),
    );
  }

  const aliases = indexAliases(models.keys());
  const teams = resolveTeams(cfg.teams);
  const tokens = new Map<string, ResolvedToken>();
  cfg.tokens.forEach((token, i) => {
    const { sha256: given, token: secret } = token;
    if ((given === undefined) === (secret === undefined)) {
      throw new Error(`resolveConfig: tokens.${i} needs exactly one of sha256 and token`);
    }
    const sha256 = given !== undefined ? given.toLowerCase() : tokenSha256(secret ?? "");
    if (tokens.has(sha256)) throw new Error(`resolveConfig: tokens.${i} duplicates another token`);
    tokens.set(
      sha256,
      Object.freeze({
        name: token.name,
        environment: token.environment,
        sha256,
        patterns: Object.freeze([...token.models]),
        aliases: withinTeam(aliases, aliases.expand(token.models), teams.get(token.team ?? "")),
        expiresAt: token.expires_at === undefined ? null : parseExpiry(token.expires_at),
        disabled: token.disabled,
        limits: token.limits ?? null,
        budget: token.budget ?? null,
        team: token.team === undefined ? null : teamOf(teams, token.team, `tokens.${i}`),
        endUserLimits: token.end_user_limits ?? null,
        guardrails: attached(guardrails, token.guardrails),
        endpoints: token.endpoints === undefined ? null : new Set(token.endpoints),
        maxTokens: token.max_tokens ?? null,
        cache: resolveTokenCache(token.cache),
        id: configTokenId(token.name),
        source: "config",
      }),
    );
  });

  const adminTokens = new Map<string, ResolvedAdminToken>();
  cfg.admin_tokens.forEach((token, i) => {
    const { sha256: given, token: secret } = token;
    if ((given === undefined) === (secret === undefined)) {
      throw new Error(`resolveConfig: admin_tokens.${i} needs exactly one of sha256 and token`);
    }
    const sha256 = given !== undefined ? given.toLowerCase() : tokenSha256(secret ?? "");
    adminTokens.set(
      sha256,
      Object.freeze({
        name: token.name,
        environment: token.environment,
        sha256,
        expiresAt: token.expires_at === undefined ? null : parseExpiry(token.expires_at),
        disabled: token.disabled,
      }),
    );
  });

  return Object.freeze({
    server: cfg.server,
    routing: cfg.routing,
    usage: cfg.usage,
    responses: cfg.responses,
    redis: cfg.redis ?? null,
    postgres: cfg.postgres ?? null,
    cache: cfg.cache,
    telemetry: cfg.telemetry ?? null,
    alerts: cfg.alerts,
    pricing: cfg.pricing ?? null,
    catalog: { date: catalog.date, source: catalog.source },
    providers,
    models,
    tokens,
    teams,
    guardrails,
    adminTokens,
    source,
    scrubber,
  });
}

/** The config's teams, by name. */
export function resolveTeams(teams: ConfigOutput["teams"]): ReadonlyMap<string, ResolvedTeam> {
  const out = new Map<string, ResolvedTeam>();
  for (const [name, team] of Object.entries(teams)) {
    out.set(
      name,
      Object.freeze({
        name,
        id: teamId(name),
        description: team.description ?? null,
        budget: team.budget ?? null,
        limits: team.limits ?? null,
        patterns: team.models === undefined ? null : Object.freeze([...team.models]),
      }),
    );
  }
  return out;
}

/** The team `name`; a token naming an unknown team is a config error (semantic checks report it first). */
export function teamOf(teams: ReadonlyMap<string, ResolvedTeam>, name: string, where: string): ResolvedTeam {
  const team = teams.get(name);
  if (team === undefined) throw new Error(`resolveConfig: ${where} names no team "${name}"`);
  return team;
}

/** A member token's aliases: its own, narrowed to its team's models when the team has `models:`. */
export function withinTeam(
  index: AliasIndex,
  own: ReadonlySet<string>,
  team: ResolvedTeam | undefined,
): ReadonlySet<string> {
  if (!team?.patterns) return own;
  const allowed = index.expand(team.patterns);
  return new Set([...own].filter((alias) => allowed.has(alias)));
}

/** A target's price from the catalog (by its provider's type and its upstream model), or null when it has none. */
export function catalogPrice(
  catalog: PriceCatalog,
  provider: ProviderConfig,
  model: string,
): PriceConfig | null {
  const found = lookupPrice(catalog, provider.type, model);
  return found === undefined ? null : toTokenPrices(found);
}

/** An alias's cache settings, its version hashed from what serves it; null when the alias has no `cache:`. */
function resolveAliasCache(
  model: ConfigOutput["models"][string],
  targets: readonly RoutedTarget[],
  defaultTtl: number,
): ResolvedAliasCache | null {
  const cache = model.cache;
  if (cache === undefined) return null;
  const serving = JSON.stringify([model.strategy, targets.map((t) => t.key)]);
  return Object.freeze({
    ttlMs: cache.ttl ?? defaultTtl,
    scope: cache.scope,
    incomplete: cache.cache_incomplete,
    toolCalls: cache.cache_tool_calls,
    n: cache.cache_n,
    version: createHash("sha256").update(serving).digest("hex").slice(0, 16),
    semantic: cache.semantic === undefined ? null : Object.freeze({
      embeddings: cache.semantic.embeddings,
      threshold: cache.semantic.threshold,
      maxEntries: cache.semantic.max_entries,
      timeoutMs: cache.semantic.timeout,
    }),
  });
}

/** A token's cache controls: `false` is `no-store`; null when it sets none. */
export function resolveTokenCache(cache: TokenCacheConfig | undefined): ResolvedTokenCache | null {
  if (cache === undefined) return null;
  if (cache === false) return Object.freeze({ noStore: true, noCache: false, maxAgeMs: null });
  return Object.freeze({ noStore: cache.no_store, noCache: cache.no_cache, maxAgeMs: cache.max_age ?? null });
}

/**
 * A target's health identity. The provider's settings are part of it (hashed, so no secret is kept in
 * clear), so pointing a provider name at another upstream starts that upstream with a clean record.
 */
export function targetKey(provider: string, model: string, config: ProviderConfig): string {
  const settings = createHash("sha256").update(JSON.stringify(config)).digest("hex").slice(0, 16);
  return `${provider}/${model}#${settings}`;
}
