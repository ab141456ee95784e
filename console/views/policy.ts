/// <reference lib="dom" />
/**
 * Policy outcomes over a time range: denials and modifications over time, by rule and by token, and the most
 * recent denied requests with the rule, guardrail outcomes and error code that explain them.
 *
 * @module
 */
import { get, getUsage } from "../api.ts";
import { chartFigure, COLORS } from "../charts.ts";
import { h, link, replace, table, timeCell } from "../dom.ts";
import { axisNumber, formatCount, formatTime, tokenNamesOf } from "../format.ts";
import { routeHash } from "../query.ts";
import { rangeOf, rangeWindow, toSeries } from "../range.ts";
import type { ApiList, UsageRecord, UsageReport } from "../types.ts";
import { heading, loading, rangeSelect, showError, type View } from "./common.ts";
import { guardrailsCell } from "./requests.ts";

export const policyView: View = async (root, _rest, params) => {
  const range = rangeOf(params.range);
  const body = h("div", {}, loading());
  replace(
    root,
    heading("Policy", rangeSelect(range, (next) => location.hash = routeHash("policy", { range: next }))),
    body,
  );
  const window = rangeWindow(range, Date.now());
  const base = { from: window.from, to: window.to };
  let denials: UsageReport,
    modifications: UsageReport,
    modifiedByRule: UsageReport,
    deniedByToken: UsageReport;
  let recent: ApiList<UsageRecord>;
  try {
    [denials, modifications, modifiedByRule, deniedByToken, recent] = await Promise.all([
      getUsage({ ...base, outcome: "deny", group_by: window.bucket }),
      getUsage({ ...base, outcome: "modify", group_by: window.bucket }),
      getUsage({ ...base, outcome: "modify", group_by: "rule" }),
      getUsage({ ...base, outcome: "deny", group_by: "token_id" }),
      get<ApiList<UsageRecord>>("/admin/requests", { ...base, outcome: "deny", limit: 25 }),
    ]);
  } catch (err) {
    replace(body);
    showError(body, err);
    return;
  }
  const denied = toSeries(denials.groups, window);
  const modified = toSeries(modifications.groups, window);
  const points = denied.x.filter((_, i) => denied.requests[i] > 0 || modified.requests[i] > 0).length;
  const chart = chartFigure(
    "Denials over time",
    denied.x,
    [
      { label: "Denied", values: denied.requests, color: COLORS[1] },
      { label: "Modified", values: modified.requests, color: COLORS[3] },
    ],
    points,
    axisNumber,
  );

  // The log of a row's requests over the same window the row counts, not over every record kept.
  const requestsFor = (values: Record<string, string>) =>
    link(routeHash("requests", { ...values, ...base }), "Requests");
  const byRule = Object.entries(denials.totals.denials).sort((a, b) => b[1] - a[1]).map(([rule, count]) => [
    rule,
    formatCount(count),
    requestsFor({ outcome: "deny", rule }),
  ]);
  const modifiedRows = [...modifiedByRule.groups].sort((a, b) => b.requests - a.requests).map((g) => [
    g.key.rule ?? "(none)",
    formatCount(g.requests),
    g.key.rule ? requestsFor({ outcome: "modify", rule: g.key.rule }) : "",
  ]);
  // By token id, not name: a token revoked and its name issued again are two rows (names told apart by id).
  const names = tokenNamesOf(deniedByToken.groups);
  const byToken = [...deniedByToken.groups].sort((a, b) => b.requests - a.requests).map((g) => [
    g.key.token_id === null || g.key.token_id === undefined
      ? h("span", { class: "muted" }, "(unauthenticated)")
      : link(routeHash("overview", { range, token_id: g.key.token_id }), names.get(g.key.token_id)!),
    formatCount(g.requests),
    Object.entries(g.denials).sort((a, b) => b[1] - a[1]).map(([rule, n]) => `${rule} (${n})`).join(", "),
  ]);
  const recentRows = recent.data.map((r) => [
    timeCell(r.time, formatTime(r.time)),
    r.token ?? "(unauthenticated)",
    r.alias ?? "",
    r.rule ?? "",
    guardrailsCell(r.guardrails),
    String(r.status),
    r.error_code ?? "",
  ]);
  replace(
    body,
    h("div", { class: "charts single" }, chart),
    h(
      "div",
      { class: "breakdowns" },
      table("Denials by rule", ["Rule", "Denied", "Log"], byRule, "No denials."),
      table("Modifications by rule", ["Rule", "Modified", "Log"], modifiedRows, "No modifications."),
      table("Denials by token", ["Token", "Denied", "Rules"], byToken, "No denials."),
    ),
    table(
      "Recent denied requests",
      ["Time", "Token", "Alias", "Rule", "Guardrails", "Status", "Error"],
      recentRows,
      "No denials.",
    ),
  );
};
