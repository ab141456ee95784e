/// <reference lib="dom" />
/**
 * Tokens: every client token (config file and issued here), filtered by status, and the dialog that issues a
 * new one and shows its secret once.
 *
 * @module
 */
import { getAll, request } from "../api.ts";
import { alertBox, field, h, link, openDialog, replace, select, table } from "../dom.ts";
import { formatBudget, formatLimits, formatTime, NONE } from "../format.ts";
import { routeHash } from "../query.ts";
import { createBody, formValuesOf } from "../token_body.ts";
import type { Token } from "../types.ts";
import { heading, loading, messageOf, showError, type View } from "./common.ts";
import { secretPanel, tokenFormFields } from "./token_form.ts";

const STATUSES: [string, string][] = [
  ["", "any but revoked"],
  ["active", "active"],
  ["disabled", "disabled"],
  ["expired", "expired"],
  ["revoked", "revoked"],
];

const BLANK: Token = {
  id: "",
  name: "",
  environment: "",
  description: null,
  source: "api",
  status: "active",
  models: [],
  endpoints: null,
  limits: null,
  budget: null,
  max_tokens: null,
  cache: null,
  expires_at: null,
  disabled: false,
  created_at: null,
  updated_at: null,
  created_by: null,
  rotated_at: null,
  revoked_at: null,
};

/** Opens the "New token" dialog; `created` runs once it has been closed after a token was issued. */
function newTokenDialog(created: () => void): void {
  const form = tokenFormFields(formValuesOf(BLANK), false);
  const errors = h("div", {});
  const submit = h("button", { type: "submit" }, "Create token");
  const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
  const el = h(
    "form",
    { class: "token-form", novalidate: true },
    form.fields,
    errors,
    h("div", { class: "actions" }, submit, cancel),
  );
  let issued = false;
  const dialog = openDialog("New token", [el], () => {
    if (issued) created();
  });
  cancel.addEventListener("click", () => dialog.close());
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    replace(errors);
    submit.disabled = true;
    try {
      const token = await request<Token>("POST", "/admin/tokens", createBody(form.values()));
      issued = true;
      replace(
        el,
        h("p", {}, `Token ${token.name} was created (${token.status}).`),
        secretPanel(
          token.token ?? "",
          "Copy the secret now: it is shown this once and cannot be read again.",
          () => dialog.close(),
        ),
      );
      el.querySelector<HTMLInputElement>("input.secret")?.focus();
    } catch (err) {
      replace(errors, alertBox(messageOf(err)));
      submit.disabled = false;
    }
  });
}

export const tokensView: View = async (root, _rest, params) => {
  const status = select(STATUSES, params.status ?? "", { name: "status" });
  status.addEventListener(
    "change",
    () => location.hash = routeHash("tokens", { ...params, status: status.value }),
  );
  const search = h("input", { type: "search", name: "q", value: params.q ?? "", autocomplete: "off" });
  search.addEventListener(
    "change",
    () => location.hash = routeHash("tokens", { ...params, q: search.value.trim() }),
  );
  const newToken = h("button", { type: "button" }, "New token");
  newToken.addEventListener("click", () => newTokenDialog(() => void tokensView(root, _rest, params)));
  const body = h("div", {}, loading());
  replace(
    root,
    heading("Tokens", newToken),
    h("div", { class: "filter-form" }, field("Status", status), field("Name contains", search)),
    body,
  );
  let tokens: Token[];
  try {
    tokens = await getAll<Token>("/admin/tokens", { status: params.status, q: params.q });
  } catch (err) {
    replace(body);
    showError(body, err);
    return;
  }
  const rows = tokens.map((t) => [
    link(routeHash("tokens", {}, t.id), t.name),
    t.environment,
    t.source,
    h(
      "span",
      { class: `status status-${t.status}` },
      t.shadowed_by_config ? `${t.status} (shadowed by config)` : t.status,
    ),
    t.models.join(", "),
    formatLimits(t.limits),
    formatBudget(t.budget),
    t.expires_at === null ? NONE : formatTime(t.expires_at),
  ]);
  replace(
    body,
    table(
      "Tokens",
      ["Name", "Environment", "Source", "Status", "Models", "Limits", "Budget", "Expires"],
      rows,
      "No tokens match.",
    ),
  );
};
