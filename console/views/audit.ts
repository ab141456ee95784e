/// <reference lib="dom" />
/**
 * The audit trail: who created, changed, rotated or revoked which token, when, newest first. Entries never
 * hold a secret or a hash (the API leaves them out), so the changes are shown as they come.
 *
 * @module
 */
import { get } from "../api.ts";
import { field, h, link, replace, select, table, timeCell } from "../dom.ts";
import { changeLines, formatTime, NONE } from "../format.ts";
import { routeHash } from "../query.ts";
import type { ApiList, AuditEntry } from "../types.ts";
import { heading, loading, showError, type View } from "./common.ts";

const PAGE = 100;

export const auditView: View = async (root, _rest, params) => {
  const token = h("input", { type: "text", name: "token", value: params.token ?? "", autocomplete: "off" });
  const action = select(
    [["", "any"], ["create", "create"], ["update", "update"], ["rotate", "rotate"], ["revoke", "revoke"]],
    params.action ?? "",
    { name: "action" },
  );
  const form = h(
    "form",
    { class: "filter-form", "aria-label": "Filters" },
    field("Token", token),
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
    link(routeHash("tokens", {}, entry.token_id), entry.token_name),
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
    table("Audit trail", ["Time", "Actor", "Action", "Token", "Changes"], rows, "No changes recorded."),
    pager,
  );
};
