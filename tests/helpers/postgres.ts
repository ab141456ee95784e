/**
 * PostgreSQL for tests: the shared test database (127.0.0.1:5432, trust auth, database `test`; `.ci/run`
 * starts it) and a private schema per test, dropped afterwards, so parallel runs never collide.
 * `TEST_DATABASE_URL` names another database.
 *
 * @module
 */
import postgres from "postgres";

/** The shared test database. */
export const TEST_DATABASE_URL = Deno.env.get("TEST_DATABASE_URL") ??
  "postgres://postgres@127.0.0.1:5432/test";

/** A fresh schema name (lower-case, as the config requires), unique to this run. */
export function randomSchema(prefix = "t"): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return `${prefix}_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** Drops `schema` and all in it (missing is fine), on `url`. */
export async function dropSchema(schema: string, url = TEST_DATABASE_URL): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Runs one statement on `url` (outside any gateway schema unless it names one) and resolves to its rows. */
export async function queryOnce(
  text: string,
  params: (string | number | null)[] = [],
  url = TEST_DATABASE_URL,
): Promise<Record<string, unknown>[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return [...await sql.unsafe(text, params)];
  } finally {
    await sql.end({ timeout: 5 });
  }
}
