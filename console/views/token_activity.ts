/// <reference lib="dom" />
/**
 * What a token did, by its id: its usage over the last 30 days and its recent requests, as its page shows them;
 * and the page of a token that no longer exists but whose usage does. Usage rows and the audit trail link to a
 * token's page by id, and a token of the config file removed from it since (`cfg_<name>`) is in no list the
 * token API answers; its records stay. An operator following such a link wants what the page would have shown
 * (what the token spent, its last requests) and why it cannot be managed, not a bare "not found"; a page for
 * every usage row also keeps the overview from having to list every live token to decide which rows get a link.
 *
 * @module
 */
import { ApiError, get } from "../api.ts";
import { definitions, h, link, replace, table, timeCell } from "../dom.ts";
import { formatCost, formatCount, formatHitRate, formatMs, formatTime } from "../format.ts";
import { routeHash } from "../query.ts";
import { rangeWindow } from "../range.ts";
import type { ApiList, UsageRecord, UsageReport } from "../types.ts";
import { costCell, costSummary, heading, loading, showError } from "./common.ts";

/** A token's usage and recent-requests sections, empty until {@linkcode fillActivity} fills them. */
export interface Activity {
  readonly usage: HTMLElement;
  readonly recent: HTMLElement;
}

/** The two sections, loading. */
export function activitySections(): Activity {
  return {
    usage: h(
      "section",
      { "aria-labelledby": "usage-heading" },
      h("h2", { id: "usage-heading" }, "Usage, last 30 days"),
      loading(),
    ),
    recent: h("section", {}, loading()),
  };
}

/** The token's usage report and recent records, each settled on its own (one failing leaves the other). */
function readActivity(id: string) {
  const window = rangeWindow("30d", Date.now());
  // By id, never by name: a revoked token's name is free for a new token, whose page must not show its usage.
  return Promise.allSettled([
    get<UsageReport>("/admin/usage", { from: window.from, to: window.to, token_id: id }),
    get<ApiList<UsageRecord>>("/admin/requests", { token_id: id, limit: 20 }),
  ]);
}

type Read = Awaited<ReturnType<typeof readActivity>>;

/** Fills `sections` with what was read. */
function show({ usage, recent }: Activity, [report, requests]: Read): void {
  usage.lastElementChild?.remove();
  if (report.status === "fulfilled") {
    const t = report.value.totals;
    usage.appendChild(definitions([
      ["Requests", formatCount(t.requests)],
      ["Tokens", formatCount(t.total_tokens)],
      ["Cost", costSummary(t)],
      ["Cache hit rate", formatHitRate(t)],
      ["Saved by cache", formatCost(t.saved_cost)],
      ["Errors", formatCount(t.errors)],
      ["Denied", formatCount(Object.values(t.denials).reduce((a, b) => a + b, 0))],
      ["p50 latency", formatMs(t.latency_ms.p50)],
    ], "Usage"));
  } else showError(usage, report.reason);
  replace(recent);
  if (requests.status === "fulfilled") {
    recent.appendChild(table(
      "Recent requests",
      ["Time", "Alias", "Model", "Status", "Outcome", "Rule", "Tokens", "Cost", "Latency"],
      requests.value.data.map((r) => [
        timeCell(r.time, formatTime(r.time)),
        r.alias ?? "",
        r.upstream_model ?? "",
        String(r.status),
        r.outcome,
        r.rule ?? "",
        formatCount(r.prompt_tokens + r.completion_tokens),
        costCell(r),
        formatMs(r.latency_ms),
      ]),
      "No requests yet.",
    ));
  } else showError(recent, requests.reason);
}

/** Reads the token's usage and recent requests into `sections`. */
export async function fillActivity(sections: Activity, id: string): Promise<void> {
  show(sections, await readActivity(id));
}

/** The links to the token's usage elsewhere, by id as the sections read it. */
export function activityLinks(id: string): HTMLElement[] {
  return [
    link(routeHash("overview", { range: "30d", token_id: id }), "Usage in the overview"),
    link(routeHash("requests", { token_id: id }), "Request log"),
  ];
}

/** A config token's id: `cfg_` and its name. */
const CONFIG_ID_PREFIX = "cfg_";

/**
 * The page of token `id`, which the token API does not know (`notFound`, its 404). With records, the token
 * existed and is gone: its name (as its records carry it), that it was removed, and its usage and requests;
 * without any, the API's "not found" as it was (a mistyped or foreign id).
 */
export async function goneTokenPage(root: HTMLElement, id: string, notFound: ApiError): Promise<void> {
  replace(root, loading());
  const read = await readActivity(id);
  const [, requests] = read;
  const records = requests.status === "fulfilled" ? requests.value.data : [];
  if (records.length === 0) {
    replace(root, heading("Token"), link("#/tokens", "All tokens"));
    showError(root, notFound);
    return;
  }
  const name = records.find((r) => r.token !== null)?.token ?? id;
  const why = id.startsWith(CONFIG_ID_PREFIX)
    ? "This token was defined in the config file and has been removed from it: no request can use it now."
    : "No token has this id now: it is neither in the config file nor in the token store.";
  const sections = activitySections();
  const [overview, log] = activityLinks(id);
  replace(
    root,
    h("p", { class: "crumbs" }, link("#/tokens", "Tokens"), " / ", name),
    heading(name),
    h("p", { class: "status-line" }, "Status: ", h("strong", { class: "status status-revoked" }, "removed")),
    h("p", { class: "note" }, why, " Its recorded usage is kept, below."),
    h("p", {}, overview, " · ", log),
    definitions([["ID", h("code", {}, id)]], "Token", true),
    sections.usage,
    sections.recent,
  );
  show(sections, read);
}

/** Whether `err` is the token API's answer for an id it does not know. */
export function isTokenNotFound(err: unknown): err is ApiError {
  return err instanceof ApiError && err.status === 404;
}
