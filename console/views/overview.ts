/// <reference lib="dom" />
/**
 * Overview: requests, tokens, cost, error rate and latency over a time range, as charts and totals, and
 * breakdowns by token, team, environment, alias, provider and upstream model, each with the response cache's
 * hit rate and the money its hits saved (an operator judges a cache per alias, and its benefit per token).
 * Following a row's value filters the whole view by it (drill-down); filters stack and show as chips. Usage
 * is broken down by token by the token's id (`token_id`), never by its name: a name can pass from a revoked
 * token to a new one, and each is its own row, with its own page. Teams likewise by `team_id` (a deleted
 * team's name can pass to a new team), each row named by the name its records carry.
 *
 * @module
 */
import { get, getAll, getUsage } from "../api.ts";
import { chartFigure, COLORS } from "../charts.ts";
import { type Child, definitions, h, link, replace, table } from "../dom.ts";
import {
  axisMs,
  axisNumber,
  formatCost,
  formatCount,
  formatHitRate,
  formatMs,
  formatPercent,
  teamNamesOf,
  tokenNamesOf,
} from "../format.ts";
import { routeHash } from "../query.ts";
import { rangeOf, rangeWindow, toSeries } from "../range.ts";
import type { Token, Totals, UsageReport } from "../types.ts";
import {
  costCell,
  costSummary,
  cutNote,
  heading,
  loading,
  rangeSelect,
  showError,
  type View,
} from "./common.ts";

/** The dimensions an overview can be filtered and broken down by: query name and table caption. */
export const BREAKDOWNS: readonly [string, string][] = [
  ["token_id", "By token"],
  ["team_id", "By team"],
  ["environment", "By environment"],
  ["alias", "By alias"],
  ["provider", "By provider"],
  ["upstream_model", "By upstream model"],
];

/**
 * Filters that narrow the view without a breakdown of their own: `token`, a name (every token that had it). No
 * console link makes it any more (they filter by `token_id`), but an operator's bookmark or typed address still
 * works.
 */
const FILTER_ONLY = ["token"] as const;

const ROWS_SHOWN = 50;

function errorRate(totals: Totals): number {
  return totals.requests === 0 ? Number.NaN : totals.errors / totals.requests;
}

function denied(totals: Totals): number {
  return Object.values(totals.denials).reduce((sum, n) => sum + n, 0);
}

/** The summary numbers. */
export function summary(totals: Totals): HTMLElement {
  return definitions([
    ["Requests", formatCount(totals.requests)],
    ["Tokens", formatCount(totals.total_tokens)],
    ["Cost", costSummary(totals)],
    ["Cache hit rate", formatHitRate(totals)],
    ["Saved by cache", formatCost(totals.saved_cost)],
    ["Error rate", formatPercent(errorRate(totals))],
    ["Denied", formatCount(denied(totals))],
    ["p50 latency", formatMs(totals.latency_ms.p50)],
    ["p99 latency", formatMs(totals.latency_ms.p99)],
  ], "Summary");
}

/** A token row's first cell: its drill-down link, and "(revoked)" after it for a revoked token. */
/**
 * Which of the token ids shown are revoked, to mark their rows: the revoked tokens listed (bounded), and when
 * there are more of them than that, each shown id not among them asked for alone (at most a table's rows). The
 * overview still works if the token API is unavailable (nothing is marked).
 */
async function revokedAmong(ids: readonly (string | null | undefined)[]): Promise<Set<string>> {
  const shown = ids.filter((id): id is string => typeof id === "string");
  try {
    const listed = await getAll<Token>("/admin/tokens", { status: "revoked" });
    const revoked = new Set(listed.data.map((t) => t.id));
    if (!listed.has_more) return revoked;
    const rest = shown.filter((id) => !revoked.has(id));
    const found = await Promise.all(
      rest.map((id) => get<Token>(`/admin/tokens/${encodeURIComponent(id)}`).catch(() => null)),
    );
    for (const token of found) if (token?.status === "revoked") revoked.add(token.id);
    return revoked;
  } catch {
    return new Set();
  }
}

function tokenCell(name: HTMLElement, isRevoked: boolean): Child {
  return isRevoked ? h("span", {}, name, " ", h("span", { class: "muted" }, "(revoked)")) : name;
}

export const overviewView: View = async (root, _rest, params) => {
  const range = rangeOf(params.range);
  const filters: Record<string, string> = {};
  for (const key of [...BREAKDOWNS.map(([key]) => key), ...FILTER_ONLY]) {
    if (params[key]) filters[key] = params[key];
  }
  const go = (values: Record<string, string>) => location.hash = routeHash("overview", { range, ...values });

  const chips = Object.entries(filters).map(([key, value]) => {
    const { [key]: _dropped, ...others } = filters;
    return h(
      "li",
      { class: "chip" },
      h("span", {}, `${key}: ${value}`),
      h("button", {
        type: "button",
        class: "chip-remove",
        "aria-label": `Remove filter ${key}: ${value}`,
        onclick: () => go(others),
      }, "×"),
    );
  });
  const filterBar = chips.length === 0 ? null : h(
    "div",
    { class: "filters", role: "group", "aria-label": "Filters" },
    h("ul", {}, chips),
    h("button", { type: "button", class: "secondary", onclick: () => go({}) }, "Clear filters"),
  );
  const body = h("div", {}, loading());
  replace(
    root,
    heading(
      "Overview",
      rangeSelect(range, (next) => location.hash = routeHash("overview", { ...filters, range: next })),
    ),
    filterBar,
    body,
  );

  const window = rangeWindow(range, Date.now());
  const base = { from: window.from, to: window.to, ...filters };
  let timeline: UsageReport;
  let breakdowns: UsageReport[];
  try {
    [timeline, ...breakdowns] = await Promise.all([
      getUsage({ ...base, group_by: window.bucket }),
      ...BREAKDOWNS.map(([key]) => getUsage({ ...base, group_by: key })),
    ]);
  } catch (err) {
    replace(body);
    showError(body, err);
    return;
  }
  const byRequests = breakdowns.map((report) => [...report.groups].sort((a, b) => b.requests - a.requests));
  const tokenRows = byRequests[BREAKDOWNS.findIndex(([key]) => key === "token_id")] ?? [];
  const revokedIds = await revokedAmong(tokenRows.slice(0, ROWS_SHOWN).map((g) => g.key.token_id));

  const series = toSeries(timeline.groups, window);
  const count = axisNumber;
  const charts = h(
    "div",
    { class: "charts" },
    chartFigure(
      "Requests",
      series.x,
      [{ label: "Requests", values: series.requests, color: COLORS[0] }],
      series.points,
      count,
    ),
    chartFigure(
      "Tokens",
      series.x,
      [{ label: "Tokens", values: series.tokens, color: COLORS[2] }],
      series.points,
      count,
    ),
    chartFigure(
      "Cost",
      series.x,
      [{ label: "Cost", values: series.cost, color: COLORS[3] }],
      series.points,
      axisNumber,
      // Costs are small amounts: a bucket's is often well below 1, which a 0–1 axis would draw as a flat 0.
      { floor: 0 },
    ),
    chartFigure(
      "Error rate",
      series.x,
      [{ label: "Error rate (%)", values: series.errorRate, color: COLORS[1], spanGaps: true }],
      series.points,
      (v) => `${axisNumber(v)}%`,
    ),
    chartFigure(
      "Latency",
      series.x,
      [
        { label: "p50", values: series.p50, color: COLORS[0], spanGaps: true },
        { label: "p99", values: series.p99, color: COLORS[4], spanGaps: true },
      ],
      series.points,
      axisMs,
    ),
  );

  const tables = BREAKDOWNS.map(([key, caption], i) => {
    const groups = byRequests[i];
    const shown = groups.slice(0, ROWS_SHOWN);
    const columns = [
      "Value",
      "Requests",
      "Tokens",
      "Cost",
      "Hit rate",
      "Saved",
      "Errors",
      "Denied",
      "p50",
      "p99",
    ];
    const isToken = key === "token_id";
    // The link to a token's page comes second, beside its name: a half-width table at a laptop's width scrolls,
    // and as its last column the link was out of sight.
    if (isToken) columns.splice(1, 0, "Details");
    // Tokens and teams by id, each row named (not the bare id an operator would have to look up).
    const names = isToken ? tokenNamesOf(groups) : key === "team_id" ? teamNamesOf(groups) : null;
    const rows = shown.map((group) => {
      const value = group.key[key];
      let first: Child = h("span", { class: "muted" }, "(none)");
      if (value !== null && value !== undefined) {
        const drill = routeHash("overview", { range, ...filters, [key]: value });
        const named = names === null
          ? link(drill, value)
          : link(drill, names.get(value) ?? value, { title: value });
        first = isToken ? tokenCell(named, revokedIds.has(value)) : named;
      }
      const cells: Child[] = [
        first,
        ...(isToken
          ? [value === null || value === undefined ? "" : link(routeHash("tokens", {}, value), "Details")]
          : []),
        formatCount(group.requests),
        formatCount(group.total_tokens),
        costCell(group),
        formatHitRate(group),
        formatCost(group.saved_cost),
        formatCount(group.errors),
        formatCount(denied(group)),
        formatMs(group.latency_ms.p50),
        formatMs(group.latency_ms.p99),
      ];
      return cells;
    });
    return h(
      "section",
      { class: "breakdown" },
      table(caption, columns, rows, "No requests."),
      cutNote(shown.length, groups.length),
    );
  });

  replace(
    body,
    timeline.totals.requests === 0
      ? h("p", { class: "empty-state" }, "No requests in this time range.")
      : null,
    summary(timeline.totals),
    charts,
    h("div", { class: "breakdowns" }, tables),
  );
};
