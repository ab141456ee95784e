/**
 * What bounds spending and load: rate limits, budgets, teams that share them, and limits per end user of an
 * application. Kept apart from `schema.ts` so that the whole of spend control reads in one place; the engine
 * that enforces it is `lib/policy/`, and docs/pricing.md explains each key with a worked example.
 *
 * @module
 */
import { z } from "zod";

/** Rate limits; each is optional, and only the ones given apply. */
export const limitsSchema = z.strictObject({
  /** Requests per minute. */
  rpm: z.number().int().min(1).optional(),
  /** Tokens (prompt + completion) per minute; charged with an estimate first, settled with real usage. */
  tpm: z.number().int().min(1).optional(),
  /** Requests in flight at once. */
  concurrent: z.number().int().min(1).optional(),
});

/** A spending cap over a calendar period (UTC): in tokens, or in money (the price table's currency). */
export const budgetSchema = z.strictObject({
  tokens: z.number().int().min(1).optional(),
  cost: z.number().positive().optional(),
  period: z.enum(["day", "month"]),
  /**
   * Ends a running stream with the API's error event once its own usage would cross the budget (default
   * false: a stream admitted within the budget runs to its end and is charged then).
   */
  stop_streams: z.boolean().optional(),
});

/** Team names are the config's namespace (a token joins by name), so keep them to log- and URL-safe characters. */
export const TEAM_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$/;

/**
 * A team: tokens that share one budget and one set of limits. A token's request must fit its own limits and
 * budget and its team's, all in one reservation, so a team budget shared by many tokens (and replicas) is as
 * exact as a token's own.
 */
export const teamSchema = z.strictObject({
  description: z.string().max(500).optional(),
  /**
   * Shared by every member token; a request that would cross it is denied as `team.budget`. Streams are
   * stopped mid-way only by a token's own `budget.stop_streams`, so a team's has no such key.
   */
  budget: budgetSchema.omit({ stop_streams: true }).optional(),
  /** Shared by every member token: `team.rpm`, `team.tpm`, `team.concurrent`. */
  limits: limitsSchema.optional(),
  /**
   * Alias names or globs the team's tokens may use at most: a member token reaches an alias only when both its
   * own `models:` and the team's allow it (a team bounds its members, it never widens them).
   */
  models: z.array(z.string().min(1)).min(1).optional(),
});

/** Request headers an end user's id may come from: a valid header name, not one the gateway itself reads. */
const endUserHeader = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, "must be a valid header name").refine(
  (h) => !["authorization", "x-api-key", "cookie", "x-goog-api-key"].includes(h.toLowerCase()),
  "must not be a credential header",
).transform((h) => h.toLowerCase());

/**
 * Limits per end user of an application, on an alias or a token: each distinct user (the request's
 * `safety_identifier` or `user`, Messages' `metadata.user_id`, or the configured `header`) gets its own rpm,
 * tpm and budget. Requests that name no user are not limited per user. Tracked users are bounded by
 * `max_users` (least recently seen forgotten first, with their counters), so a client inventing users cannot
 * exhaust memory; a forgotten user starts afresh when it returns.
 */
export const endUserLimitsSchema = z.strictObject({
  rpm: z.number().int().min(1).optional(),
  tpm: z.number().int().min(1).optional(),
  budget: budgetSchema.omit({ stop_streams: true }).optional(),
  /** Take the user's id from this request header instead of the body (e.g. `x-end-user-id`). */
  header: endUserHeader.optional(),
  /** Users tracked at once per alias or token (per replica); past it the least recently seen is forgotten. */
  max_users: z.number().int().min(1).max(1_000_000).default(10_000),
}).refine((l) => l.rpm !== undefined || l.tpm !== undefined || l.budget !== undefined, {
  message: "set at least one of rpm, tpm and budget",
});

export type LimitsConfig = z.output<typeof limitsSchema>;
export type BudgetConfig = z.output<typeof budgetSchema>;
export type TeamConfig = z.output<typeof teamSchema>;
export type EndUserLimitsConfig = z.output<typeof endUserLimitsSchema>;
