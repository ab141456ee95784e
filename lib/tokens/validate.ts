/**
 * The bodies of `POST /admin/tokens`, `PATCH /admin/tokens/{id}` and `POST /admin/tokens/{id}/rotate`, checked
 * as strictly as a token in the config file: the same zod pieces (`config/schema.ts`) for each field, then the
 * same cross-checks against the live config (every model pattern matches an alias, a money budget only on
 * priced aliases), plus what only makes sense at run time (an expiry in the past). Every refusal is a 400 in
 * OpenAI's shape whose `param` names the field (`limits.rpm`, `models.1`), so a script or the console can point
 * at it.
 *
 * @module
 */
import { z } from "zod";
import { type AliasIndex, indexAliases } from "../config/alias_patterns.ts";
import { tokenCacheSchema } from "../config/cache_schema.ts";
import { parseExpiry } from "../config/resolve.ts";
import {
  type BudgetConfig,
  budgetSchema,
  duration,
  type EndUserLimitsConfig,
  limitsSchema,
  tokenSchema,
} from "../config/schema.ts";
import { isPriced } from "../config/money_budgets.ts";
import type { ResolvedConfig, ResolvedTeam } from "../config/types.ts";
import { printable } from "../errors.ts";
import type { StoredToken } from "./types.ts";
import { badField, parse } from "./field_errors.ts";
import { teamOfToken, teamsById } from "./team_identity.ts";

/**
 * The fields of a token an admin sets (all but `name`, which never changes), as stored. `expires_at` is
 * normalized to an ISO date-time (a date alone means through that whole day, UTC, as in the config). `team`,
 * `end_user_limits` and `guardrails` are always there (null: none), though rows stored before them lack them.
 */
export type TokenFields =
  & Pick<
    StoredToken,
    | "environment"
    | "description"
    | "models"
    | "endpoints"
    | "limits"
    | "budget"
    | "max_tokens"
    | "cache"
    | "expires_at"
    | "disabled"
  >
  & {
    /** The name of a team of the live config's `teams:`, or null. */
    readonly team: string | null;
    /**
     * That team's id (`tm_…` or `team_<name>`), or null: what membership is by, so a team made later under the
     * name does not inherit the token.
     */
    readonly team_id: string | null;
    readonly end_user_limits: EndUserLimitsConfig | null;
    /** Names of guardrails of the live config's `guardrails:`, in order, or null (an empty list is null). */
    readonly guardrails: readonly string[] | null;
  };

/** A checked `POST /admin/tokens` body. */
export interface NewToken extends TokenFields {
  readonly name: string;
}

/** A checked `PATCH` body: the fields given (`null` already means "clear" for the optional ones). */
export type TokenPatch = Partial<TokenFields>;

/** The longest `grace` of a rotation. */
export const MAX_GRACE_MS = 30 * 86_400_000;
/** At most this many model patterns per token, and wildcards per pattern (a glob is matched as a regex). */
export const MAX_MODEL_PATTERNS = 256;
export const MAX_PATTERN_WILDCARDS = 8;

/**
 * Free text is kept in PostgreSQL `text` columns, which cannot hold NUL: such a write would fail as if the
 * database were down (a 503 for the admin's typo), so it is refused here, naming the field.
 */
export const NO_NUL = [(text: string) => !text.includes("\u0000"), "must not contain NUL (\\u0000)"] as const;

const field = {
  name: tokenSchema.shape.name.max(128),
  environment: tokenSchema.shape.environment.unwrap().max(128).refine(...NO_NUL),
  description: z.string().max(500).refine(...NO_NUL),
  models: tokenSchema.shape.models.max(MAX_MODEL_PATTERNS),
  endpoints: tokenSchema.shape.endpoints.unwrap(),
  limits: limitsSchema,
  budget: budgetSchema,
  max_tokens: tokenSchema.shape.max_tokens.unwrap(),
  /** `false` is a value here (the cache off), not "absent": only `null` clears the field. */
  cache: tokenCacheSchema,
  /** Checked against the live config's teams after parsing (`checkTeam`). */
  team: tokenSchema.shape.team.unwrap(),
  end_user_limits: tokenSchema.shape.end_user_limits.unwrap(),
  /** Checked against the live config's guardrails after parsing (`checkGuardrails`). */
  guardrails: tokenSchema.shape.guardrails.unwrap(),
  expires_at: tokenSchema.shape.expires_at.unwrap(),
  disabled: z.boolean(),
};

const createSchema = z.strictObject({
  name: field.name,
  environment: field.environment.default("default"),
  description: field.description.nullable().optional(),
  models: field.models,
  endpoints: field.endpoints.nullable().optional(),
  limits: field.limits.nullable().optional(),
  budget: field.budget.nullable().optional(),
  max_tokens: field.max_tokens.nullable().optional(),
  cache: field.cache.nullable().optional(),
  team: field.team.nullable().optional(),
  end_user_limits: field.end_user_limits.nullable().optional(),
  guardrails: field.guardrails.nullable().optional(),
  expires_at: field.expires_at.nullable().optional(),
  disabled: field.disabled.default(false),
});

const patchSchema = z.strictObject({
  environment: field.environment.optional(),
  description: field.description.nullable().optional(),
  models: field.models.optional(),
  endpoints: field.endpoints.nullable().optional(),
  limits: field.limits.nullable().optional(),
  budget: field.budget.nullable().optional(),
  max_tokens: field.max_tokens.nullable().optional(),
  cache: field.cache.nullable().optional(),
  team: field.team.nullable().optional(),
  end_user_limits: field.end_user_limits.nullable().optional(),
  guardrails: field.guardrails.nullable().optional(),
  expires_at: field.expires_at.nullable().optional(),
  disabled: field.disabled.optional(),
});

const rotateSchema = z.strictObject({
  grace: duration.refine((ms) => ms <= MAX_GRACE_MS, "at most 30 days").optional(),
});

/** The secret is the gateway's to make: a body that brings one (or its hash) is refused, naming it. */
function refuseSecrets(body: Record<string, unknown>): void {
  for (const key of ["sha256", "token"]) {
    if (Object.hasOwn(body, key)) {
      throw badField(key, "the gateway makes the secret itself and shows it once; do not send one");
    }
  }
}

/**
 * The first instant an expiry may not reach: the start of year 10000 UTC. ISO 8601 writes later years with a
 * sign and six digits (`+010000-01-01T…`), which this API's own `expires_at` refuses, so a token stored with
 * one could not be sent back as it reads; `9999-12-31` (through that day, so up to this instant) is refused too.
 */
const EXPIRY_LIMIT_MS = Date.UTC(10000, 0, 1);

/** The ISO date-time an `expires_at` stands for; refused when it is not in the future, or past year 9999. */
function expiry(expiresAt: string, now: number): string {
  const ms = parseExpiry(expiresAt);
  if (!Number.isFinite(ms)) throw badField("expires_at", "not a valid date or date-time");
  if (ms <= now) throw badField("expires_at", "must be in the future");
  if (ms >= EXPIRY_LIMIT_MS) {
    throw badField(
      "expires_at",
      "must be before 10000-01-01T00:00:00Z (9999-12-31T23:59:59Z at the latest; 9999-12-31, meaning " +
        "through that day, reaches it); for a token that never expires, leave expires_at out or send null",
    );
  }
  return new Date(ms).toISOString();
}

/** Every model pattern matches an alias of the live config (as `semantic_checks.ts` has it for the file). */
export function checkModels(models: readonly string[], aliases: AliasIndex): void {
  models.forEach((pattern, i) => {
    if ((pattern.match(/[*?]/g)?.length ?? 0) > MAX_PATTERN_WILDCARDS) {
      throw badField(`models.${i}`, `at most ${MAX_PATTERN_WILDCARDS} wildcards per pattern`);
    }
    if (!aliases.matchesAny(pattern)) {
      throw badField(`models.${i}`, `"${printable(pattern)}" matches no model alias`);
    }
  });
}

/**
 * A budget counts exactly one unit, and a money budget only covers aliases with a price on every target (as
 * `policy_checks.ts` has it for the file). `param` is where a missing price is blamed: the budget, or the
 * models when only they changed; `field` is the budget's own path (`budget`, `end_user_limits.budget`).
 */
export function checkBudget(
  budget: Pick<BudgetConfig, "tokens" | "cost"> | null | undefined,
  models: readonly string[],
  aliases: AliasIndex,
  config: ResolvedConfig,
  param: string,
  field = "budget",
): void {
  if (budget === null || budget === undefined) return;
  if ((budget.tokens === undefined) === (budget.cost === undefined)) {
    throw badField(field, "give exactly one of tokens or cost");
  }
  if (budget.cost === undefined) return;
  checkPriced(models, aliases, config, param);
}

/** Every alias `models` reach has a price on every target (what a money budget over them needs). */
function checkPriced(
  models: readonly string[],
  aliases: AliasIndex,
  config: ResolvedConfig,
  param: string,
): void {
  const unpriced = [...aliases.expand(models)].filter((alias) => !isPriced(config.models.get(alias)));
  if (unpriced.length > 0) {
    throw badField(
      param,
      `a cost budget needs a price on every target of the aliases it covers; no price on ${
        unpriced.slice(0, 5).map((a) => `"${a}"`).join(", ")
      }${unpriced.length > 5 ? ", …" : ""}`,
    );
  }
}

/**
 * The team `name` of the live config (null: none), whose `teams` the token directory has merged the stored
 * teams into; a name of no team is refused, listing those there are.
 */
function teamOf(name: string | null, config: ResolvedConfig): ResolvedTeam | null {
  if (name === null) return null;
  const teams = config.teams ?? new Map<string, ResolvedTeam>();
  const team = teams.get(name);
  if (team !== undefined) return team;
  const known = [...teams.keys()].sort();
  throw badField(
    "team",
    `no team named "${printable(name)}" in the config's teams: or made through /admin/teams (${
      known.length === 0
        ? "there are none"
        : `there are ${known.slice(0, 20).map((t) => `"${t}"`).join(", ")}${known.length > 20 ? ", …" : ""}`
    })`,
  );
}

/**
 * A team's money budget without `models:` covers its members' aliases (as `policy_checks.ts` has it for the
 * file), so a token may join it only if every alias it reaches has a price. `param` is blamed: the team, or the
 * models when only they changed.
 */
function checkTeamBudget(
  team: ResolvedTeam | null,
  models: readonly string[],
  aliases: AliasIndex,
  config: ResolvedConfig,
  param: string,
): void {
  if (team === null || team.budget?.cost === undefined || team.patterns !== null) return;
  checkPriced(models, aliases, config, param);
}

/**
 * The guardrail names given (null: none, and so is an empty list), each one of the live config's
 * `guardrails:`; a name of none is refused on its index, listing those there are.
 */
function checkGuardrails(names: readonly string[] | null, config: ResolvedConfig): readonly string[] | null {
  if (names === null || names.length === 0) return null;
  const known = config.guardrails ?? new Map<string, unknown>();
  names.forEach((name, i) => {
    if (known.has(name)) return;
    const there = [...known.keys()].sort();
    throw badField(
      `guardrails.${i}`,
      `no guardrail named "${printable(name)}" in the config's guardrails: (${
        there.length === 0
          ? "there are none"
          : `there are ${there.slice(0, 20).map((g) => `"${g}"`).join(", ")}${there.length > 20 ? ", …" : ""}`
      })`,
    );
  });
  return names;
}

/** A checked `POST /admin/tokens` body, against the live config; throws a 400 naming the first bad field. */
export function validateNewToken(
  body: Record<string, unknown>,
  config: ResolvedConfig,
  now = Date.now(),
): NewToken {
  refuseSecrets(body);
  const input = parse(createSchema, body);
  const aliases = indexAliases(config.models.keys());
  checkModels(input.models, aliases);
  const budget = input.budget ?? null;
  checkBudget(budget, input.models, aliases, config, "budget.cost");
  const endUserLimits = input.end_user_limits ?? null;
  checkBudget(
    endUserLimits?.budget,
    input.models,
    aliases,
    config,
    "end_user_limits.budget.cost",
    "end_user_limits.budget",
  );
  const team = teamOf(input.team ?? null, config);
  checkTeamBudget(team, input.models, aliases, config, "team");
  const guardrails = checkGuardrails(input.guardrails ?? null, config);
  return {
    name: input.name,
    environment: input.environment,
    description: input.description ?? null,
    models: input.models,
    endpoints: input.endpoints ?? null,
    limits: input.limits ?? null,
    budget,
    max_tokens: input.max_tokens ?? null,
    cache: input.cache ?? null,
    team: team?.name ?? null,
    team_id: team?.id ?? null,
    end_user_limits: endUserLimits,
    guardrails,
    expires_at: input.expires_at == null ? null : expiry(input.expires_at, now),
    disabled: input.disabled,
  };
}

/**
 * A checked `PATCH` body for a token that now has `current`: only the fields given, each checked as on create;
 * a money budget is checked against the models the token will have. `name` cannot change.
 */
export function validatePatch(
  body: Record<string, unknown>,
  current: TokenFields,
  config: ResolvedConfig,
  now = Date.now(),
): TokenPatch {
  refuseSecrets(body);
  if (Object.hasOwn(body, "name")) throw badField("name", "a token's name cannot change; issue a new token");
  const input = parse(patchSchema, body);
  const aliases = indexAliases(config.models.keys());
  if (input.models !== undefined) checkModels(input.models, aliases);
  const models = input.models ?? current.models;
  const budget = input.budget === undefined ? current.budget : input.budget;
  if (input.budget !== undefined || input.models !== undefined) {
    checkBudget(budget, models, aliases, config, input.budget !== undefined ? "budget.cost" : "models");
  }
  const endUserLimits = input.end_user_limits === undefined ? current.end_user_limits : input.end_user_limits;
  if (input.end_user_limits !== undefined || input.models !== undefined) {
    checkBudget(
      endUserLimits?.budget,
      models,
      aliases,
      config,
      input.end_user_limits !== undefined ? "end_user_limits.budget.cost" : "models",
      "end_user_limits.budget",
    );
  }
  // A team named in the body must exist now; the one the token is in already (by id) may have left since (the
  // token then keeps its own rules only, even if another team has the name now), which does not block changing
  // its other fields.
  const team = input.team !== undefined
    ? teamOf(input.team, config)
    : teamOfToken(current, teamsById(config.teams));
  if (input.team !== undefined || input.models !== undefined) {
    checkTeamBudget(team, models, aliases, config, input.team !== undefined ? "team" : "models");
  }
  const patch: { -readonly [K in keyof TokenFields]?: TokenFields[K] } = {};
  if (input.environment !== undefined) patch.environment = input.environment;
  if (input.description !== undefined) patch.description = input.description;
  if (input.models !== undefined) patch.models = input.models;
  if (input.endpoints !== undefined) patch.endpoints = input.endpoints;
  if (input.limits !== undefined) patch.limits = input.limits;
  if (input.budget !== undefined) patch.budget = input.budget;
  if (input.max_tokens !== undefined) patch.max_tokens = input.max_tokens;
  if (input.cache !== undefined) patch.cache = input.cache;
  if (input.team !== undefined) {
    // Naming a team (again) joins the one that has the name now: its id is what the token keeps.
    patch.team = team?.name ?? null;
    patch.team_id = team?.id ?? null;
  }
  if (input.end_user_limits !== undefined) patch.end_user_limits = input.end_user_limits;
  // Only the names given are checked: one the token has that left the config since does not block the rest.
  if (input.guardrails !== undefined) patch.guardrails = checkGuardrails(input.guardrails, config);
  if (input.expires_at !== undefined) {
    patch.expires_at = input.expires_at === null ? null : expiry(input.expires_at, now);
  }
  if (input.disabled !== undefined) patch.disabled = input.disabled;
  return patch;
}

/** The `grace` of a rotation in ms (default 0: the old secret stops at once). */
export function validateRotate(body: Record<string, unknown>): number {
  return parse(rotateSchema, body).grace ?? 0;
}
