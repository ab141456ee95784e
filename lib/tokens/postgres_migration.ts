/**
 * The PostgreSQL tables of tokens issued through the admin API, as migrations of the usage database's schema.
 * In a module of its own, without imports, so the schema module can list it without importing the store (which
 * imports the usage database's connection code).
 *
 * @module
 */

/** Schema migration 3 of the PostgreSQL database: the token tables. */
export const POSTGRES_TOKENS_MIGRATION: readonly string[] = [
  `CREATE TABLE tokens (
     id text PRIMARY KEY,
     name text NOT NULL,
     environment text NOT NULL,
     description text,
     models json NOT NULL,
     endpoints json,
     limits json,
     budget json,
     max_tokens integer,
     expires_at text,
     disabled boolean NOT NULL,
     created_at text NOT NULL,
     updated_at text NOT NULL,
     created_by text NOT NULL,
     revoked_at text,
     rotated_at text
   )`,
  "CREATE UNIQUE INDEX tokens_live_name ON tokens (name) WHERE revoked_at IS NULL",
  `CREATE TABLE token_secrets (
     token_id text NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
     position integer NOT NULL,
     sha256 text NOT NULL,
     expires_at text,
     expires_ms bigint,
     PRIMARY KEY (token_id, position)
   )`,
  "CREATE INDEX token_secrets_expires ON token_secrets (expires_ms) WHERE expires_ms IS NOT NULL",
  `CREATE TABLE token_audit (
     seq bigserial PRIMARY KEY,
     id text NOT NULL UNIQUE,
     time text NOT NULL,
     time_ms bigint NOT NULL,
     actor text NOT NULL,
     action text NOT NULL,
     token_id text NOT NULL,
     token_name text NOT NULL,
     changes json NOT NULL
   )`,
  "CREATE INDEX token_audit_order ON token_audit (time_ms DESC, seq DESC)",
  "CREATE INDEX token_audit_token ON token_audit (token_id)",
  "CREATE INDEX token_audit_token_name ON token_audit (token_name)",
  `CREATE TABLE token_version (
     id boolean PRIMARY KEY DEFAULT true CHECK (id),
     version bigint NOT NULL
   )`,
  "INSERT INTO token_version (version) VALUES (0)",
];

/**
 * Schema migration 7 of the PostgreSQL database: a token's response-cache settings (`json`, as `budget`; NULL:
 * none). Added to the table migration 3 made, so a fleet's existing tokens keep working (NULL: as before).
 */
export const POSTGRES_TOKENS_CACHE_MIGRATION: readonly string[] = [
  "ALTER TABLE tokens ADD COLUMN cache json",
];

/**
 * The tokens' part of schema migration 10 of the PostgreSQL database: a token's team (its name; NULL: none)
 * and its limits per end user (`json`, as `cache`; NULL: none). Tokens stored before them keep working as they
 * did (in no team, no end-user limits).
 */
export const POSTGRES_TOKENS_TEAM_MIGRATION: readonly string[] = [
  "ALTER TABLE tokens ADD COLUMN team text",
  "ALTER TABLE tokens ADD COLUMN end_user_limits json",
];

/**
 * Schema migration 11 of the PostgreSQL database: teams made through the admin API, in a table of their own
 * (as `tokens`: JSON in `json` columns, a partial unique index on the live name; a deleted team's row is kept
 * so its audit entries keep naming it). Tokens keep naming their team by name, as before.
 */
export const POSTGRES_TEAMS_MIGRATION: readonly string[] = [
  `CREATE TABLE teams (
     id text PRIMARY KEY,
     name text NOT NULL,
     description text,
     budget json,
     limits json,
     models json,
     created_at text NOT NULL,
     updated_at text NOT NULL,
     created_by text NOT NULL,
     deleted_at text
   )`,
  "CREATE UNIQUE INDEX teams_live_name ON teams (name) WHERE deleted_at IS NULL",
];

/**
 * Schema migration 13 of the PostgreSQL database: the guardrails attached to a token (their names, `json` as
 * `end_user_limits`; NULL: none). Tokens stored before it keep working as they did (no guardrails of their own).
 */
export const POSTGRES_TOKENS_GUARDRAILS_MIGRATION: readonly string[] = [
  "ALTER TABLE tokens ADD COLUMN guardrails json",
];
