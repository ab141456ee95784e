/// <reference lib="dom" />
/**
 * The audit trail: who created, changed, rotated, revoked or deleted which token or team, when, newest first.
 * Entries never hold a secret or a hash (the API leaves them out), so the changes are shown as they come. A
 * team's entry (its id `tm_…`, docs/admin_api.md) leads to the team, a token's to the token's page.
 *
 * @module
 */
import { get } from "../api.ts";
import { field, h, link, replace, select, table, timeCell } from "../dom.ts";
import { changeLines, formatTime, NONE } from "../format.ts";
import { routeHash } from "../query.ts";
import type { ApiList, AuditEntry } from "../types.ts";
import { AUDIT_ACTIONS } from "../../lib/tokens/types.ts";
import { heading, loading, showError, type View } from "./common.ts";

const PAGE = 100;

/** A team's id starts so; every other entry is a token's. */
const TEAM_ID_PREFIX = "tm_";

/** Whom an entry is about, linked: a team to its place on the Teams view, a token to its page. */
function subjectCell(entry: AuditEntry) {
  return entry.token_id.startsWith(TEAM_ID_PREFIX)
    ? h(
      "span",
      {},
      link(routeHash("teams", {}, entry.token_name), entry.token_name),
      " ",
      h("span", { class: "note" }, "(team)"),
    )
    : link(routeHash("tokens", {}, entry.token_id), entry.token_name);
}

export const auditView: View = async (root, _rest, params) => {
  const token = h("input", { type: "text", name: "token", value: params.token ?? "", autocomplete: "off" });
  const action = select(
    [["", "any"], ...AUDIT_ACTIONS.map((a): [string, string] => [a, a])],
    params.action ?? "",
    { name: "action" },
  );
  const form = h(
    "form",
    { class: "filter-form", "aria-label": "Filters" },
    field("Token or team", token),
    field("Action", action),
    h("button", { type: "submit" }, "Apply"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = routeHash("audit", { token: token.value.trim(), action: action.value });
  });
  const body = h("div", {}, loading());
  replace(root, heading("Audit"), form, body);
  let page: ApiList<AuditEntry>;
  try {
    page = await get<ApiList<AuditEntry>>("/admin/audit", {
      token: params.token,
      action: params.action,
      after: params.after,
      limit: PAGE,
    });
  } catch (err) {
    replace(body);
    showError(body, err);
    return;
  }
  const rows = page.data.map((entry) => [
    timeCell(entry.time, formatTime(entry.time)),
    entry.actor,
    entry.action,
    subjectCell(entry),
    Object.keys(entry.changes).length === 0
      ? NONE
      : h("ul", { class: "changes" }, changeLines(entry.changes).map((line) => h("li", {}, line))),
  ]);
  const pager = h("div", { class: "pager" });
  if (params.after) {
    pager.appendChild(
      h("a", { href: routeHash("audit", { ...params, after: "" }), class: "button secondary" }, "Newest"),
    );
  }
  const last = page.data.at(-1);
  if (page.has_more && last !== undefined) {
    pager.appendChild(h("button", {
      type: "button",
      onclick: () => location.hash = routeHash("audit", { ...params, after: last.id }),
    }, "Next page"));
  }
  replace(
    body,
    table(
      "Audit trail",
      ["Time", "Actor", "Action", "Token or team", "Changes"],
      rows,
      "No changes recorded.",
    ),
    pager,
  );
};
