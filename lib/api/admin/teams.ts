/**
 * `GET /admin/teams`: every team of the config with its rules, its members (config tokens and tokens issued
 * through the admin API) and what it has spent of its budget in the current period, read from the same
 * counters that admit requests (taking nothing). Teams are defined in the config file; a token joins one with
 * `team:` (in the file, or `POST`/`PATCH /admin/tokens`).
 *
 * @module
 */
import type { ResolvedTeam } from "../../config/types.ts";
import type { RequestContext } from "../../http/context.ts";
import { ownerBudgetCheck } from "../../policy/budgets.ts";

const JSON_TYPE = { "content-type": "application/json" };

/** A member of a team, as the list shows it. */
interface MemberView {
  readonly id: string;
  readonly name: string;
  readonly source: "config" | "api";
}

/** The team's budget in the current period, from its counter (null numbers: the store cannot be read). */
async function spendOf(ctx: RequestContext, team: ResolvedTeam, now: number) {
  if (!team.budget) return null;
  const owned = ownerBudgetCheck(
    { scope: "team", name: team.name, keyBase: `team:${team.id}`, budget: team.budget },
    now,
  );
  if (!owned) return null;
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

/** `GET /admin/teams`. */
export async function handleTeams(_request: Request, ctx: RequestContext): Promise<Response> {
  const config = ctx.state.config;
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
  for (const token of ctx.services.tokens?.tokens() ?? []) {
    if (token.revoked_at === null) add(token.team, { id: token.id, name: token.name, source: "api" });
  }
  const now = ctx.services.policy.now?.() ?? Date.now();
  const data = await Promise.all(
    [...(config.teams?.values() ?? [])].map(async (team) => ({
      object: "gateway.team",
      name: team.name,
      id: team.id,
      description: team.description,
      budget: team.budget,
      limits: team.limits,
      models: team.patterns,
      spend: await spendOf(ctx, team, now),
      members: (members.get(team.name) ?? []).sort((a, b) => a.name.localeCompare(b.name)),
    })),
  );
  return new Response(JSON.stringify({ object: "list", data }), { headers: JSON_TYPE });
}
