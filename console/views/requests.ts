/// <reference lib="dom" />
/**
 * The request log: usage records, newest first, filtered by token, alias, outcome, status, trace and
 * guardrail, a page at a time. Usage records never hold prompt text, so neither does this page. Each record's
 * trace id (when telemetry was on) is shown short, whole in its tooltip, with a button that copies it for a
 * tracing UI; the trace filter goes the other way, from a trace to its request. Each record's guardrail
 * outcomes (the guardrail, phase, action and kinds of content found; never the content) are listed in its row.
 *
 * @module
 */
import { get } from "../api.ts";
import { type Child, field, h, replace, select, table, timeCell } from "../dom.ts";
import {
  formatCost,
  formatCount,
  formatGuardrailOutcome,
  formatMs,
  formatTime,
  shortTraceId,
} from "../format.ts";
import { routeHash } from "../query.ts";
import type { ApiList, GuardrailOutcome, UsageRecord } from "../types.ts";
import { heading, loading, showError, type View } from "./common.ts";

const PAGE = 50;
/**
 * Filters that come from the address only (a drill-down from another view), kept across "Apply": a token's
 * page passes its `token_id` (one token, not every token that had its name), the policy view its window.
 */
const PASSED_ON = ["token_id", "environment", "provider", "upstream_model", "rule", "from", "to"] as const;

/**
 * A trace id's cell: the short id (whole in its tooltip) and a "Copy" button for the whole id. Without
 * clipboard access (plain http on another host) the cell shows the whole id, selected, for Ctrl+C.
 */
function traceCell(traceId: string | null | undefined): Child {
  if (traceId === null || traceId === undefined || traceId === "") return "";
  const code = h("code", { title: traceId }, shortTraceId(traceId));
  const copy = h("button", {
    type: "button",
    class: "secondary copy",
    title: "Copy the whole trace ID",
    "aria-label": `Copy trace ID ${traceId}`,
  }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(traceId);
      copy.textContent = "Copied";
    } catch {
      code.textContent = traceId;
      getSelection()?.selectAllChildren(code);
    }
  });
  return h("span", { class: "nowrap" }, code, " ", copy);
}

/** A record's guardrail outcomes: one line each ("pii: input mask (email)"); empty when none acted. */
export function guardrailsCell(outcomes: readonly GuardrailOutcome[] | null | undefined): Child {
  if (!outcomes || outcomes.length === 0) return "";
  return h(
    "div",
    { class: "guardrails" },
    outcomes.map((o) => h("div", { class: "nowrap", "data-action": o.action }, formatGuardrailOutcome(o))),
  );
}

export const requestsView: View = async (root, _rest, params) => {
  const token = h("input", { type: "text", name: "token", value: params.token ?? "", autocomplete: "off" });
  const alias = h("input", { type: "text", name: "alias", value: params.alias ?? "", autocomplete: "off" });
  const outcome = select(
    [["", "any"], ["allow", "allow"], ["deny", "deny"], ["modify", "modify"]],
    params.outcome ?? "",
    { name: "outcome" },
  );
  const status = h("input", {
    type: "text",
    name: "status",
    value: params.status ?? "",
    placeholder: "429 or 4xx",
    size: 8,
    autocomplete: "off",
  });
  const trace = h("input", {
    type: "text",
    name: "trace_id",
    value: params.trace_id ?? "",
    placeholder: "32 hex digits",
    size: 34,
    autocomplete: "off",
    spellcheck: "false",
  });
  const guardrail = h("input", {
    type: "text",
    name: "guardrail",
    value: params.guardrail ?? "",
    placeholder: "name",
    size: 12,
    autocomplete: "off",
    spellcheck: "false",
  });
  const kept: Record<string, string> = {};
  for (const name of PASSED_ON) if (params[name]) kept[name] = params[name];
  const form = h(
    "form",
    { class: "filter-form", "aria-label": "Filters" },
    field("Token", token),
    field("Alias", alias),
    field("Outcome", outcome),
    field("Status", status),
    field("Trace ID", trace),
    field("Guardrail", guardrail),
    h("button", { type: "submit" }, "Apply"),
    Object.keys(kept).length === 0 ? null : h(
      "p",
      { class: "note" },
      `Also filtered by ${Object.entries(kept).map(([k, v]) => `${k}: ${v}`).join(", ")}.`,
    ),
  );
  const filters = () => ({
    ...kept,
    token: token.value.trim(),
    alias: alias.value.trim(),
    outcome: outcome.value,
    status: status.value.trim(),
    // Tracing UIs may show ids in upper case; the gateway stores them as OpenTelemetry writes them.
    trace_id: trace.value.trim().toLowerCase(),
    guardrail: guardrail.value.trim(),
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = routeHash("requests", filters());
    // Re-applying the same filters refreshes the page.
    if (location.hash === next) void requestsView(root, _rest, params);
    else location.hash = next;
  });
  const body = h("div", {}, loading());
  replace(root, heading("Requests"), form, body);

  let page: ApiList<UsageRecord>;
  try {
    page = await get<ApiList<UsageRecord>>("/admin/requests", {
      ...kept,
      token: params.token,
      alias: params.alias,
      outcome: params.outcome,
      status: params.status,
      trace_id: params.trace_id,
      guardrail: params.guardrail,
      before: params.before,
      limit: PAGE,
    });
  } catch (err) {
    replace(body);
    showError(body, err);
    return;
  }
  const rows = page.data.map((r) => [
    timeCell(r.time, formatTime(r.time)),
    h("code", {}, r.request_id),
    r.token ?? "",
    r.environment ?? "",
    r.alias ?? "",
    r.provider ?? "",
    r.upstream_model ?? "",
    String(r.status),
    r.outcome,
    r.rule ?? "",
    guardrailsCell(r.guardrails),
    formatCount(r.prompt_tokens + r.completion_tokens),
    formatCost(r.cost),
    r.cache ?? "",
    formatMs(r.latency_ms),
    traceCell(r.trace_id),
  ]);
  const columns = [
    "Time",
    "Request ID",
    "Token",
    "Environment",
    "Alias",
    "Provider",
    "Model",
    "Status",
    "Outcome",
    "Rule",
    "Guardrails",
    "Tokens",
    "Cost",
    "Cache",
    "Latency",
    "Trace",
  ];
  const pager = h("div", { class: "pager" });
  if (params.before) {
    pager.appendChild(
      h("a", { href: routeHash("requests", { ...params, before: "" }), class: "button secondary" }, "Newest"),
    );
  }
  if (page.has_more && page.next_cursor) {
    const cursor = page.next_cursor;
    pager.appendChild(
      h("button", {
        type: "button",
        onclick: () => location.hash = routeHash("requests", { ...params, before: cursor }),
      }, "Next page"),
    );
  }
  replace(body, table("Request log", columns, rows, "No requests match."), pager);
};
