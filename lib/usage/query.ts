/**
 * The usage query (`GET /admin/usage`) as SQL over the `usage` table: validation of the filters, the
 * parametrized WHERE clause, group-by keys from a fixed allow-list, and assembly of the rows into a
 * `UsageReport`. Kept apart from the SQLite store so the query logic is readable (and testable) on its own.
 *
 * Latency percentiles are nearest-rank (the value at rank ⌈p·n/100⌉ of the n sorted latencies), computed by an
 * aggregate in the same grouped query as the sums, so latencies never leave the database and each query reads
 * the records once: PostgreSQL's `percentile_disc` (which is nearest-rank), and in SQLite `gw_latency_pcts`, a
 * function the store registers (`registerSqliteFunctions`, in `sql_dialect.ts` with what else differs between
 * the two databases' SQL). Window functions (`ROW_NUMBER() OVER`)
 * did the same with a sort of every record per query, five times slower on a month of records.
 *
 * @module
 */
import {
  CACHE_HITS,
  CACHE_LOOKUPS,
  COST_CLASS_COLUMNS,
  POLICY_OUTCOMES,
  type PolicyOutcome,
  USAGE_FILTER_COLUMNS,
  type UsageFilters,
  type UsageGroupKey,
  type UsageQuery,
  type UsageReport,
  type UsageTotals,
} from "./record.ts";
import {
  GROUP_EXPR,
  moneyOf,
  nearestRank,
  PERCENTILES,
  type SqlDialect,
  SQLITE_DIALECT,
} from "./sql_dialect.ts";
import { type GroupPage, groupPageOf, keyRangeSql, type KeyTuple } from "./group_page.ts";
import { labelColumns, labelsOf } from "./group_labels.ts";

import { UsageQueryError } from "./query_error.ts";

export { UsageQueryError };

/** A value bound to a SQL parameter. */
export type SqlValue = string | number | null;

/** Runs one SELECT with positional parameters and returns its rows. */
export type SqlAll = (sql: string, params: readonly SqlValue[]) => Record<string, unknown>[];

/** The totals' fields that are plain sums over the records (the rest are counted, derived or percentiles). */
type SummedField = Exclude<keyof UsageTotals, "requests" | "total_tokens" | "denials" | "latency_ms">;

/** Constant strings as a SQL `IN` list (never user values: those only travel as parameters). */
const sqlList = (values: readonly string[]) => values.map((v) => `'${v}'`).join(", ");

/**
 * What each summed field of the totals adds up per record, the one list of them: the SQL, the empty totals
 * and the assembly all read it, so a new field of the report is one row here (and the type makes it required).
 */
const SUMS: Readonly<Record<SummedField, string>> = {
  prompt_tokens: "prompt_tokens",
  completion_tokens: "completion_tokens",
  cost: "cost",
  errors: "CASE WHEN status >= 400 AND outcome <> 'deny' THEN 1 ELSE 0 END",
  cache_hits: `CASE WHEN cache IN (${sqlList(CACHE_HITS)}) THEN 1 ELSE 0 END`,
  cache_lookups: `CASE WHEN cache IN (${sqlList(CACHE_LOOKUPS)}) THEN 1 ELSE 0 END`,
  saved_tokens: "saved_tokens",
  saved_cost: "saved_cost",
  cost_input: "cost_input",
  cost_cached: "cost_cached",
  cost_cache_write: "cost_cache_write",
  cost_output: "cost_output",
  cost_reasoning: "cost_reasoning",
  cost_web_search: "cost_web_search",
};

const SUMMED = Object.keys(SUMS) as SummedField[];

/** The summed fields that are money: summed as whole units (`SqlDialect.money`), so both stores agree. */
const MONEY: ReadonlySet<SummedField> = new Set(["cost", "saved_cost", ...COST_CLASS_COLUMNS]);

/** The sum of a summed field, in `dialect`. */
const sumSql = (field: SummedField, dialect: SqlDialect) =>
  dialect.sum(MONEY.has(field) ? dialect.money(SUMS[field]) : SUMS[field]);

/** The summed fields of one row of the main query (column per field, by its name), or all zero. */
function sumsOf(row: Record<string, unknown> | null): Record<SummedField, number> {
  const sums = {} as Record<SummedField, number>;
  for (const field of SUMMED) {
    const value = row === null ? 0 : row[field];
    sums[field] = MONEY.has(field) ? moneyOf(value) : Number(value ?? 0);
  }
  return sums;
}

/** Runs one SELECT with positional parameters (`?`) and resolves to its rows. */

export type SqlAllAsync = (sql: string, params: readonly SqlValue[]) => Promise<Record<string, unknown>[]>;

const OUTCOMES: readonly PolicyOutcome[] = POLICY_OUTCOMES;

/** An ISO time in the canonical form the store keeps (`toISOString()`), so that string order is time order. */
export function canonicalTime(value: string, param = "time"): string {
  const ms = typeof value === "string" ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new UsageQueryError(`${param} must be an ISO 8601 time`, param);
  }
  return new Date(ms).toISOString();
}

/**
 * The SELECT of a budget's seed: what the records whose `column` is the first parameter spent from the second (a
 * time) on, as `tokens` and `cost` (read by {@linkcode spendOf}); the same sums as `/admin/usage`'s.
 */
export function spendSql(column: "token_id" | "team_id", dialect: SqlDialect): string {
  const tokens = dialect.sum("prompt_tokens + completion_tokens");
  const cost = sumSql("cost", dialect);
  return `SELECT ${tokens} AS tokens, ${cost} AS cost FROM usage WHERE ${column} = ? AND time >= ?`;
}

/** A budget's seed from the row of {@linkcode spendSql} (none: nothing spent). */
export function spendOf(row: Record<string, unknown> | undefined): { tokens: number; cost: number } {
  return { tokens: Number(row?.tokens ?? 0), cost: moneyOf(row?.cost) };
}

/** A retention batch's size: a positive whole number (anything else would delete nothing, or everything). */
export function batchLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`a retention batch must be a positive whole number, not ${limit}`);
  }
  return limit;
}

/** The validated, de-duplicated group keys of a query (unknown keys are rejected, never interpolated). */
export function groupKeysOf(groupBy: readonly string[] | undefined): UsageGroupKey[] {
  const keys: UsageGroupKey[] = [];
  for (const key of groupBy ?? []) {
    if (!Object.hasOwn(GROUP_EXPR, key)) {
      throw new UsageQueryError(
        `group_by must be among ${Object.keys(GROUP_EXPR).join(", ")}; got ${JSON.stringify(key)}`,
        "group_by",
      );
    }
    if (!keys.includes(key as UsageGroupKey)) keys.push(key as UsageGroupKey);
  }
  return keys;
}

/**
 * The WHERE clause (always present, `1=1` without filters) and its parameters. The rule filter matches any of
 * a record's comma-joined rules, so it takes one rule name (a "," in it is refused).
 */
export function whereOf(
  q: UsageFilters,
  dialect: SqlDialect = SQLITE_DIALECT,
): { sql: string; params: SqlValue[] } {
  const conds: string[] = ["1=1"];
  const params: SqlValue[] = [];
  if (q.from !== undefined) {
    conds.push("time >= ?");
    params.push(canonicalTime(q.from, "from"));
  }
  if (q.to !== undefined) {
    conds.push("time < ?");
    params.push(canonicalTime(q.to, "to"));
  }
  for (const column of USAGE_FILTER_COLUMNS) {
    const value = q[column];
    if (value === undefined) continue;
    if (typeof value !== "string") throw new UsageQueryError(`${column} must be a string`, column);
    conds.push(`${column} = ?`);
    params.push(value);
  }
  if (q.outcome !== undefined) {
    if (!OUTCOMES.includes(q.outcome)) {
      throw new UsageQueryError(`outcome must be one of ${OUTCOMES.join(", ")}`, "outcome");
    }
    conds.push("outcome = ?");
    params.push(q.outcome);
  }
  if (q.rule !== undefined) {
    if (typeof q.rule !== "string" || q.rule.includes(",")) {
      throw new UsageQueryError("rule must be one rule name (without ',')", "rule");
    }
    conds.push(dialect.ruleMatch);
    params.push(q.rule);
  }
  return { sql: conds.join(" AND "), params };
}

/** Nearest-rank percentile of `sorted` (ascending): the value at rank ⌈p·n/100⌉; null when empty. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[nearestRank(sorted.length, p) - 1];
}

/** Totals over no records. */
export function emptyTotals(): UsageTotals {
  return totalsOf(0, sumsOf(null), {}, { p50: null, p90: null, p99: null });
}

/** The totals of a set of records from its count, sums, denials and latency percentiles. */
function totalsOf(
  requests: number,
  sums: Record<SummedField, number>,
  denials: Record<string, number>,
  latency_ms: UsageTotals["latency_ms"],
): UsageTotals {
  return {
    requests,
    ...sums,
    total_tokens: sums.prompt_tokens + sums.completion_tokens,
    denials,
    latency_ms,
  };
}

/** Runs `q` through `all` (SQLite dialect) and assembles the report: overall totals plus a page of groups. */
export function runUsageQuery(q: UsageQuery, all: SqlAll): UsageReport {
  const where = whereOf(q, SQLITE_DIALECT);
  const keys = groupKeysOf(q.group_by);
  const page = groupPageOf(q);
  const run = ({ sql, params }: SqlQuery) => all(sql, params);
  const totals = assemble([], aggregateSql([], where, SQLITE_DIALECT).map(run))[0]?.totals ?? emptyTotals();
  if (keys.length === 0) return { totals, groups: [], has_more: false, next_offset: null };
  const mainRows = run(groupsSql(keys, where, SQLITE_DIALECT, page));
  const { rows, ...more } = pageOf(mainRows, page);
  const denials = denialsSql(keys, where, SQLITE_DIALECT, rows);
  return { totals, groups: groupsOf(keys, rows, denials === null ? [] : run(denials)), ...more };
}

/**
 * {@linkcode runUsageQuery} for a networked store: the same validation, SQL (in `dialect`) and assembly, with
 * the overall totals' queries sent with the groups' (the page's denials follow: they are bounded by its keys).
 */
export async function runUsageQueryAsync(
  q: UsageQuery,
  all: SqlAllAsync,
  dialect: SqlDialect,
): Promise<UsageReport> {
  const where = whereOf(q, dialect);
  const keys = groupKeysOf(q.group_by);
  const page = groupPageOf(q);
  const run = ({ sql, params }: SqlQuery) => all(sql, params);
  const [overall, mainRows] = await Promise.all([
    Promise.all(aggregateSql([], where, dialect).map(run)),
    keys.length === 0 ? null : run(groupsSql(keys, where, dialect, page)),
  ]);
  const totals = assemble([], overall)[0]?.totals ?? emptyTotals();
  if (mainRows === null) return { totals, groups: [], has_more: false, next_offset: null };
  const { rows, ...more } = pageOf(mainRows, page);
  const denials = denialsSql(keys, where, dialect, rows);
  return { totals, groups: groupsOf(keys, rows, denials === null ? [] : await run(denials)), ...more };
}

type Grouped = { key: Record<string, string | null>; totals: UsageTotals };

/** One SELECT and its parameters. */
type SqlQuery = { sql: string; params: SqlValue[] };

/** The page's rows of the grouped query (asked for one more than the page, to tell whether groups remain). */
function pageOf(
  rows: Record<string, unknown>[],
  { limit, offset }: GroupPage,
): { rows: Record<string, unknown>[]; has_more: boolean; next_offset: number | null } {
  const has_more = rows.length > limit;
  return { rows: rows.slice(0, limit), has_more, next_offset: has_more ? offset + limit : null };
}

/** A page's groups as the report gives them: each group's totals with its key. */
function groupsOf(
  keys: UsageGroupKey[],
  mainRows: Record<string, unknown>[],
  denialRows: Record<string, unknown>[],
): UsageReport["groups"] {
  return assemble(keys, [mainRows, denialRows]).map(({ key, totals }) => ({ ...totals, key }));
}

/** The aliases (`k0`, `k1`, …) of `keys` in the SELECT lists, and their SELECT terms. */
function keyColumns(keys: UsageGroupKey[], dialect: SqlDialect) {
  const exprs = keys.map((k) => dialect.groupExpr[k]);
  const aliases = keys.map((_, i) => `k${i}`);
  const select = exprs.map((e, i) => `${e} AS ${aliases[i]}, `).join("");
  // Grouping by rule reads one row per rule of a record; otherwise the table itself.
  const from = keys.includes("rule") ? dialect.ruleSource : "usage";
  return { exprs, aliases, select, from };
}

/**
 * The totals query of `keys` (none: the overall totals) and its denials by rule; without keys both are one
 * row each, so they need no page.
 */
function aggregateSql(keys: UsageGroupKey[], where: SqlQuery, dialect: SqlDialect): [SqlQuery, SqlQuery] {
  const { select, aliases, from } = keyColumns(keys, dialect);
  const groupBy = keys.length ? ` GROUP BY ${aliases.join(", ")}` : "";
  const sums = SUMMED.map((field) => `${sumSql(field, dialect)} AS ${field},\n       `).join("");
  const main = `SELECT ${select}${labelColumns(keys, dialect)}COUNT(*) AS requests,
       ${sums}${dialect.percentiles} AS pcts
     FROM ${from} WHERE ${where.sql}${groupBy}`;
  const denials = `SELECT ${select}COALESCE(rule, 'unknown') AS rule, COUNT(*) AS n
     FROM ${from} WHERE ${where.sql} AND outcome = 'deny'
     GROUP BY ${[...aliases, "rule"].join(", ")}`;
  return [{ sql: main, params: where.params }, { sql: denials, params: where.params }];
}

/**
 * The grouped totals query of one page: the groups in their keys' order (total: the keys are the groups'),
 * `limit + 1` of them from `offset` (the extra one only says whether more remain).
 */
function groupsSql(keys: UsageGroupKey[], where: SqlQuery, dialect: SqlDialect, page: GroupPage): SqlQuery {
  const { exprs, aliases } = keyColumns(keys, dialect);
  const [main] = aggregateSql(keys, where, dialect);
  const orderBy = aliases.map((a, i) => dialect.orderTerm(a, exprs[i])).join(", ");
  return {
    sql: `${main.sql} ORDER BY ${orderBy} LIMIT ? OFFSET ?`,
    params: [...main.params, page.limit + 1, page.offset],
  };
}

/**
 * The denials by rule of the page's groups (`rows`, the page of {@linkcode groupsSql}), or null for an empty
 * page. Its records are those between the page's first and last keys, so it reads no other groups' denials.
 */
function denialsSql(
  keys: UsageGroupKey[],
  where: SqlQuery,
  dialect: SqlDialect,
  rows: Record<string, unknown>[],
): SqlQuery | null {
  if (rows.length === 0) return null;
  const { exprs, aliases } = keyColumns(keys, dialect);
  const tuple = (row: Record<string, unknown>): KeyTuple =>
    aliases.map((a) => row[a] === null || row[a] === undefined ? null : String(row[a]));
  const range = keyRangeSql(exprs, tuple(rows[0]), tuple(rows[rows.length - 1]), dialect);
  const [, denials] = aggregateSql(keys, { sql: `${where.sql} AND ${range.sql}`, params: [] }, dialect);
  return { sql: denials.sql, params: [...where.params, ...range.params] };
}

/** Totals per distinct value of `keys` (one row for no keys) from the rows of {@linkcode aggregateSql}'s queries. */
function assemble(
  keys: UsageGroupKey[],
  [mainRows, denialRows]: Record<string, unknown>[][],
): Grouped[] {
  const aliases = keys.map((_, i) => `k${i}`);
  const keyOf = (row: Record<string, unknown>) => JSON.stringify(aliases.map((a) => row[a] ?? null));
  const denials = new Map<string, Record<string, number>>();
  for (const row of denialRows) {
    const k = keyOf(row);
    const byRule = denials.get(k) ?? {};
    byRule[String(row.rule)] = Number(row.n);
    denials.set(k, byRule);
  }

  return mainRows.map((row) => {
    const [p50, p90, p99] = percentilesOf(row.pcts);
    const key: Record<string, string | null> = {};
    const text = (v: unknown) => v === null || v === undefined ? null : String(v);
    keys.forEach((name, i) => key[name] = text(row[aliases[i]]));
    for (const { name, alias } of labelsOf(keys)) key[name] = text(row[alias]);
    return {
      key,
      totals: totalsOf(Number(row.requests), sumsOf(row), denials.get(keyOf(row)) ?? {}, { p50, p90, p99 }),
    };
  });
}

/** p50, p90, p99 from the percentiles column: PostgreSQL's array, SQLite's JSON text, or null (no records). */
function percentilesOf(value: unknown): (number | null)[] {
  let list: unknown = value;
  if (typeof value === "string") {
    try {
      list = JSON.parse(value);
    } catch {
      list = null;
    }
  }
  return PERCENTILES.map((_, i) => Array.isArray(list) ? numOrNull(list[i]) : null);
}

function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}
