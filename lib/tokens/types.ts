/**
 * Tokens issued through the admin API (`/admin/tokens`): what the token store keeps, and the contract every
 * store (memory, SQLite, PostgreSQL) implements. The store is deliberately dumb: it keeps whole token rows,
 * their secrets' hashes and the audit trail, and bumps one version number on every change. What a change
 * means (validation, rotation, the audit entry's diff) is decided above it, in plain TypeScript, once.
 *
 * @module
 */
import type { BudgetConfig, Endpoint, EndUserLimitsConfig, LimitsConfig } from "../config/schema.ts";
import type { TokenCacheConfig } from "../config/cache_schema.ts";
import type { TeamConfig } from "../config/spend_schema.ts";

/** One hash under which a stored token authenticates. */
export interface TokenSecret {
  /** Lower-case hex SHA-256 of the secret; the secret itself is never stored. */
  readonly sha256: string;
  /** ISO time after which this secret stops working (a rotated-out secret's grace end), or null. */
  readonly expires_at: string | null;
}

/** A token issued through the admin API, as stored. Field names are the admin API's. */
export interface StoredToken {
  /** `tok_` and 24 hex digits. */
  readonly id: string;
  readonly name: string;
  readonly environment: string;
  readonly description: string | null;
  /** Alias names or globs, as in YAML `models:`. */
  readonly models: readonly string[];
  /** The endpoints it may call, or null for all. */
  readonly endpoints: readonly Endpoint[] | null;
  readonly limits: LimitsConfig | null;
  readonly budget: BudgetConfig | null;
  readonly max_tokens: number | null;
  /**
   * What its requests do with the response cache, as the config's `tokens[].cache` (durations in ms): `false`
   * (neither read nor write it), the `Cache-Control` directives applied to each request, or null (as each
   * request's headers say). `false` and null are kept apart: one turns the cache off, the other sets nothing.
   */
  readonly cache: TokenCacheConfig | null;
  /**
   * The name the token's team had when the token joined it, or null. Kept for display and the audit trail
   * only: membership is by {@linkcode StoredToken.team_id}, since a name is free again once its team leaves.
   * Absent in rows written before teams existed: none.
   */
  readonly team?: string | null;
  /**
   * The identity of the team whose budget, limits and model scope it shares: `tm_…` for a team made through
   * the admin API, `team_<name>` for a config team (see `ResolvedTeam.id`), or null. A team made later under
   * the same name has another id, so it never inherits the token. Absent/null with a `team` only in rows
   * written before ids were kept (the SQL stores' migration 17 / 16 fills them): read as the config team of
   * that name, which is what the migration gives a name no stored team has (`tokenTeamId`).
   */
  readonly team_id?: string | null;
  /** Limits per end user of its application, as the config's `tokens[].end_user_limits`, or null/absent. */
  readonly end_user_limits?: EndUserLimitsConfig | null;
  /**
   * Guardrails (names of the config's `guardrails:`) run on its requests and answers after the alias's, in
   * order, as the config's `tokens[].guardrails`, or null/absent: none. Absent in rows written before them.
   */
  readonly guardrails?: readonly string[] | null;
  /** ISO date-time after which the token is refused, or null. */
  readonly expires_at: string | null;
  readonly disabled: boolean;
  /** ISO times. */
  readonly created_at: string;
  readonly updated_at: string;
  /** The admin token (its name) that created it. */
  readonly created_by: string;
  /** When it was revoked (`DELETE /admin/tokens/{id}`), or null. A revoked token never authenticates again. */
  readonly revoked_at: string | null;
  /** When its secret was last rotated, or null. */
  readonly rotated_at: string | null;
  /** The current secret's hash first; rotated-out secrets still in their grace period after it. */
  readonly secrets: readonly TokenSecret[];
}

/**
 * A team made through the admin API (`POST /admin/teams`), as stored: the config's `teams:` entry plus its
 * identity and history. Tokens join it by its id (`StoredToken.team_id`), never by its reusable name.
 */
export interface StoredTeam {
  /**
   * `tm_` and 24 hex digits, never reused: the team's counters are keyed by it, so a team made later under the
   * name of a deleted one starts with none of its counters (tenants never cross). Config teams keep
   * `team_<name>`, so the prefix tells the two apart (in the audit trail too).
   */
  readonly id: string;
  readonly name: string;
  readonly description: string | null;
  /** Shared by every member, as the config's `teams.<name>.budget` (no `stop_streams`). */
  readonly budget: NonNullable<TeamConfig["budget"]> | null;
  readonly limits: LimitsConfig | null;
  /** Alias names or globs its members may use at most, or null: it does not narrow them. */
  readonly models: readonly string[] | null;
  /** ISO times. */
  readonly created_at: string;
  readonly updated_at: string;
  /** The admin token (its name) that made it. */
  readonly created_by: string;
  /**
   * When it was deleted (`DELETE /admin/teams/{name}`), or null. A deleted team is kept (its audit entries name
   * its id) but never loaded, and its name is free for a new team.
   */
  readonly deleted_at: string | null;
}

/** What the audit trail records; `delete` is a team's (a token is revoked, never deleted). */
export const AUDIT_ACTIONS = ["create", "update", "rotate", "revoke", "delete"] as const;
export type AuditAction = typeof AUDIT_ACTIONS[number];

/**
 * One entry of the audit trail (`GET /admin/audit`). Never holds a secret or a hash. A team's entries use the
 * same fields: `token_id` is the team's id (`tm_…`) and `token_name` its name.
 */
export interface AuditEntry {
  /** `aud_` and 24 hex digits. */
  readonly id: string;
  /** ISO time of the change. */
  readonly time: string;
  /** The admin token (its name) that made the change. */
  readonly actor: string;
  readonly action: AuditAction;
  readonly token_id: string;
  readonly token_name: string;
  /**
   * What changed: for `create` the token's fields; for `update` `{ field: { from, to } }` per changed field;
   * for `rotate` `{ grace_ms, previous_expires_at }`; for `revoke` `{}`.
   */
  readonly changes: Readonly<Record<string, unknown>>;
}

/** Filters and paging of `GET /admin/audit`; newest first. */
export interface AuditQuery {
  /** A token's id or name. */
  readonly token?: string;
  readonly actor?: string;
  readonly action?: AuditAction;
  /** ISO times: `from` inclusive, `to` exclusive. */
  readonly from?: string;
  readonly to?: string;
  /** 1–1000. */
  readonly limit: number;
  /** An entry id: return entries older than it (the next page); one naming no entry is an `AuditCursorError`. */
  readonly after?: string;
}

/** A page of the audit trail. */
export interface AuditPage {
  readonly entries: readonly AuditEntry[];
  readonly has_more: boolean;
}

/**
 * An audit query's `after` names no entry of the trail (mistyped, or another deployment's): the admin API
 * answers 400 naming `after`, as `GET /admin/tokens` does, rather than an empty last page a paging script
 * would read as the trail's end.
 */
export class AuditCursorError extends Error {
  constructor(readonly after: string) {
    super(`'after' names no audit entry ('${after}').`);
    this.name = "AuditCursorError";
  }
}

/** Another live (not revoked) token already has this name; the admin API answers 409. */
export class TokenNameTakenError extends Error {
  constructor(readonly tokenName: string) {
    super(`A token named '${tokenName}' already exists.`);
    this.name = "TokenNameTakenError";
  }
}

/** Another team that is not deleted already has this name; the admin API answers 409. */
export class TeamNameTakenError extends Error {
  constructor(readonly teamName: string) {
    super(`A team named '${teamName}' already exists.`);
    this.name = "TeamNameTakenError";
  }
}

/**
 * The stored team a token was to join is deleted (another request deleted it while the token was being
 * written); nothing was written, and the admin API answers 400 on `team` as for a team that never was.
 */
export class TeamGoneError extends Error {
  constructor(readonly teamName: string) {
    super(`The team '${teamName}' no longer exists.`);
    this.name = "TeamGoneError";
  }
}

/**
 * A team cannot be deleted while a token that is not revoked names it (one may have joined it while the delete
 * was being worked out); nothing was written, and the admin API answers 409 `team_has_members`.
 */
export class TeamHasMembersError extends Error {
  constructor(readonly teamName: string, readonly members: readonly string[]) {
    super(`The team '${teamName}' still has member tokens.`);
    this.name = "TeamHasMembersError";
  }
}

/**
 * The token (or team: `putTeam` throws it too, with the team's id) is no longer the one a change was worked out
 * from: another change of it was written in between (another replica's, as one replica makes its changes of
 * one token one at a time). Nothing was written; the admin API works the change out again from the token as
 * it is now, and answers 409 only when that keeps happening.
 */
export class TokenChangedError extends Error {
  constructor(readonly tokenId: string) {
    super(`Token '${tokenId}' was changed by another request while this change was being made.`);
    this.name = "TokenChangedError";
  }
}

/**
 * Where tokens issued through the admin API live. Every method may reject (the database is down); callers
 * keep serving with what they loaded last (fail static).
 */
export interface TokenStore {
  /** "memory", "sqlite" or "postgres", for `/readyz` and metrics. */
  readonly kind: "memory" | "sqlite" | "postgres";
  /**
   * Every stored token, revoked ones included, and every stored team that is not deleted, with the version
   * they are current at (one version for both, so a replica never sees a token without the team it joined).
   */
  loadAll(): Promise<{ version: number; tokens: StoredToken[]; teams: StoredTeam[] }>;
  /**
   * The version: bumped by every `put` and `putTeam`. Cheap; replicas poll it as the safety net under
   * notifications.
   */
  version(): Promise<number>;
  /**
   * Writes `token` whole (insert or replace by id, its secrets replaced by `token.secrets`), appends `audit`
   * and bumps the version, in one transaction, then notifies other replicas. Rejects with
   * {@linkcode TokenNameTakenError} when another token that is not revoked has the same name.
   *
   * `basedOn`, when given, makes the put a compare-and-set, checked in the same transaction: it writes only if
   * the stored row of `token.id` still has that `updated_at` (`null`: only if there is no such row yet), and
   * otherwise rejects with {@linkcode TokenChangedError}, writing nothing. A read-modify-write (the admin API's
   * PATCH, revoke, rotate) passes the `updated_at` of the token it read, and every write moves `updated_at`
   * forward, so no change is ever written over one it did not see. Without it the put is unconditional.
   *
   * `joins`, when given, is the id of the stored team the token joins (`token.team_id`): the put writes only if that team is
   * not deleted, checked in the same transaction, and otherwise rejects with {@linkcode TeamGoneError}. With
   * `putTeam`'s member check, a token never joins a team a concurrent delete removed.
   */
  put(token: StoredToken, audit: AuditEntry, basedOn?: string | null, joins?: string): Promise<void>;
  /**
   * Writes `team` whole (insert or replace by id; a delete is a put with `deleted_at`), appends `audit` and
   * bumps the version, in one transaction, then notifies other replicas, exactly as `put` does for a token.
   * Rejects with {@linkcode TeamNameTakenError} when another team that is not deleted has the same name, and,
   * with `basedOn`, is the same compare-and-set on `updated_at` as `put` ({@linkcode TokenChangedError}). A
   * delete rejects with {@linkcode TeamHasMembersError} while a token that is not revoked has the team's id
   * (`team_id`), checked in the same transaction.
   */
  putTeam(team: StoredTeam, audit: AuditEntry, basedOn?: string | null): Promise<void>;
  /** The audit trail, newest first. Rejects with {@linkcode AuditCursorError} when `after` names no entry. */
  audit(query: AuditQuery): Promise<AuditPage>;
  /**
   * Calls `onChange` soon after any replica's `put` (PostgreSQL `LISTEN/NOTIFY`); absent where only this
   * process writes. Resolves to a function that stops listening.
   */
  watch?(onChange: () => void): Promise<() => Promise<void>>;
  /** Idempotent. */
  close(): Promise<void>;
}
