/**
 * The bodies of `POST /admin/teams` and `PATCH /admin/teams/{name}`, checked as strictly as a team in the config
 * file: the config's own `teamSchema` for each field and `TEAM_NAME_PATTERN` for the name, then the same
 * cross-checks against the live config as the file's teams get (every model pattern matches an alias, a money
 * budget only over priced aliases). Refusals are the token API's 400s, `param` naming the field (`limits.rpm`,
 * `models.0`), built by the same pieces (`validate.ts`), so both read alike to a script or the console.
 *
 * @module
 */
import { z } from "zod";
import { indexAliases } from "../config/alias_patterns.ts";
import { TEAM_NAME_PATTERN, teamSchema } from "../config/spend_schema.ts";
import type { ResolvedConfig } from "../config/types.ts";
import type { StoredTeam } from "./types.ts";
import { checkBudget, checkModels, MAX_MODEL_PATTERNS, NO_NUL } from "./validate.ts";
import { badField, parse } from "./field_errors.ts";

/** The fields of a team an admin sets (all but `name`, which never changes), as stored; null: not set. */
export type TeamFields = Pick<StoredTeam, "description" | "budget" | "limits" | "models">;

/** A checked `POST /admin/teams` body. */
export interface NewTeam extends TeamFields {
  readonly name: string;
}

/** A checked `PATCH` body: the fields given (`null` already means "clear"). */
export type TeamPatch = Partial<TeamFields>;

const field = {
  name: z.string().regex(TEAM_NAME_PATTERN, "use letters, digits and . _ : @ - (64 at most)"),
  description: teamSchema.shape.description.unwrap().refine(...NO_NUL),
  budget: teamSchema.shape.budget.unwrap(),
  limits: teamSchema.shape.limits.unwrap(),
  models: teamSchema.shape.models.unwrap().max(MAX_MODEL_PATTERNS),
};

const patchSchema = z.strictObject({
  description: field.description.nullable().optional(),
  budget: field.budget.nullable().optional(),
  limits: field.limits.nullable().optional(),
  models: field.models.nullable().optional(),
});

const createSchema = z.strictObject({ name: field.name, ...patchSchema.shape });

/**
 * The aliases a team's money budget covers: its own `models:`, else its members' (as `policy_checks.ts` has it
 * for the file; a member's own patterns are checked again when it joins, by the token API).
 */
function coveredPatterns(
  models: readonly string[] | null,
  members: readonly { models: readonly string[] }[],
) {
  return models ?? members.flatMap((m) => m.models);
}

/** A checked `POST /admin/teams` body, against the live config; throws a 400 naming the first bad field. */
export function validateNewTeam(body: Record<string, unknown>, config: ResolvedConfig): NewTeam {
  const input = parse(createSchema, body);
  const aliases = indexAliases(config.models.keys());
  const models = input.models ?? null;
  if (models !== null) checkModels(models, aliases);
  const budget = input.budget ?? null;
  checkBudget(budget, coveredPatterns(models, []), aliases, config, "budget.cost");
  return {
    name: input.name,
    description: input.description ?? null,
    budget,
    limits: input.limits ?? null,
    models,
  };
}

/**
 * A checked `PATCH` body for a team that now has `current` and the live `members`: only the fields given, each
 * checked as on create; a money budget is checked against the models the team will have (or, without any, its
 * members'). `name` cannot change: the members name the team by it.
 */
export function validateTeamPatch(
  body: Record<string, unknown>,
  current: TeamFields,
  members: readonly { models: readonly string[] }[],
  config: ResolvedConfig,
): TeamPatch {
  if (Object.hasOwn(body, "name")) {
    throw badField("name", "a team's name cannot change (its members name it); make a new team");
  }
  const input = parse(patchSchema, body);
  const aliases = indexAliases(config.models.keys());
  if (input.models !== undefined && input.models !== null) checkModels(input.models, aliases);
  const models = input.models === undefined ? current.models : input.models;
  const budget = input.budget === undefined ? current.budget : input.budget;
  if (input.budget !== undefined || input.models !== undefined) {
    checkBudget(
      budget,
      coveredPatterns(models, members),
      aliases,
      config,
      input.budget !== undefined ? "budget.cost" : "models",
    );
  }
  const patch: { -readonly [K in keyof TeamFields]?: TeamFields[K] } = {};
  if (input.description !== undefined) patch.description = input.description;
  if (input.budget !== undefined) patch.budget = input.budget;
  if (input.limits !== undefined) patch.limits = input.limits;
  if (input.models !== undefined) patch.models = input.models;
  return patch;
}
