/**
 * A stored token's team, by identity. A token records the id of the team it joined (`StoredToken.team_id`),
 * never just its name: a team's name is free again once the team leaves (deleted through the admin API, or
 * removed from the config file), and a team made later under it must not inherit the old team's tokens (its
 * limits, budget and model scope would apply to them, they would block its delete). Every place that asks
 * "which team is this stored token in" (the request path, the admin API's views and checks, the stores' member
 * checks) goes through here, so they all answer alike.
 *
 * @module
 */
import { type ResolvedTeam, teamId } from "../config/types.ts";
import type { StoredTeam, StoredToken } from "./types.ts";

/**
 * The id of the team `token` joined, or null for none. A row written before ids were kept names its team only
 * (the SQL stores' migration gives such rows an id; a hand-made or in-flight one may still lack it): read as the
 * config team of that name, which is what the migration gives a name no stored team has.
 */
export function tokenTeamId(token: Pick<StoredToken, "team" | "team_id">): string | null {
  if (token.team_id) return token.team_id;
  return token.team ? teamId(token.team) : null;
}

/**
 * The served teams by id: `teams` (the merged map by name, config and stored teams) plus, for each stored team
 * a config team of the same name shadows (`team_name_clash`), that config team under the stored team's id, so
 * the shadowed team's members are served the file's team, as the file's team is served in its place under the
 * name. A team not here (deleted, or removed from the file) has no members: its tokens are in no team.
 */
export function teamsById(
  teams: ReadonlyMap<string, ResolvedTeam> | undefined,
  stored: readonly StoredTeam[] = [],
): Map<string, ResolvedTeam> {
  const byId = new Map<string, ResolvedTeam>();
  for (const team of teams?.values() ?? []) byId.set(team.id, team);
  for (const team of stored) {
    if (team.deleted_at !== null || byId.has(team.id)) continue;
    const shadow = teams?.get(team.name);
    if (shadow !== undefined && shadow.source !== "api") byId.set(team.id, shadow);
  }
  return byId;
}

/** The served team `token` is in (see {@linkcode teamsById}), or null: none, or its team no longer exists. */
export function teamOfToken(
  token: Pick<StoredToken, "team" | "team_id">,
  byId: ReadonlyMap<string, ResolvedTeam>,
): ResolvedTeam | null {
  const id = tokenTeamId(token);
  return id === null ? null : byId.get(id) ?? null;
}
