/**
 * How the admin API shows a token (docs/admin_api.md, "A token object"), for both sources: tokens issued
 * through the API and the config file's, which are read-only and have the id `cfg_<name>`. Every field is
 * named here, so nothing else a token carries (its secrets' hashes) can slip into an answer.
 *
 * @module
 */
import type { TokenCacheConfig } from "../config/cache_schema.ts";
import type { ResolvedTeam, ResolvedToken, ResolvedTokenCache } from "../config/types.ts";
import { tokenTeamId } from "./team_identity.ts";
import type { StoredToken } from "./types.ts";
import type { TokenFields } from "./validate.ts";

/** What `status` can be, and what `GET /admin/tokens?status=` filters on. */
export const TOKEN_STATUSES = ["active", "disabled", "expired", "revoked"] as const;
export type TokenStatus = typeof TOKEN_STATUSES[number];
/** Config tokens' ids are this and their name. */
export { CONFIG_TOKEN_ID_PREFIX as CONFIG_ID_PREFIX } from "../config/types.ts";

/** `revoked`, else `disabled`, else `expired` (past its expiry at `now`), else `active`. */
function statusOf(
  t: { revoked: boolean; disabled: boolean; expiresAt: number | null },
  now: number,
): TokenStatus {
  if (t.revoked) return "revoked";
  if (t.disabled) return "disabled";
  if (t.expiresAt !== null && now >= t.expiresAt) return "expired";
  return "active";
}

/** A token as the admin API shows it. */
export type TokenView = ReturnType<typeof storedView>;

/**
 * A token issued through the admin API. `team` is the served team it is in (by its id: `teamOfToken`), or
 * null: none, or the team it joined no longer exists (a team made since under the same name is another team).
 */
export function storedView(
  t: StoredToken,
  now: number,
  shadowedByConfig = false,
  team: ResolvedTeam | null = null,
) {
  return {
    object: "gateway.token" as const,
    id: t.id,
    name: t.name,
    environment: t.environment,
    description: t.description,
    source: "api" as "api" | "config",
    status: statusOf({
      revoked: t.revoked_at !== null,
      disabled: t.disabled,
      expiresAt: t.expires_at === null ? null : Date.parse(t.expires_at),
    }, now),
    models: [...t.models],
    endpoints: t.endpoints === null ? null : [...t.endpoints],
    limits: t.limits,
    budget: t.budget,
    max_tokens: t.max_tokens,
    cache: t.cache,
    /** The name of the team it is in now, or null (none, or its team no longer exists). */
    team: team?.name ?? null,
    /**
     * The id of the team it joined (`tm_…` or `team_<name>`), kept when that team is gone so the API shows
     * which one it was; null when it never joined one.
     */
    team_id: tokenTeamId(t),
    end_user_limits: t.end_user_limits ?? null,
    /** The names of the guardrails attached to it (of the config's `guardrails:`), or null. */
    guardrails: t.guardrails ? [...t.guardrails] : null,
    expires_at: t.expires_at,
    disabled: t.disabled,
    created_at: t.created_at as string | null,
    updated_at: t.updated_at as string | null,
    created_by: t.created_by as string | null,
    rotated_at: t.rotated_at,
    revoked_at: t.revoked_at,
    /**
     * True when a token of the config file has taken this name since (a reload): the config's token is served
     * under it and this one authenticates nowhere until it is renamed in the file.
     */
    shadowed_by_config: shadowedByConfig && t.revoked_at === null,
  };
}

/**
 * A config token's cache settings in the API's shape. Only their resolved form is kept, where `false` and
 * `{ no_store: true }` are one thing (neither reads nor writes), so they are shown as the object.
 */
function configCache(cache: ResolvedTokenCache | null): TokenCacheConfig | null {
  if (cache === null) return null;
  const shown = { no_store: cache.noStore, no_cache: cache.noCache };
  return cache.maxAgeMs === null ? shown : { ...shown, max_age: cache.maxAgeMs };
}

/** A token of the config file: what the API does not know about it is null. */
export function configView(t: ResolvedToken, now: number): TokenView {
  return {
    object: "gateway.token",
    id: t.id,
    name: t.name,
    environment: t.environment,
    description: null,
    source: "config",
    status: statusOf({ revoked: false, disabled: t.disabled, expiresAt: t.expiresAt }, now),
    models: [...t.patterns],
    endpoints: t.endpoints === null ? null : [...t.endpoints],
    limits: t.limits,
    budget: t.budget,
    max_tokens: t.maxTokens,
    cache: configCache(t.cache ?? null),
    team: t.team?.name ?? null,
    team_id: t.team?.id ?? null,
    end_user_limits: t.endUserLimits ?? null,
    guardrails: t.guardrails && t.guardrails.length > 0 ? t.guardrails.map((g) => g.name) : null,
    expires_at: t.expiresAt === null ? null : new Date(t.expiresAt).toISOString(),
    disabled: t.disabled,
    created_at: null,
    updated_at: null,
    created_by: null,
    rotated_at: null,
    revoked_at: null,
    shadowed_by_config: false,
  };
}

/** The fields of a stored token an admin may change, as `validatePatch` compares them. */
export function fieldsOf(t: StoredToken): TokenFields {
  return {
    environment: t.environment,
    description: t.description,
    models: t.models,
    endpoints: t.endpoints,
    limits: t.limits,
    budget: t.budget,
    max_tokens: t.max_tokens,
    cache: t.cache,
    team: t.team ?? null,
    team_id: tokenTeamId(t),
    end_user_limits: t.end_user_limits ?? null,
    guardrails: t.guardrails ?? null,
    expires_at: t.expires_at,
    disabled: t.disabled,
  };
}

/** The list's order: by name, then id. */
export function byNameThenId(a: TokenView, b: TokenView): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
