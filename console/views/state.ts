/// <reference lib="dom" />
/**
 * Live state: every alias's targets with their health, the loaded config's source and the last reload's
 * result, the state of the token store, the counters, the usage database and the response cache, and the live
 * config (the API has already redacted its secrets).
 *
 * @module
 */
import { get, request } from "../api.ts";
import { type Child, definitions, h, replace, table } from "../dom.ts";
import { formatCount, formatMs, formatStoreState, formatTime, NONE } from "../format.ts";
import type { AliasTargets, ApiList, Readiness } from "../types.ts";
import { heading, loading, showError, type View } from "./common.ts";

/** `ejected_until` as the API gives it (ISO text or epoch ms) → shown time. */
export function untilText(value: string | number | null): string {
  if (value === null) return NONE;
  return formatTime(typeof value === "number" ? new Date(value).toISOString() : value);
}

export const stateView: View = async (root) => {
  const refresh = h("button", {
    type: "button",
    class: "secondary",
    onclick: () => void stateView(root, "", {}),
  }, "Refresh");
  const body = h("div", {}, loading());
  replace(root, heading("Live state", refresh), body);
  let targets: ApiList<AliasTargets>;
  let config: Record<string, unknown>;
  let ready: Readiness;
  try {
    [targets, config, ready] = await Promise.all([
      get<ApiList<AliasTargets>>("/admin/targets"),
      get<Record<string, unknown>>("/admin/config"),
      request<Readiness>("GET", "/readyz"),
    ]);
  } catch (err) {
    replace(body);
    showError(body, err);
    return;
  }
  const rows = targets.data.flatMap((alias) =>
    alias.targets.map((t) => [
      alias.alias,
      t.provider,
      t.model,
      h("span", { class: `state state-${t.state}` }, t.state),
      formatCount(t.in_flight),
      formatMs(t.latency_ewma_ms),
      formatCount(t.consecutive_failures ?? t.failures ?? 0),
      t.state === "ejected" || t.ejected_until !== null ? untilText(t.ejected_until) : "",
    ])
  );
  const reload = ready.reload;
  const reloadInfo = reload === null ? "not reloaded since start" : [
    h("strong", {}, reload.ok ? "ok" : "failed"),
    ` at ${formatTime(reload.at)} (${reload.trigger})`,
    reload.issues.length === 0
      ? null
      : h("ul", { class: "issues" }, reload.issues.map((issue) => h("li", {}, issue))),
  ];
  const tokens = ready.tokens;
  const entries: [string, Child | Child[]][] = [
    ["Source", String(config.source ?? ready.config)],
    ["Status", ready.status],
    ["Aliases", formatCount(ready.models)],
    ["Last reload", reloadInfo],
  ];
  if (tokens !== undefined) {
    entries.push([
      "Token store",
      `${tokens.store}: ${tokens.ok ? "ok" : `unreachable${tokens.error ? ` (${tokens.error})` : ""}`}` +
      (tokens.count === undefined ? "" : `, ${formatCount(tokens.count)} loaded`) +
      (tokens.loaded_at ? ` at ${formatTime(tokens.loaded_at)}` : ""),
    ]);
  }
  // The shared stores as this replica last saw them (facts, not readiness: `/readyz` stays 200 meanwhile).
  entries.push(
    ["Counters", formatStoreState(ready.counters)],
    ["Usage database", formatStoreState(ready.usage)],
    ["Response cache", formatStoreState(ready.cache)],
  );
  replace(
    body,
    table(
      "Targets",
      ["Alias", "Provider", "Model", "State", "In flight", "Latency", "Failures", "Ejected until"],
      rows,
      "No targets.",
    ),
    h(
      "section",
      { "aria-labelledby": "config-heading" },
      h("h2", { id: "config-heading" }, "Configuration"),
      definitions(entries, "Configuration", true),
      h(
        "details",
        {},
        h("summary", {}, "Live config (secrets redacted)"),
        h("pre", { class: "config" }, JSON.stringify(config, null, 2)),
      ),
    ),
  );
};
