/**
 * Stored tokens as the request path sees them: each live secret of each token that is not revoked becomes a
 * {@linkcode ResolvedToken} keyed by the secret's hash, beside the config file's tokens. Done per config
 * (the aliases a token's patterns expand to are the live config's), and memoized by the directory, so the
 * request path still does one map lookup. `/admin/explain` resolves a revoked token (in no map) here too, in
 * the same {@linkcode StoredTokenScope}, so it is explained with the team and guardrails the request path gives.
 *
 * @module
 */
import { type AliasIndex, indexAliases } from "../config/alias_patterns.ts";
import { resolveTokenCache, withinTeam } from "../config/resolve.ts";
import type { ResolvedConfig, ResolvedTeam, ResolvedToken } from "../config/types.ts";
import { attached } from "../guardrails/resolve.ts";
import type { ResolvedGuardrail } from "../guardrails/resolved.ts";
import { teamOfToken, teamsById } from "./team_identity.ts";
import type { StoredTeam, StoredToken, TokenSecret } from "./types.ts";

/** The merged token map, and the stored tokens left out because a config token has their name. */
export interface MergedTokens {
  readonly tokens: ReadonlyMap<string, ResolvedToken>;
  readonly clashes: readonly StoredToken[];
}

/** Epoch ms of an ISO time, or null for none (an unreadable one counts as none: stores only keep ISO). */
function msOf(iso: string | null): number | null {
  if (iso === null) return null;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : null;
}

/** The earlier of two optional instants. */
function earlier(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}

/**
 * What a stored token is resolved against: the served config's aliases, its teams by id and its guardrails.
 * Required, never defaulted, by {@linkcode resolveStoredSecret}: a caller that left the teams out would get the
 * token without its team (its limits, budget, model scope) and disagree with the request path unnoticed, as
 * `/admin/explain` once did for revoked tokens.
 */
export interface StoredTokenScope {
  readonly aliases: AliasIndex;
  /** The served teams by id ({@linkcode teamsById}): where a token finds the team it joined. */
  readonly teamsById: ReadonlyMap<string, ResolvedTeam>;
  /** The config's guardrails by name, which a token attaches by name. */
  readonly guardrails: ReadonlyMap<string, ResolvedGuardrail>;
}

/**
 * The scope stored tokens are served in: `config` is the served one, whose `teams` are the file's and the stored
 * ones merged ({@linkcode mergeStoredTeams}); `storedTeams` are the stored teams loaded, so the members of one a
 * file team shadows get the file's team. The directory's merge and `/admin/explain` both build it here.
 */
export function storedTokenScope(
  config: ResolvedConfig,
  storedTeams: readonly StoredTeam[],
): StoredTokenScope {
  return {
    aliases: indexAliases(config.models.keys()),
    teamsById: teamsById(config.teams, storedTeams),
    guardrails: config.guardrails ?? new Map(),
  };
}

/**
 * One secret of `token` as an identity. A rotated-out secret stops at its grace end, or with the token if
 * that comes first, so `expiresAt` is the earlier of the two.
 */
export function resolveStoredSecret(
  token: StoredToken,
  secret: TokenSecret,
  scope: StoredTokenScope,
): ResolvedToken {
  const { aliases, guardrails } = scope;
  // By the team's id, never its name: a team that left since the token joined it (deleted, or removed from the
  // config) leaves the token with its own rules only, even once another team is made under that name.
  const team = teamOfToken(token, scope.teamsById);
  return Object.freeze({
    name: token.name,
    environment: token.environment,
    sha256: secret.sha256,
    patterns: Object.freeze([...token.models]),
    aliases: withinTeam(aliases, aliases.expand(token.models), team ?? undefined),
    expiresAt: earlier(msOf(token.expires_at), msOf(secret.expires_at)),
    disabled: token.disabled,
    limits: token.limits,
    budget: token.budget,
    endpoints: token.endpoints === null ? null : new Set(token.endpoints),
    maxTokens: token.max_tokens,
    cache: resolveTokenCache(token.cache ?? undefined),
    team,
    endUserLimits: token.end_user_limits ?? null,
    // A guardrail removed from the config since is skipped, as a team that left (the admin API refuses to
    // attach one that does not exist).
    guardrails: attached(guardrails, token.guardrails ?? undefined),
    id: token.id,
    source: "api" as const,
  });
}

/** The merged team map, and the stored teams left out because a config team has their name. */
export interface MergedTeams {
  readonly teams: ReadonlyMap<string, ResolvedTeam>;
  readonly clashes: readonly StoredTeam[];
}

/** A stored team as the policy sees it: counters keyed by its own `tm_…` id, never by its name. */
export function resolveStoredTeam(team: StoredTeam): ResolvedTeam {
  return Object.freeze({
    name: team.name,
    id: team.id,
    description: team.description,
    budget: team.budget,
    limits: team.limits,
    patterns: team.models === null ? null : Object.freeze([...team.models]),
    source: "api" as const,
  });
}

/**
 * `config`'s teams plus the stored ones (not deleted: the store loads no others). A config team wins a name
 * clash: the stored team is left out (and returned in `clashes`), and its members are served the config's team
 * (`teamsById`), as a config token shadows a stored one. With nothing stored, the config's own map is returned as it is.
 */
export function mergeStoredTeams(config: ResolvedConfig, stored: readonly StoredTeam[]): MergedTeams {
  const base = config.teams ?? new Map<string, ResolvedTeam>();
  if (stored.length === 0) return { teams: base, clashes: [] };
  const teams = new Map(base);
  const clashes: StoredTeam[] = [];
  for (const team of stored) {
    if (team.deleted_at !== null) continue;
    if (base.has(team.name)) {
      clashes.push(team);
      continue;
    }
    teams.set(team.name, resolveStoredTeam(team));
  }
  return { teams, clashes };
}

/**
 * `config`'s tokens plus every live secret of the stored tokens that are not revoked. Config tokens win: a
 * stored token named like one of them is left out (and returned in `clashes`), and a hash already taken is
 * never overwritten. `config`'s teams are the merged ones and `storedTeams` the stored teams loaded (see
 * {@linkcode storedTokenScope}), so a shadowed stored team's members get the config's team.
 */
export function mergeStoredTokens(
  config: ResolvedConfig,
  stored: readonly StoredToken[],
  storedTeams: readonly StoredTeam[] = [],
): MergedTokens {
  const tokens = new Map(config.tokens);
  const configNames = new Set<string>();
  for (const token of config.tokens.values()) if (token.source !== "api") configNames.add(token.name);
  const scope = storedTokenScope(config, storedTeams);
  const clashes: StoredToken[] = [];
  for (const token of stored) {
    if (token.revoked_at !== null) continue;
    if (configNames.has(token.name)) {
      clashes.push(token);
      continue;
    }
    for (const secret of token.secrets) {
      if (tokens.has(secret.sha256)) continue;
      tokens.set(secret.sha256, resolveStoredSecret(token, secret, scope));
    }
  }
  return { tokens, clashes };
}
