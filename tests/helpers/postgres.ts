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

/**
 * Whether a test that needs the shared test database may go on. In CI it always may (an unreachable database
 * then fails the test, never skips it); elsewhere, when the database does not answer, the test is marked as
 * skipped with a step that says why, and this resolves to false.
 */
export async function postgresOrSkip(t: Deno.TestContext): Promise<boolean> {
  if (Deno.env.get("CI") !== undefined) return true;
  const sql = postgres(TEST_DATABASE_URL, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`SELECT 1`;
    return true;
  } catch {
    await t.step({ name: "postgres unreachable (not CI): skipped", ignore: true, fn: () => {} });
    return false;
  } finally {
    await sql.end({ timeout: 1 });
  }
}
