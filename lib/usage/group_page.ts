/**
 * The page of groups a usage report answers. A grouped report is bounded like every answer built from
 * outside input: at most `limit` groups (default {@linkcode DEFAULT_GROUP_LIMIT}, at most
 * {@linkcode MAX_GROUP_LIMIT}), from `offset` in the groups' order (their keys ascending, NULL first, text by
 * bytes: `SqlDialect.orderTerm`), with `has_more` when groups remain. A minute grain over a year is ~525k
 * groups; unbounded, that was one answer of hundreds of megabytes.
 *
 * Paging is by offset rather than a cursor: every page's query aggregates the whole filtered range anyway (the
 * groups exist only after grouping), so a cursor would save nothing, and keys of several columns with NULLs
 * would make one awkward to compare.
 *
 * The denials of a page's groups come from a second query; {@linkcode keyRangeSql} keeps it to the page's
 * groups (the page is one contiguous run of the groups' order), so it reads no more groups than the page.
 *
 * @module
 */
import { UsageQueryError } from "./query_error.ts";
import type { SqlDialect } from "./sql_dialect.ts";

/** Groups per report when the query gives no `limit`: more than any console chart or breakdown needs. */
export const DEFAULT_GROUP_LIMIT = 1000;
/** The most groups one report answers. */
export const MAX_GROUP_LIMIT = 10_000;
/** The largest `offset` taken: more groups than any query could have, and still a small number. */
export const MAX_GROUP_OFFSET = 100_000_000;

/** A validated page: how many groups, from which. */
export interface GroupPage {
  readonly limit: number;
  readonly offset: number;
}

/** The page of `q`, with the default limit; a limit or offset out of range is a {@linkcode UsageQueryError}. */
export function groupPageOf(q: { limit?: number; offset?: number }): GroupPage {
  const limit = q.limit ?? DEFAULT_GROUP_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_GROUP_LIMIT) {
    throw new UsageQueryError(`limit must be an integer from 1 to ${MAX_GROUP_LIMIT}`, "limit");
  }
  const offset = q.offset ?? 0;
  if (!Number.isSafeInteger(offset) || offset < 0 || offset > MAX_GROUP_OFFSET) {
    throw new UsageQueryError(`offset must be an integer from 0 to ${MAX_GROUP_OFFSET}`, "offset");
  }
  return { limit, offset };
}

/** A group's key values in the order of the query's keys. */
export type KeyTuple = readonly (string | null)[];

/**
 * The condition "the record's group is between `first` and `last` (inclusive) in the groups' order", on the
 * group key expressions `exprs`, with its parameters. The order is lexicographic over the keys, each NULL
 * first and text by bytes (as `orderTerm` sorts), so the records it keeps are exactly those of the groups
 * from `first` to `last`: the page's, when they are its first and last groups.
 */
export function keyRangeSql(
  exprs: readonly string[],
  first: KeyTuple,
  last: KeyTuple,
  dialect: SqlDialect,
): { sql: string; params: string[] } {
  const lower = bound(exprs, first, ">", dialect);
  const upper = bound(exprs, last, "<", dialect);
  return { sql: `${lower.sql} AND ${upper.sql}`, params: [...lower.params, ...upper.params] };
}

/** "Key tuple after (`>`) or before (`<`) `value`, or equal to it", from key `i` on. */
function bound(
  exprs: readonly string[],
  value: KeyTuple,
  dir: ">" | "<",
  dialect: SqlDialect,
  i = 0,
): { sql: string; params: string[] } {
  if (i === exprs.length) return { sql: "1=1", params: [] };
  const e = dialect.bytewise(`(${exprs[i]})`);
  const v = value[i];
  const rest = bound(exprs, value, dir, dialect, i + 1);
  // NULL sorts before every value: nothing is before it, every value is after it.
  if (v === null) {
    const strict = dir === ">" ? `${e} IS NOT NULL` : "1=0";
    return { sql: `(${strict} OR (${e} IS NULL AND ${rest.sql}))`, params: rest.params };
  }
  const strict = dir === ">" ? `${e} > CAST(? AS text)` : `(${e} IS NULL OR ${e} < CAST(? AS text))`;
  return {
    sql: `(${strict} OR (${e} = CAST(? AS text) AND ${rest.sql}))`,
    params: [v, v, ...rest.params],
  };
}
