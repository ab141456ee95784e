/**
 * Databases as earlier gateways left them, their DDL frozen here (the migrations of later schemas must keep
 * working on them): SQLite schema 3 and PostgreSQL schema 2, each with one usage record and one stored response
 * of the config token `alice`.
 *
 * @module
 */

/** The usage database as the schema-3 gateway left it (its DDL frozen here), with a record and a response. */
export const SQLITE_SCHEMA_3 = `
CREATE TABLE usage_schema (version INTEGER NOT NULL);
CREATE TABLE usage (
  uid TEXT NOT NULL, time TEXT NOT NULL, request_id TEXT NOT NULL, token TEXT, environment TEXT, alias TEXT,
  provider TEXT, upstream_model TEXT, endpoint TEXT NOT NULL, stream INTEGER NOT NULL, status INTEGER NOT NULL,
  outcome TEXT NOT NULL, rule TEXT, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
  tokens_estimated INTEGER NOT NULL, cost REAL NOT NULL, latency_ms REAL NOT NULL, ttft_ms REAL,
  attempts INTEGER NOT NULL, error_code TEXT
);
CREATE UNIQUE INDEX usage_uid ON usage (uid);
CREATE INDEX usage_time ON usage (time);
CREATE TABLE responses (
  id TEXT NOT NULL PRIMARY KEY, token TEXT NOT NULL, environment TEXT NOT NULL, created_at REAL NOT NULL,
  alias TEXT NOT NULL, provider TEXT NOT NULL, native INTEGER NOT NULL, previous_response_id TEXT,
  input_items TEXT NOT NULL, response TEXT NOT NULL, upstream_id TEXT
);
CREATE INDEX responses_created_at ON responses (created_at);
CREATE TABLE response_items (
  token TEXT NOT NULL, item_id TEXT NOT NULL, response_id TEXT NOT NULL, output INTEGER NOT NULL,
  position INTEGER NOT NULL
);
CREATE INDEX response_items_lookup ON response_items (token, item_id);
CREATE INDEX response_items_response ON response_items (response_id);
INSERT INTO usage_schema (version) VALUES (3);
INSERT INTO usage VALUES ('u1', '2025-01-01T00:00:00.000Z', 'req_old', 'alice', 'prod', 'chat-default', 'openai',
  'gpt-4o-mini', 'chat', 0, 200, 'allow', NULL, 10, 5, 0, 0.001, 100, NULL, 1, NULL);
INSERT INTO responses VALUES ('resp_old', 'alice', 'prod', 1750000000, 'chat-default', 'openai', 0, NULL,
  '[]', '{"id":"resp_old","object":"response","output":[]}', NULL);
`;

/** The PostgreSQL schema as the schema-2 gateway left it (frozen here), with one usage record. */
export function postgresSchema2(schema: string): string[] {
  return [
    `CREATE SCHEMA "${schema}"`,
    `CREATE TABLE "${schema}".schema_versions (version integer PRIMARY KEY,
       applied_at timestamptz NOT NULL DEFAULT now())`,
    `INSERT INTO "${schema}".schema_versions (version) VALUES (1), (2)`,
    `CREATE TABLE "${schema}".usage (uid text PRIMARY KEY, time text NOT NULL, request_id text NOT NULL,
       token text, environment text, alias text, provider text, upstream_model text, endpoint text NOT NULL,
       stream boolean NOT NULL, status bigint NOT NULL, outcome text NOT NULL, rule text,
       prompt_tokens bigint NOT NULL, completion_tokens bigint NOT NULL, tokens_estimated boolean NOT NULL,
       cost double precision NOT NULL, latency_ms double precision NOT NULL, ttft_ms double precision,
       attempts bigint NOT NULL, error_code text)`,
    `CREATE TABLE "${schema}".responses (id text PRIMARY KEY, token text NOT NULL, environment text NOT NULL,
       created_at double precision NOT NULL, alias text NOT NULL, provider text NOT NULL, native boolean NOT NULL,
       upstream_id text, previous_response_id text, input_items json NOT NULL, response json NOT NULL)`,
    `CREATE TABLE "${schema}".response_items (seq bigserial PRIMARY KEY, token text NOT NULL,
       item_id text NOT NULL, response_id text NOT NULL REFERENCES "${schema}".responses (id) ON DELETE CASCADE,
       output boolean NOT NULL, position integer NOT NULL)`,
    `INSERT INTO "${schema}".usage VALUES ('u1', '2025-01-01T00:00:00.000Z', 'req_old', 'alice', 'prod',
       'chat-default', 'openai', 'gpt-4o-mini', 'chat', false, 200, 'allow', NULL, 10, 5, false, 0.001, 100,
       NULL, 1, NULL)`,
    `INSERT INTO "${schema}".responses VALUES ('resp_old', 'alice', 'prod', 1750000000, 'chat-default',
       'openai', false, NULL, NULL, '[]', '{"id":"resp_old","object":"response","output":[]}')`,
  ];
}
