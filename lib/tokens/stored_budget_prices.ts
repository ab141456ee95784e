/**
 * The money budgets of the tokens and teams made through the admin API over aliases without a price. The API
 * refuses such a budget when it is given (`validate.ts`), but the config can change under it: a reload that
 * drops a price, or adds an alias a token's `*` reaches. The file's own budgets are checked with the file
 * (`config/policy_checks.ts`); these are checked against the config a reload would swap in, so it is refused as
 * the same budget in the file would make it, and by the token directory, which warns of any that are served
 * (a row written by another replica, or a gateway started on a config that was edited meanwhile). The request
 * path refuses what remains (`http/accounting.ts`).
 *
 * @module
 */
import { indexAliases } from "../config/alias_patterns.ts";
import { isPriced } from "../config/money_budgets.ts";
import { withinTeam } from "../config/resolve.ts";
import type { ConfigIssue, ResolvedConfig } from "../config/types.ts";
import { mergeStoredTeams } from "./resolve_stored.ts";
import { teamOfToken, teamsById } from "./team_identity.ts";
import type { StoredTeam, StoredToken } from "./types.ts";

/** One stored owner's money budget over aliases without a price. */
export interface UnpricedStoredBudget {
  readonly owner: "token" | "team";
  readonly id: string;
  readonly name: string;
  /**
   * The budget: the owner's own `budget`, a token's `end_user_limits.budget`, or `team` for the budget of a
   * token's team without `models:`, which covers its members' aliases.
   */
  readonly field: "budget" | "end_user_limits.budget" | "team";
  /** The team, for `field: "team"`. */
  readonly team?: string;
  /** The aliases without a price, sorted. */
  readonly aliases: readonly string[];
}

/**
 * Every money budget of the served stored teams and tokens (not deleted or revoked, not shadowed by a config
 * owner of the same name) over an alias of `config` without a price on every target: a team's over its
 * `models:`, a token's over the aliases it may use (its patterns within its team's).
 */
export function unpricedStoredBudgets(
  config: ResolvedConfig,
  tokens: readonly StoredToken[],
  teams: readonly StoredTeam[],
): UnpricedStoredBudget[] {
  const index = indexAliases(config.models.keys());
  const unpriced = (aliases: Iterable<string>) =>
    [...aliases].filter((alias) => !isPriced(config.models.get(alias))).sort();
  const merged = mergeStoredTeams(config, teams).teams;
  const byId = teamsById(merged, teams);
  const out: UnpricedStoredBudget[] = [];
  for (const team of teams) {
    if (team.deleted_at !== null || merged.get(team.name)?.id !== team.id) continue;
    if (team.budget?.cost === undefined || team.models === null) continue;
    const aliases = unpriced(index.expand(team.models));
    if (aliases.length > 0) {
      out.push({ owner: "team", id: team.id, name: team.name, field: "budget", aliases });
    }
  }
  const configNames = new Set<string>();
  for (const token of config.tokens.values()) if (token.source !== "api") configNames.add(token.name);
  for (const token of tokens) {
    if (token.revoked_at !== null || configNames.has(token.name)) continue;
    const team = teamOfToken(token, byId) ?? undefined;
    const fields: UnpricedStoredBudget["field"][] = [];
    if (token.budget?.cost !== undefined) fields.push("budget");
    if (token.end_user_limits?.budget?.cost !== undefined) fields.push("end_user_limits.budget");
    if (team?.budget?.cost !== undefined && team.patterns === null) fields.push("team");
    if (fields.length === 0) continue;
    const aliases = unpriced(withinTeam(index, index.expand(token.models), team));
    if (aliases.length === 0) continue;
    for (const field of fields) {
      out.push({
        owner: "token",
        id: token.id,
        name: token.name,
        field,
        ...(field === "team" ? { team: team!.name } : {}),
        aliases,
      });
    }
  }
  return out;
}

/** `"a", "b", "c"`, at most five named. */
function quoted(aliases: readonly string[]): string {
  const shown = aliases.slice(0, 5).map((a) => `"${a}"`).join(", ");
  return aliases.length > 5 ? `${shown}, … (${aliases.length} in all)` : shown;
}

/** What a reload says of one: where (the owner's admin API path and the budget), and what to do. */
export function unpricedBudgetIssue(found: UnpricedStoredBudget): ConfigIssue {
  const resource = found.owner === "token" ? "tokens" : "teams";
  const whose = `the ${found.owner} "${found.name}" (${found.id}) made through the admin API`;
  const budget = found.field === "team"
    ? `is in the team "${found.team}", whose cost budget covers its members' aliases; it reaches`
    : `has a cost budget${found.field === "budget" ? "" : ` in ${found.field}`} over`;
  return {
    path: `admin_api.${resource}.${found.id}.${found.field === "team" ? "team" : `${found.field}.cost`}`,
    message: `${whose} ${budget} ${quoted(found.aliases)}, which this config gives no price (a target's ` +
      `price: or the price catalog): a money budget cannot count it. Price it, or change that ${found.owner}'s ` +
      `budget or models (PATCH /admin/${resource}/${found.owner === "token" ? found.id : found.name}) first`,
  };
}

/** What the check reads of the token directory (`directory.ts`, which imports this module). */
export interface StoredOwners {
  status(): { readonly ok: boolean };
  refresh(): Promise<void>;
  tokens(): readonly StoredToken[];
  teams(): readonly StoredTeam[];
}

/**
 * A reload's check of the stored owners against the config it would swap in (none without a token store): the
 * directory loads first when the store answers, so an owner made a moment ago on another replica is seen.
 */
export function storedBudgetCheck(
  directory: StoredOwners | null,
): ((config: ResolvedConfig) => Promise<readonly ConfigIssue[]>) | undefined {
  if (directory === null) return undefined;
  return async (config) => {
    if (directory.status().ok) await directory.refresh();
    return unpricedStoredBudgets(config, directory.tokens(), directory.teams()).map(unpricedBudgetIssue);
  };
}
