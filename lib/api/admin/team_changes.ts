/**
 * `POST /admin/teams`, `PATCH` and `DELETE /admin/teams/{name}`: teams made and changed at run time, kept in the
 * token store beside the tokens and audited in the same trail (docs/admin_api.md is the contract). Teams of the
 * config file are read-only here (409 `team_read_only`), as config tokens are. A team is deleted only once no
 * live token names it (409 `team_has_members`), so no member is ever left in a team that is gone; its name is
 * free again, and a team made under it gets a new id, so fresh counters.
 *
 * Every write goes through `team_writes.ts` (audit entry, compare-and-set, reload before answering).
 *
 * @module
 */
import type { RequestContext } from "../../http/context.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import type { TokenDirectory } from "../../tokens/directory.ts";
import { tokenTeamId } from "../../tokens/team_identity.ts";
import type { StoredTeam } from "../../tokens/types.ts";
import { type TeamFields, validateNewTeam, validateTeamPatch } from "../../tokens/validate_team.ts";
import { conflict, writeTime } from "./token_writes.ts";
import { randomHex } from "../../encoding/random_hex.ts";
import { changeTeam, teamHasMembers, teamNameTaken, writeTeam } from "./team_writes.ts";
import { getTeam, listTeams, liveTeams, teamNotFound, teamView } from "./teams.ts";
import { directoryOf, json } from "./tokens.ts";
import type { ClientRequest } from "../../runtime/types.ts";

async function body(request: ClientRequest, ctx: RequestContext): Promise<Record<string, unknown>> {
  return await readJsonBody(request, ctx.state.config.server, ctx.signal) as Record<string, unknown>;
}

function fieldsOf(team: StoredTeam): TeamFields {
  return { description: team.description, budget: team.budget, limits: team.limits, models: team.models };
}

/** The answer of a write: the team as served once written (this replica reloaded before). */
async function answerWith(ctx: RequestContext, directory: TokenDirectory, name: string, status = 200) {
  const live = liveTeams(ctx, directory);
  const team = live.byName.get(name);
  if (team === undefined) throw teamNotFound(name); // deleted meanwhile by another replica
  return json(await teamView(ctx, team, live), status);
}

/**
 * The stored team `name`, loaded just now. A config team's name is 409 `team_read_only` (a stored team shadowed
 * by one cannot be reached by its name until the config's is gone); no team is 404.
 */
async function findStored(ctx: RequestContext, directory: TokenDirectory, name: string): Promise<StoredTeam> {
  await directory.refresh();
  const live = liveTeams(ctx, directory);
  const team = live.byName.get(name);
  if (team === undefined) throw teamNotFound(name);
  const stored = live.stored.get(name);
  if (stored === undefined) {
    throw conflict(
      "This team comes from the config file and is read-only here; change it in the file.",
      "team_read_only",
    );
  }
  return stored;
}

/** `POST /admin/teams`: 201 with the team. */
async function createTeam(
  request: ClientRequest,
  ctx: RequestContext,
  directory: TokenDirectory,
): Promise<Response> {
  const input = validateNewTeam(await body(request, ctx), ctx.state.config);
  await directory.refresh();
  // The store refuses a live stored team of the name itself (across replicas); the config's it cannot see.
  if (liveTeams(ctx, directory).byName.has(input.name)) throw teamNameTaken(input.name);
  const now = writeTime(directory).iso;
  const team: StoredTeam = {
    id: `tm_${randomHex(12)}`,
    ...input,
    created_at: now,
    updated_at: now,
    created_by: ctx.admin?.name ?? "unknown",
    deleted_at: null,
  };
  const { name, ...fields } = input;
  await writeTeam(ctx, directory, team, "create", { name, ...fields });
  return await answerWith(ctx, directory, team.name, 201);
}

/** `PATCH`: only the fields given; a change that changes nothing writes nothing. */
async function patchTeam(
  request: ClientRequest,
  ctx: RequestContext,
  directory: TokenDirectory,
  name: string,
): Promise<Response> {
  await findStored(ctx, directory, name); // an unknown or read-only team is told before a bad body
  const given = await body(request, ctx);
  const find = () => findStored(ctx, directory, name);
  return await changeTeam(ctx, directory, name, find, (current) => {
    const members = directory.tokens().filter((t) => t.revoked_at === null && tokenTeamId(t) === current.id);
    const before = fieldsOf(current);
    const patch = validateTeamPatch(given, before, members, ctx.state.config);
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const [key, to] of Object.entries(patch) as [keyof TeamFields, unknown][]) {
      const from = before[key];
      if (JSON.stringify(from) !== JSON.stringify(to)) changes[key] = { from, to };
    }
    if (Object.keys(changes).length === 0) return { answer: answerWith(ctx, directory, name) };
    const team: StoredTeam = { ...current, ...patch, updated_at: writeTime(directory, current).iso };
    return { team, action: "update", changes, answer: () => answerWith(ctx, directory, name) };
  });
}

/** A deleted team as `DELETE` answers it: its last rules, no spend and no members, and `deleted_at`. */
function deletedView(team: StoredTeam) {
  return {
    object: "gateway.team",
    name: team.name,
    id: team.id,
    source: "api",
    description: team.description,
    budget: team.budget,
    limits: team.limits,
    models: team.models,
    created_at: team.created_at,
    updated_at: team.updated_at,
    created_by: team.created_by,
    deleted_at: team.deleted_at,
    spend: null,
    members: [],
  };
}

/**
 * `DELETE`: refused while a live token (stored, or of the config) names the team; else the team is gone and its
 * name free. Answers 200 with the team as it was, `deleted_at` set.
 */
function deleteTeam(ctx: RequestContext, directory: TokenDirectory, name: string): Promise<Response> {
  const find = () => findStored(ctx, directory, name);
  return changeTeam(ctx, directory, name, find, (current) => {
    // Checked again by the store as it writes the delete: a token may join while this is worked out.
    const members = liveTeams(ctx, directory).members.get(current.name) ?? [];
    if (members.length > 0) throw teamHasMembers(members.map((m) => m.name));
    const now = writeTime(directory, current).iso;
    const team: StoredTeam = { ...current, deleted_at: now, updated_at: now };
    return {
      team,
      action: "delete",
      changes: {},
      answer: () => json(deletedView(team)),
    };
  });
}

/** `GET /admin/teams` (list; served without a database too: the config's teams) and `POST /admin/teams`. */
export async function handleTeams(request: ClientRequest, ctx: RequestContext): Promise<Response> {
  if (request.method === "POST") return await createTeam(request, ctx, directoryOf(ctx));
  return await listTeams(ctx);
}

/** `GET`, `PATCH` and `DELETE /admin/teams/{name}`. */
export async function handleTeam(
  request: ClientRequest,
  ctx: RequestContext,
  name: string,
): Promise<Response> {
  if (request.method === "GET" || request.method === "HEAD") return await getTeam(ctx, name);
  const directory = directoryOf(ctx);
  return request.method === "PATCH"
    ? await patchTeam(request, ctx, directory, name)
    : await deleteTeam(ctx, directory, name);
}
