/**
 * `/admin/teams`: every team, of the config file and made through the admin API, with its rules, its members
 * (config tokens and tokens issued through the admin API) and what it has spent of its budget in the current
 * period, read from the same counters that admit requests (taking nothing). A token joins one with `team:` (in
 * the file, or `POST`/`PATCH /admin/tokens`). Reads are here; `POST`, `PATCH` and `DELETE` in
 * `team_changes.ts`.
 *
 * @module
 */
import type { ResolvedTeam } from "../../config/types.ts";
import { GatewayError, printable } from "../../errors.ts";
import type { RequestContext } from "../../http/context.ts";
import { ownerBudgetCheck, teamBudgetOwner } from "../../policy/budgets.ts";
import type { TokenDirectory } from "../../tokens/directory.ts";
import { resolveStoredTeam } from "../../tokens/resolve_stored.ts";
import { teamOfToken, teamsById } from "../../tokens/team_identity.ts";
import type { StoredTeam } from "../../tokens/types.ts";
import { json } from "./tokens.ts";

/** A member of a team, as the views show it. */
interface MemberView {
  readonly id: string;
  readonly name: string;
  readonly source: "config" | "api";
}

/** The teams as they are now: the config's, then the stored ones whose name no config team has. */
export interface LiveTeams {
  /** Every team served, by name. */
  readonly byName: ReadonlyMap<string, ResolvedTeam>;
  /** The stored rows of the teams made through the admin API (those served), by name. */
  readonly stored: ReadonlyMap<string, StoredTeam>;
  /** Members (tokens not revoked) by team name. */
  readonly members: ReadonlyMap<string, readonly MemberView[]>;
}

/**
 * The live teams and their members. From the request's config for the file's teams and tokens, and from the
 * directory as loaded last for the stored ones (a reader refreshes first), so a team made just now is seen.
 */
export function liveTeams(ctx: RequestContext, directory: TokenDirectory | null): LiveTeams {
  const config = ctx.state.config;
  const byName = new Map<string, ResolvedTeam>();
  for (const team of config.teams?.values() ?? []) if (team.source !== "api") byName.set(team.name, team);
  const stored = new Map<string, StoredTeam>();
  for (const team of directory?.teams() ?? []) {
    if (byName.has(team.name)) continue; // shadowed by the config's (logged as team_name_clash)
    stored.set(team.name, team);
    byName.set(team.name, resolveStoredTeam(team));
  }
  const members = new Map<string, MemberView[]>();
  const add = (team: string | null | undefined, member: MemberView) => {
    if (!team) return;
    let list = members.get(team);
    if (list === undefined) members.set(team, list = []);
    list.push(member);
  };
  for (const token of config.tokens.values()) {
    if (token.source !== "api") add(token.team?.name, { id: token.id, name: token.name, source: "config" });
  }
  // Issued tokens by their team's id, never its name: a team made under the name of one that left is another
  // team and starts with none of its tokens (a shadowed stored team's are the file's team's, as served).
  const byId = teamsById(byName, directory?.teams() ?? []);
  for (const token of directory?.tokens() ?? []) {
    if (token.revoked_at !== null) continue;
    add(teamOfToken(token, byId)?.name, { id: token.id, name: token.name, source: "api" });
  }
  for (const list of members.values()) list.sort((a, b) => a.name.localeCompare(b.name));
  return { byName, stored, members };
}

/** The team's budget in the current period, from its counter (null numbers: the store cannot be read). */
async function spendOf(ctx: RequestContext, team: ResolvedTeam, now: number) {
  const owner = teamBudgetOwner(team);
  const owned = owner && ownerBudgetCheck(owner, now);
  if (!owned || !team.budget) return null;
  let used: number | null = null;
  try {
    used = await ctx.services.policy.counters?.periodGet(owned.check.key, owned.check.period) ?? null;
  } catch {
    // A shared store that is down: the numbers are unknown, the rest of the answer stands.
  }
  return {
    unit: owned.unit,
    limit: owned.check.limit,
    period: team.budget.period,
    period_id: owned.period.id,
    used,
    remaining: used === null ? null : Math.max(0, owned.check.limit - used),
    resets_at: new Date(owned.period.end).toISOString(),
  };
}

/**
 * One team as the admin API shows it. `source` says where it is defined; a config team's `created_at`,
 * `updated_at` and `created_by` are null (the file has no history), as for config tokens.
 */
export async function teamView(ctx: RequestContext, team: ResolvedTeam, live: LiveTeams) {
  const stored = live.stored.get(team.name);
  return {
    object: "gateway.team",
    name: team.name,
    id: team.id,
    source: team.source ?? "config",
    description: team.description,
    budget: team.budget,
    limits: team.limits,
    models: team.patterns,
    created_at: stored?.created_at ?? null,
    updated_at: stored?.updated_at ?? null,
    created_by: stored?.created_by ?? null,
    spend: await spendOf(ctx, team, ctx.services.policy.now?.() ?? Date.now()),
    members: live.members.get(team.name) ?? [],
  };
}

/** 404 `team_not_found`. */
export function teamNotFound(name: string): GatewayError {
  return new GatewayError(404, `No team named '${printable(name)}'.`, {
    type: "invalid_request_error",
    param: "name",
    code: "team_not_found",
  });
}

/**
 * Reads show what the store holds now; while it cannot be read they show what this replica serves (fail
 * static, as the token reads do).
 */
export async function freshTeams(ctx: RequestContext): Promise<LiveTeams> {
  const directory = ctx.services.tokens;
  if (directory !== null && directory.status().ok) await directory.refresh();
  return liveTeams(ctx, directory);
}

/** `GET /admin/teams`: every team, the config's in its order, then the stored ones by name. */
export async function listTeams(ctx: RequestContext): Promise<Response> {
  const live = await freshTeams(ctx);
  const data = await Promise.all([...live.byName.values()].map((team) => teamView(ctx, team, live)));
  return json({ object: "list", data });
}

/** `GET /admin/teams/{name}`: one team, of either source. */
export async function getTeam(ctx: RequestContext, name: string): Promise<Response> {
  const live = await freshTeams(ctx);
  const team = live.byName.get(name);
  if (team === undefined) throw teamNotFound(name);
  return json(await teamView(ctx, team, live));
}
