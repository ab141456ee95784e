/**
 * How the console writes numbers, money, durations and times. Pure functions (no DOM), so they are unit-tested
 * and every view formats alike. Times are shown in UTC: operators compare them with logs, which are in UTC.
 *
 * @module
 */

const INTEGER = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const DECIMAL = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

/** Placeholder for a value that is not there (no data, not set). */
export const NONE = "—";

/** `1234567` → "1,234,567"; null → "—". */
export function formatCount(value: number | null | undefined): string {
  return value === null || value === undefined || !Number.isFinite(value) ? NONE : INTEGER.format(value);
}

/**
 * Money in the price table's currency (which the gateway does not name), with enough decimals that a cheap
 * request is not shown as 0: `0.000123` → "0.000123", `12.5` → "12.50".
 */
export function formatCost(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return NONE;
  if (value === 0) return "0";
  if (Math.abs(value) >= 1) return value.toFixed(2);
  return value.toPrecision(3).replace(/0+$/, "").replace(/\.$/, "");
}

/** `cost` by token class, as `/admin/usage` sums it and `/admin/requests` records it (docs/admin_api.md). */
export interface CostClasses {
  readonly cost_input?: number;
  readonly cost_cached?: number;
  readonly cost_cache_write?: number;
  readonly cost_output?: number;
  readonly cost_reasoning?: number;
  readonly cost_web_search?: number;
}

/**
 * The whole split of a cost, for a tooltip: "input 0.01 · cached 0.002 · cache writes 0 · output 0.03 ·
 * reasoning 0". Every token class is shown, so the parts visibly add up to the cost next to it; web searches
 * only when there were some (most requests run none).
 */
export function formatCostClasses(c: CostClasses): string {
  const classes: [string, number | undefined][] = [
    ["input", c.cost_input],
    ["cached", c.cost_cached],
    ["cache writes", c.cost_cache_write],
    ["output", c.cost_output],
    ["reasoning", c.cost_reasoning],
  ];
  if (c.cost_web_search) classes.push(["web search", c.cost_web_search]);
  return classes.map(([name, value]) => `${name} ${formatCost(value ?? 0)}`).join(" · ");
}

/**
 * The parts of a cost an operator acts on (prompt caching's reads and writes, reasoning, web searches), as one
 * short line:
 * "of which cached 0.002 · reasoning 0.01", only the non-zero ones; "" when there are none (no caching or
 * reasoning, or records from before the split), so the line is left out rather than showing zeros.
 */
export function formatCostShares(c: CostClasses): string {
  const shares: [string, number | undefined][] = [
    ["cached", c.cost_cached],
    ["cache writes", c.cost_cache_write],
    ["reasoning", c.cost_reasoning],
    ["web search", c.cost_web_search],
  ];
  const parts = shares.flatMap(([name, value]) => value ? [`${name} ${formatCost(value)}`] : []);
  return parts.length === 0 ? "" : `of which ${parts.join(" · ")}`;
}

const TICK = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3, useGrouping: false });

/**
 * An axis tick: at most three significant digits, no trailing zeros, never in exponent form (`0.5`, `1`,
 * `1.25`, `12,500`, a small cost's `0.00015`).
 */
export function axisNumber(value: number): string {
  if (!Number.isFinite(value)) return "";
  return Math.abs(value) >= 1000 ? INTEGER.format(value) : TICK.format(value);
}

/** A latency axis tick: "0.5 ms", "120 ms", "1.5 s". */
export function axisMs(ms: number): string {
  if (!Number.isFinite(ms)) return "";
  return Math.abs(ms) < 1000 ? `${axisNumber(ms)} ms` : `${axisNumber(ms / 1000)} s`;
}

/** A ratio as a percentage: `0.125` → "12.5%"; no requests (NaN) → "—". */
export function formatPercent(ratio: number | null | undefined): string {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return NONE;
  return `${DECIMAL.format(ratio * 100)}%`;
}

/**
 * The response cache's hit rate: hits over lookups (hits and misses; requests that bypassed the cache or
 * whose alias has none are not lookups), so an alias without a cache shows "—", not a misleading 0%.
 */
export function formatHitRate(totals: { cache_hits: number; cache_lookups: number }): string {
  return formatPercent(totals.cache_lookups > 0 ? totals.cache_hits / totals.cache_lookups : Number.NaN);
}

/** Milliseconds: `42.4` → "42 ms", `1530` → "1.53 s"; null → "—". */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return NONE;
  if (Math.abs(ms) < 1000) return `${INTEGER.format(ms)} ms`;
  return `${DECIMAL.format(ms / 1000)} s`;
}

/** An ISO time as "2026-11-24 09:00:05 UTC"; null or unparsable → "—" (or the text as given). */
export function formatTime(iso: string | null | undefined): string {
  if (iso === null || iso === undefined || iso === "") return NONE;
  const time = Date.parse(iso);
  if (Number.isNaN(time)) return iso;
  return `${new Date(time).toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/**
 * A trace id as the request log's table shows it: its first 8 hex digits and "…" (enough to tell the rows of
 * a page apart, and to match by eye against a tracing UI, which shortens them alike); the whole id is in the
 * cell's tooltip and copy button. Shorter text is shown whole.
 */
export function shortTraceId(traceId: string): string {
  return traceId.length > 8 ? `${traceId.slice(0, 8)}…` : traceId;
}

/**
 * A token id as the overview's rows show it beside a shared name: `tok_` and its first 8 hex digits, then "…";
 * a shorter id (a config token's `cfg_<name>`) whole.
 */
export function shortTokenId(id: string): string {
  return id.length > 13 ? `${id.slice(0, 12)}…` : id;
}

/**
 * A team id as the overview's rows show it beside a shared name: `tm_` and its first 8 hex digits, then "…";
 * a config team's `team_<name>` whole (its name is the row's already).
 */
export function shortTeamId(id: string): string {
  return id.startsWith("tm_") && id.length > 12 ? `${id.slice(0, 11)}…` : id;
}

/**
 * The names of rows of usage by identity (`group_by=token_id` or `team_id`: each row one token or team, with
 * the name its records carry): the name alone, or where rows share a name (a token revoked and its name issued
 * again, a team deleted and one made under its name) the name and the short id ("reissued · tok_01234567…"), so
 * no two rows read alike; a row without a name, its short id.
 */
function identityRowNames(
  rows: readonly { id: string; name: string | null }[],
  short: (id: string) => string,
): string[] {
  const count = new Map<string, number>();
  for (const { name } of rows) if (name !== null) count.set(name, (count.get(name) ?? 0) + 1);
  return rows.map(({ id, name }) =>
    name === null ? short(id) : (count.get(name) ?? 0) > 1 ? `${name} · ${short(id)}` : name
  );
}

/** {@linkcode identityRowNames} of rows of usage by token (`group_by=token_id`). */
export function tokenRowNames(rows: readonly { token_id: string; token: string | null }[]): string[] {
  return identityRowNames(rows.map((r) => ({ id: r.token_id, name: r.token })), shortTokenId);
}

/**
 * One guardrail outcome of a usage record as the request log shows it: "pii: input mask (email, phone)", with
 * the error of a failed check after a dash. Names and types only: records never hold the matched text.
 */
export function formatGuardrailOutcome(
  o: { name: string; phase: string; action: string; types?: readonly string[]; error?: string },
): string {
  const types = o.types && o.types.length > 0 ? ` (${o.types.join(", ")})` : "";
  const error = o.error ? ` — ${o.error}` : "";
  return `${o.name}: ${o.phase} ${o.action}${types}${error}`;
}

/** A token's limits: `{rpm: 60, concurrent: 4}` → "60 rpm · 4 concurrent"; none → "—". */
export function formatLimits(limits: { rpm?: number; tpm?: number; concurrent?: number } | null): string {
  if (limits === null) return NONE;
  const parts: string[] = [];
  if (limits.rpm !== undefined) parts.push(`${formatCount(limits.rpm)} rpm`);
  if (limits.tpm !== undefined) parts.push(`${formatCount(limits.tpm)} tpm`);
  if (limits.concurrent !== undefined) parts.push(`${formatCount(limits.concurrent)} concurrent`);
  return parts.length === 0 ? NONE : parts.join(" · ");
}

/** A budget: "1,000,000 tokens / month", "25.00 cost / day"; none → "—". */
export function formatBudget(budget: { tokens?: number; cost?: number; period: string } | null): string {
  if (budget === null) return NONE;
  const parts: string[] = [];
  if (budget.tokens !== undefined) parts.push(`${formatCount(budget.tokens)} tokens`);
  if (budget.cost !== undefined) parts.push(`${formatCost(budget.cost)} cost`);
  return parts.length === 0 ? NONE : `${parts.join(" + ")} / ${budget.period}`;
}

/**
 * A token's cache settings: `false` → "off", `{no_cache: true, max_age: 600000}` → "no-cache · max-age 600 s",
 * as the `Cache-Control` directives they stand for; none set → "—".
 */
export function formatTokenCache(
  cache: false | { no_store: boolean; no_cache: boolean; max_age?: number } | null,
): string {
  if (cache === null) return NONE;
  if (cache === false) return "off";
  const parts: string[] = [];
  if (cache.no_store) parts.push("no-store");
  if (cache.no_cache) parts.push("no-cache");
  if (cache.max_age !== undefined) parts.push(`max-age ${formatMs(cache.max_age)}`);
  return parts.length === 0 ? NONE : parts.join(" · ");
}

/**
 * A shared store's state on `/readyz` (counters, usage database, response cache) in one line, "failing" when its
 * last call failed:
 * `{store: "redis", ok: false, on_failure: "fail_open"}` → "redis: failing (limited requests: fail_open)",
 * `{store: "postgres", ok: true, spilling: true}` → "postgres: ok, spilling to file". Absent (a worker of
 * `serve --workers N` does not report the stores) → "not reported"; null (not configured) → "none".
 */
export function formatStoreState(
  state: { store: string; ok: boolean; on_failure?: string; spilling?: boolean } | null | undefined,
): string {
  if (state === undefined) return "not reported";
  if (state === null) return "none";
  const health = state.ok ? "ok" : "failing";
  const notes: string[] = [];
  if (state.spilling === true) notes.push("spilling to file");
  const failure = !state.ok && state.on_failure !== undefined
    ? ` (limited requests: ${state.on_failure})`
    : "";
  return `${state.store}: ${[health, ...notes].join(", ")}${failure}`;
}

/** Any JSON value, short, for the audit trail's changes: strings bare, null as "none", the rest as JSON. */
export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return "none";
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

/** An entry's changes as lines: "limits: none → {"rpm":60}" for updates, "field: value" otherwise. */
export function changeLines(changes: Record<string, unknown>): string[] {
  return Object.entries(changes).map(([key, value]) => {
    if (
      value !== null && typeof value === "object" && !Array.isArray(value) && "from" in value && "to" in value
    ) {
      const { from, to } = value as { from: unknown; to: unknown };
      return `${key}: ${formatValue(from)} → ${formatValue(to)}`;
    }
    return `${key}: ${formatValue(value)}`;
  });
}

/**
 * The names of the rows of a usage breakdown by `idKey` (`token_id`, `team_id`) by id: their groups' label
 * (`nameKey`: `key.token`, `key.team`), with the short id where names repeat, the short id where there is none.
 */
function namesOf(
  groups: readonly { key: Record<string, string | null> }[],
  idKey: string,
  nameKey: string,
  short: (id: string) => string,
): Map<string, string> {
  const rows = groups.flatMap(({ key }) => {
    const id = key[idKey];
    return id === null || id === undefined ? [] : [{ id, name: key[nameKey] ?? null }];
  });
  const names = identityRowNames(rows, short);
  return new Map(rows.map((row, i) => [row.id, names[i]]));
}

/** The names of the token rows by id (their groups' `key.token`; with the short id where names repeat). */
export function tokenNamesOf(groups: readonly { key: Record<string, string | null> }[]): Map<string, string> {
  return namesOf(groups, "token_id", "token", shortTokenId);
}

/**
 * The names of the team rows by id (their groups' `key.team`, the name the team's records carry, so a team
 * deleted or removed from the config file since is still named; with the short id where names repeat, and
 * where the records name none).
 */
export function teamNamesOf(groups: readonly { key: Record<string, string | null> }[]): Map<string, string> {
  return namesOf(groups, "team_id", "team", shortTeamId);
}
