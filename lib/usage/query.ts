/**
 * The usage query (`GET /admin/usage`) as SQL over the `usage` table: validation of the filters, the
 * parametrized WHERE clause, group-by keys from a fixed allow-list, and assembly of the rows into a
 * `UsageReport`. Kept apart from the SQLite store so the query logic is readable (and testable) on its own.
 *
 * Latency percentiles are nearest-rank (the value at rank ⌈p·n/100⌉ of the n sorted latencies) and are
 * computed in SQL with window functions (`ROW_NUMBER`/`COUNT(*) OVER`), so latencies never leave the
 * database; `percentile()` is the same definition in TypeScript for tests and other stores.
 *
 * @module
 */
import {
  POLICY_OUTCOMES,
  type PolicyOutcome,
  type UsageGroupKey,
  type UsageQuery,
  type UsageReport,
  type UsageTotals,
} from "./record.ts";

/** A bad filter or group key in a usage query; the admin API answers it with 400. */
export class UsageQueryError extends Error {
  /** `param` names the offending query parameter. */
  constructor(message: string, readonly param: string) {
    super(message);
    this.name = "UsageQueryError";
  }
}

/** A value bound to a SQL parameter. */
export type SqlValue = string | number | null;

/** Runs one SELECT with positional parameters and returns its rows. */
export type SqlAll = (sql: string, params: readonly SqlValue[]) => Record<string, unknown>[];

/**
 * The SQL expression of each group key. This table is the allow-list: only these strings ever reach the SQL
 * text; user values only ever travel as parameters. Times are stored as canonical UTC ISO strings.
 */
const GROUP_EXPR: Readonly<Record<UsageGroupKey, string>> = {
  token: "token",
  environment: "environment",
  alias: "alias",
  provider: "provider",
  outcome: "outcome",
  hour: "strftime('%Y-%m-%dT%H:00:00Z', time)",
  day: "strftime('%Y-%m-%d', time)",
};

const OUTCOMES: readonly PolicyOutcome[] = POLICY_OUTCOMES;
const FILTER_COLUMNS = ["token", "environment", "alias", "provider"] as const;
const PERCENTILES = [50, 90, 99] as const;

/** An ISO time in the canonical form the store keeps (`toISOString()`), so that string order is time order. */
export function canonicalTime(value: string, param = "time"): string {
  const ms = typeof value === "string" ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new UsageQueryError(`${param} must be an ISO 8601 time`, param);
  }
  return new Date(ms).toISOString();
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

/** The WHERE clause (always present, `1=1` without filters) and its parameters. */
export function whereOf(q: UsageQuery): { sql: string; params: SqlValue[] } {
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
  for (const column of FILTER_COLUMNS) {
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
  return { sql: conds.join(" AND "), params };
}

/** Nearest-rank percentile of `sorted` (ascending): the value at rank ⌈p·n/100⌉; null when empty. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p * sorted.length) / 100));
  return sorted[Math.min(rank, sorted.length) - 1];
}

/** Totals over no records. */
export function emptyTotals(): UsageTotals {
  return {
    requests: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    cost: 0,
    denials: {},
    errors: 0,
    latency_ms: { p50: null, p90: null, p99: null },
  };
}

/** Runs `q` through `all` (SQLite dialect) and assembles the report: overall totals plus one entry per group. */
export function runUsageQuery(q: UsageQuery, all: SqlAll): UsageReport {
  const where = whereOf(q);
  const keys = groupKeysOf(q.group_by);
  const totals = aggregate([], where, all)[0]?.totals ?? emptyTotals();
  const groups = keys.length === 0
    ? []
    : aggregate(keys, where, all).map(({ key, totals }) => ({ ...totals, key }));
  return { totals, groups };
}

type Grouped = { key: Record<string, string | null>; totals: UsageTotals };

/** Totals per distinct value of `keys` (one row for no keys): three grouped queries joined on the key. */
function aggregate(
  keys: UsageGroupKey[],
  where: { sql: string; params: SqlValue[] },
  all: SqlAll,
): Grouped[] {
  const exprs = keys.map((k) => GROUP_EXPR[k]);
  const aliases = keys.map((_, i) => `k${i}`);
  const select = exprs.map((e, i) => `${e} AS ${aliases[i]}, `).join("");
  const groupBy = keys.length ? ` GROUP BY ${aliases.join(", ")}` : "";
  const orderBy = keys.length ? ` ORDER BY ${aliases.join(", ")}` : "";

  const mainRows = all(
    `SELECT ${select}COUNT(*) AS requests,
       COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,
       COALESCE(SUM(completion_tokens), 0) AS completion_tokens,
       COALESCE(SUM(cost), 0) AS cost,
       COALESCE(SUM(CASE WHEN status >= 400 AND outcome <> 'deny' THEN 1 ELSE 0 END), 0) AS errors
     FROM usage WHERE ${where.sql}${groupBy}${orderBy}`,
    where.params,
  );

  const denialRows = all(
    `SELECT ${select}COALESCE(rule, 'unknown') AS rule, COUNT(*) AS n
     FROM usage WHERE ${where.sql} AND outcome = 'deny'
     GROUP BY ${[...aliases, "rule"].join(", ")}`,
    where.params,
  );

  const partition = keys.length ? `PARTITION BY ${exprs.join(", ")} ` : "";
  const pctSelect = PERCENTILES.map((p) =>
    `MAX(CASE WHEN rn = (${p} * n + 99) / 100 THEN latency_ms END) AS p${p}`
  )
    .join(", ");
  const pctRows = all(
    `SELECT ${aliases.map((a) => `${a}, `).join("")}${pctSelect}
     FROM (SELECT ${select}latency_ms,
             ROW_NUMBER() OVER (${partition}ORDER BY latency_ms) AS rn,
             COUNT(*) OVER (${partition.trim()}) AS n
           FROM usage WHERE ${where.sql})${groupBy}`,
    where.params,
  );

  const keyOf = (row: Record<string, unknown>) => JSON.stringify(aliases.map((a) => row[a] ?? null));
  const denials = new Map<string, Record<string, number>>();
  for (const row of denialRows) {
    const k = keyOf(row);
    const byRule = denials.get(k) ?? {};
    byRule[String(row.rule)] = Number(row.n);
    denials.set(k, byRule);
  }
  const pcts = new Map(pctRows.map((row) => [keyOf(row), row]));

  return mainRows.map((row) => {
    const k = keyOf(row);
    const pct = pcts.get(k);
    const prompt = Number(row.prompt_tokens);
    const completion = Number(row.completion_tokens);
    const key: Record<string, string | null> = {};
    keys.forEach((name, i) => {
      const v = row[aliases[i]];
      key[name] = v === null || v === undefined ? null : String(v);
    });
    return {
      key,
      totals: {
        requests: Number(row.requests),
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        cost: Number(row.cost),
        denials: denials.get(k) ?? {},
        errors: Number(row.errors),
        latency_ms: { p50: numOrNull(pct?.p50), p90: numOrNull(pct?.p90), p99: numOrNull(pct?.p99) },
      },
    };
  });
}

function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}
