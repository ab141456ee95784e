/**
 * What differs between the SQL of the two stores that answer the usage queries (SQLite embedded, PostgreSQL
 * for a fleet), so that `query.ts` and `record_list.ts` write one query for both: the group keys' expressions,
 * the time buckets, rule and guardrail matching, ordering, and the latency percentiles (an aggregate SQLite
 * lacks, registered here).
 *
 * @module
 */
import type { UsageGroupKey } from "./record.ts";

/** The latency percentiles a usage report gives, in the order the percentile aggregates return them. */
export const PERCENTILES = [50, 90, 99] as const;

/**
 * The SQL expression of each group key. This table is the allow-list: only these strings ever reach the SQL
 * text; user values only ever travel as parameters. Times are stored as canonical UTC ISO strings. `rule` is
 * one rule of a record (see {@linkcode SqlDialect.ruleSource}); an empty part counts as no rule.
 */
export const GROUP_EXPR: Readonly<Record<UsageGroupKey, string>> = {
  token: "token",
  token_id: "token_id",
  team: "team",
  team_id: "team_id",
  environment: "environment",
  alias: "alias",
  provider: "provider",
  upstream_model: "upstream_model",
  outcome: "outcome",
  rule: "NULLIF(rule_part.value, '')",
  endpoint: "endpoint",
  minute: "strftime('%Y-%m-%dT%H:%M:00Z', time)",
  hour: "strftime('%Y-%m-%dT%H:00:00Z', time)",
  day: "strftime('%Y-%m-%d', time)",
};

/**
 * What differs between the SQL of the stores that run this query (SQLite and PostgreSQL): the time bucket
 * expressions, how a record's joined rules are split and matched, and how groups are ordered. PostgreSQL
 * sorts NULLs last and text by the database's collation, SQLite NULLs first and by bytes; its dialect asks for
 * SQLite's order, so both stores answer alike.
 */
export interface SqlDialect {
  groupExpr: Readonly<Record<UsageGroupKey, string>>;
  /** The ORDER BY term of a group key, by its alias in the SELECT list or its expression. */
  orderTerm(alias: string, expr: string): string;
  /**
   * The FROM source when grouping by rule: `usage` with one row per rule of a record (`rule_part.value`; one
   * row with NULL when it has none), so a request modified by two rules counts in both rules' groups.
   */
  ruleSource: string;
  /** The condition "one of the record's comma-joined rules is the parameter". */
  ruleMatch: string;
  /**
   * The condition "one of the record's `guardrails` outcomes is of the guardrail named by the parameter" (the
   * request log's `guardrail=`). False for records with none; a value that is not a JSON array never matches.
   */
  guardrailMatch: string;
  /** Sorts text by bytes (the uid tie-break of the request log), as SQLite does. */
  bytewise(expr: string): string;
  /** The aggregate of the latencies' p50, p90 and p99 (nearest-rank), read back by `percentilesOf`. */
  percentiles: string;
  /**
   * The sum of `expr` over the rows (0 for none), never failing; of integers, read back with `Number`, the exact
   * sum rounded once to a double in both databases (exact below 2^53). A record's counts are accepted up to
   * 2^53 - 1, so a thousand of them pass SQLite's 64-bit range, where its `SUM` throws "integer overflow"
   * (failing `/admin/usage` and a budget's seed); and `node:sqlite` throws on reading an integer past 2^53.
   */
  sum(expr: string): string;
  /**
   * A money column of a record in whole picodollars, for {@linkcode SqlDialect.sum}: `trunc(amount × 10^12 +
   * 0.5)` in doubles (the nearest; a negative amount, which the gateway never writes, is up to one more), and
   * past 64-bit integers the nearest end of them, as SQLite's CAST saturates. {@linkcode moneyOf} reads the sum
   * back, and says why.
   */
  money(column: string): string;
}

/**
 * A sum of {@linkcode SqlDialect.money} (picodollars: 10^-12 of the price table's currency) as the amount it
 * stands for. Money is summed as whole picodollars, not as the doubles the records hold, because a sum of
 * doubles depends on its order and method: PostgreSQL's `sum(double precision)` adds in scan order (10,000 ×
 * $0.001 gives 9.999999999999897), SQLite's is compensated (10), so a $10 budget was seeded as reached by one
 * store and not by the other. Integers add exactly in both (see {@linkcode SqlDialect.sum}), and a record's
 * picodollars are the same IEEE operations in both, so the two stores answer the very same number, and a sum
 * of amounts of few decimals comes out as the double nearest its exact decimal. A record loses at most half a
 * picodollar (the catalog's prices have at most 3 decimals per million tokens, 9 per token; a price with up to
 * 6 is kept exactly), and counts for at most about 9.2 million (2^63 - 1 picodollars): no request costs that,
 * only absurd counts the gateway accepts (up to 2^53 - 1) can.
 */
export function moneyOf(units: unknown): number {
  // Dividing by 1e12 (exact) rather than multiplying by 1e-12 (inexact): the double nearest the exact decimal.
  return Number(units ?? 0) / 1e12;
}

/**
 * A record's rules as a JSON array for `json_each`. Rule names are letters, digits and `. _ : -`; a rule
 * that would not make valid JSON (never written by the gateway) is kept whole rather than failing the query.
 */
const SQLITE_RULES_JSON = `'["' || replace(usage.rule, ',', '","') || '"]'`;

/** The SQLite aggregate behind the percentiles: its name, and what it returns (JSON `[p50, p90, p99]`). */
const SQLITE_PERCENTILES_FN = "gw_latency_pcts";

/** SQLite's dialect (the embedded store). */
export const SQLITE_DIALECT: SqlDialect = {
  groupExpr: GROUP_EXPR,
  orderTerm: (alias) => alias,
  ruleSource: `usage, json_each(CASE WHEN json_valid(${SQLITE_RULES_JSON}) THEN ${SQLITE_RULES_JSON}
       ELSE json_array(usage.rule) END) AS rule_part`,
  ruleMatch: "instr(',' || rule || ',', ',' || ? || ',') > 0",
  guardrailMatch: `guardrails IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(CASE WHEN json_valid(guardrails)
       AND json_type(guardrails) = 'array' THEN guardrails ELSE '[]' END) AS g
       WHERE json_extract(g.value, '$.name') = ?)`,
  bytewise: (expr) => expr,
  percentiles: `${SQLITE_PERCENTILES_FN}(latency_ms)`,
  // TOTAL adds integers exactly in 64 bits and, past them, goes on as a compensated floating-point sum instead
  // of throwing; its double is the exact sum rounded once, as `Number` rounds PostgreSQL's exact numeric.
  sum: (expr) => `TOTAL(${expr})`,
  // The cast truncates, and saturates past 64 bits (as an overflowing product, Infinity): one operation per
  // column less than a clamp, for a query that sums eight of them over every record it reads.
  money: (c) => `CAST(${c} * 1e12 + 0.5 AS INTEGER)`,
};

/**
 * PostgreSQL's dialect. Times are the same canonical ISO text there, so the hour and day are prefixes of it
 * (what SQLite's `strftime` gives for such a time).
 */
export const POSTGRES_DIALECT: SqlDialect = {
  groupExpr: {
    ...GROUP_EXPR,
    minute: "substr(time, 1, 16) || ':00Z'",
    hour: "substr(time, 1, 13) || ':00:00Z'",
    day: "substr(time, 1, 10)",
  },
  // An output alias cannot take a COLLATE in PostgreSQL's ORDER BY; the grouped expression can.
  orderTerm: (_alias, expr) => `(${expr}) COLLATE "C" NULLS FIRST`,
  ruleSource: "usage LEFT JOIN LATERAL unnest(string_to_array(usage.rule, ',')) AS rule_part(value) ON true",
  ruleMatch: "strpos(',' || rule || ',', ',' || CAST(? AS text) || ',') > 0",
  guardrailMatch: `guardrails IS NOT NULL AND EXISTS (SELECT 1 FROM json_array_elements(CASE WHEN
       json_typeof(guardrails) = 'array' THEN guardrails ELSE '[]'::json END) AS g(value)
       WHERE g.value ->> 'name' = CAST(? AS text))`,
  bytewise: (expr) => `${expr} COLLATE "C"`,
  // The first value whose cumulative share reaches p: the value at rank ⌈p·n⌉, nearest-rank as in SQLite.
  // As JSON: the client does not fetch the database's array types (see connectPostgres), and JSON it parses.
  percentiles: "to_json(percentile_disc(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY latency_ms))",
  // The sum of a bigint is an exact numeric (text to the client), which cannot overflow.
  sum: (expr) => `COALESCE(SUM(${expr}), 0)`,
  // SQLite's picodollars exactly: the same double operations (float8 constants: a numeric one would make the
  // product numeric), then its cast's truncation and saturation (a cast to bigint would round half to even, and
  // fail past 64 bits). The clamp at 10 million, past which SQLite's product saturates too, keeps the product
  // finite, which PostgreSQL would otherwise refuse.
  money: (c) => {
    const x = `(GREATEST(LEAST(${c}, float8 '1e7'), float8 '-1e7') * float8 '1e12' + float8 '0.5')`;
    return `CASE WHEN ${x} >= float8 '9223372036854775808' THEN 9223372036854775807
       ELSE CAST(trunc(GREATEST(${x}, float8 '-9223372036854775808')) AS bigint) END`;
  },
};

/** The part of `node:sqlite`'s `DatabaseSync` that registers an aggregate (in Deno and Bun alike). */
export interface SqliteAggregateHost {
  aggregate(name: string, options: {
    start: unknown;
    step: (acc: number[], value: unknown) => number[];
    result: (acc: number[]) => string | null;
    deterministic?: boolean;
  }): void;
}

/** Registers the functions the SQLite dialect's SQL calls; the store does it once per connection at open. */
export function registerSqliteFunctions(db: SqliteAggregateHost): void {
  db.aggregate(SQLITE_PERCENTILES_FN, {
    start: () => [],
    step: (acc, value) => {
      if (typeof value === "number") acc.push(value);
      return acc;
    },
    result: (acc) => {
      if (acc.length === 0) return null;
      const sorted = Float64Array.from(acc).sort();
      return JSON.stringify(PERCENTILES.map((p) => sorted[nearestRank(sorted.length, p) - 1]));
    },
    deterministic: true,
  });
}

/** The 1-based nearest rank of percentile `p` among `n` values: ⌈p·n/100⌉, at least 1. */
export function nearestRank(n: number, p: number): number {
  return Math.min(n, Math.max(1, Math.ceil((p * n) / 100)));
}
