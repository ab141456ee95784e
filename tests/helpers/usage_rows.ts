/**
 * Waiting for a test gateway's usage records: they are written in batches, off the request path, so a test
 * polls until the records it expects are there — in the SQLite file beside the gateway's config
 * (`startGateway` keeps the usage database there), or as counted by `/admin/usage`.
 *
 * @module
 */
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { BACKSTOP_MS } from "./backstop.ts";

/** The usage database of a gateway from `startGateway`: `usage.sqlite` beside its config file. */
export function usageDbPath(gw: { configFile: string }): string {
  return gw.configFile.replace(/gateway\.yaml$/, "usage.sqlite");
}

/** What `pollUsageRows` reads and how long it waits. */
export interface PollOptions {
  /** The query (default `SELECT * FROM usage`) and its parameters. */
  sql?: string;
  params?: SQLInputValue[];
  /**
   * Gives up after this many reads, `intervalMs` (default 20) apart; by default after the backstop's
   * {@linkcode BACKSTOP_MS} (a count of reads ran out in a few seconds on a loaded machine).
   */
  tries?: number;
  intervalMs?: number;
  /** Once `done` holds, waits this long and reads again, to catch records that should not be there. */
  settleMs?: number;
}

/** The rows of `sql` now; empty while the database does not exist yet. */
function readRows<T>(path: string, sql: string, params: SQLInputValue[]): T[] | undefined {
  try {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      return db.prepare(sql).all(...params) as unknown as T[];
    } finally {
      db.close();
    }
  } catch {
    return undefined; // not created yet
  }
}

/**
 * Reads the gateway's usage records until `done(rows)` holds (then, with `settleMs`, once more after that
 * pause); returns the last rows read, whether `done` held or the tries ran out (empty when nothing was read),
 * so the caller asserts on them.
 */
export async function pollUsageRows<T>(
  gw: { configFile: string },
  done: (rows: T[]) => boolean,
  options: PollOptions = {},
): Promise<T[]> {
  const { sql = "SELECT * FROM usage", params = [], tries, intervalMs = 20, settleMs = 0 } = options;
  const path = usageDbPath(gw);
  const started = performance.now();
  const more = (i: number) => tries === undefined ? performance.now() - started < BACKSTOP_MS : i < tries;
  let rows: T[] = [];
  for (let i = 0; more(i); i++) {
    rows = readRows<T>(path, sql, params) ?? rows;
    if (done(rows)) {
      if (settleMs <= 0) return rows;
      await new Promise((r) => setTimeout(r, settleMs));
      return readRows<T>(path, sql, params) ?? rows;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  return rows;
}

/** The usage records once at least `count` are in the store; throws when they do not come. */
export async function usageRows<T>(
  gw: { configFile: string },
  count: number,
  options: Omit<PollOptions, "sql" | "params"> = {},
): Promise<T[]> {
  const rows = await pollUsageRows<T>(gw, (r) => r.length >= count, options);
  if (rows.length < count) throw new Error(`fewer than ${count} usage records`);
  return rows;
}

/** Waits until `/admin/usage` counts `requests` records; throws after `ms`. */
export async function waitForUsage(
  gw: { url: string },
  requests: number,
  options: { adminToken: string; ms?: number; intervalMs?: number },
): Promise<void> {
  const { adminToken, ms = 10_000, intervalMs = 50 } = options;
  const deadline = Date.now() + ms;
  let seen = -1;
  while (Date.now() < deadline) {
    const response = await fetch(`${gw.url}/admin/usage`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    const report = await response.json();
    seen = report?.totals?.requests ?? -1;
    if (seen >= requests) return;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`usage records: ${seen} of ${requests} after ${ms} ms`);
}
