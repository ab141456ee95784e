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
   * The team (of the config's `teams:`) whose budget, limits and model scope it shares, or null. Absent in
   * rows written before teams existed: none.
   */
  readonly team?: string | null;
  /** Limits per end user of its application, as the config's `tokens[].end_user_limits`, or null/absent. */
  readonly end_user_limits?: EndUserLimitsConfig | null;
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

/** What the audit trail records. */
export const AUDIT_ACTIONS = ["create", "update", "rotate", "revoke"] as const;
export type AuditAction = typeof AUDIT_ACTIONS[number];

/** One entry of the audit trail (`GET /admin/audit`). Never holds a secret or a hash. */
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
  /** An entry id: return entries older than it (the next page). */
  readonly after?: string;
}

/** A page of the audit trail. */
export interface AuditPage {
  readonly entries: readonly AuditEntry[];
  readonly has_more: boolean;
}

/** Another live (not revoked) token already has this name; the admin API answers 409. */
export class TokenNameTakenError extends Error {
  constructor(readonly tokenName: string) {
    super(`A token named '${tokenName}' already exists.`);
    this.name = "TokenNameTakenError";
  }
}

/**
 * The token is no longer the one a change was worked out from: another change of it was written in between
 * (another replica's, as one replica makes its changes of one token one at a time). Nothing was written; the
 * admin API works the change out again from the token as it is now, and answers 409 only when that keeps
 * happening.
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
  /** Every stored token, revoked ones included, with the version they are current at. */
  loadAll(): Promise<{ version: number; tokens: StoredToken[] }>;
  /** The version: bumped by every `put`. Cheap; replicas poll it as the safety net under notifications. */
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
   */
  put(token: StoredToken, audit: AuditEntry, basedOn?: string | null): Promise<void>;
  /** The audit trail, newest first. */
  audit(query: AuditQuery): Promise<AuditPage>;
  /**
   * Calls `onChange` soon after any replica's `put` (PostgreSQL `LISTEN/NOTIFY`); absent where only this
   * process writes. Resolves to a function that stops listening.
   */
  watch?(onChange: () => void): Promise<() => Promise<void>>;
  /** Idempotent. */
  close(): Promise<void>;
}
