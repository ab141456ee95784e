/// <reference lib="dom" />
/**
 * Tokens: every client token (config file and issued here), filtered by status and name, a page of at most
 * {@linkcode TOKENS_SHOWN} at a time (a notice says when more match, and leads on), and the dialog that issues
 * a new one and shows its secret once.
 *
 * @module
 */
import { type Bounded, getAll, request, TOKENS_SHOWN } from "../api.ts";
import { alertBox, type Child, field, h, link, openDialog, replace, select, table } from "../dom.ts";
import { formatBudget, formatCount, formatLimits, formatTime, NONE } from "../format.ts";
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

/** The page size asked for in the hash (`limit`, 1 to {@linkcode TOKENS_SHOWN}), else the most. */
function pageSizeOf(text: string | undefined): number {
  const n = Number(text);
  return Number.isInteger(n) && n >= 1 && n <= TOKENS_SHOWN ? n : TOKENS_SHOWN;
}

/**
 * What the list holds when it is not every token that matches: the first page says more follow and how to
 * narrow them or go on; a later page (`after`, a token id: the list goes on by name after it) says so and leads
 * back to the first.
 */
function pageNotice(
  params: Readonly<Record<string, string>>,
  tokens: Bounded<Token>,
  size: number,
): HTMLElement | null {
  const later = params.after !== undefined && params.after !== "";
  if (!later && !tokens.has_more) return null;
  const count = formatCount(tokens.data.length);
  const parts: Child[] = [
    later
      ? `Showing ${count} more tokens, by name, after those of the pages before.`
      : `Showing the first ${count} tokens that match, by name; more match. ` +
        "Narrow the list with Status or Name contains, or go on to the next page.",
  ];
  const last = tokens.data[tokens.data.length - 1];
  if (tokens.has_more && last !== undefined) {
    parts.push(
      " ",
      link(routeHash("tokens", { ...params, after: last.id }), `Next ${formatCount(size)} tokens`),
    );
  }
  if (later) parts.push(" ", link(routeHash("tokens", { ...params, after: "" }), "First page"));
  return h("p", { class: "note", role: "status" }, ...parts);
}

export const tokensView: View = async (root, _rest, params) => {
  // A new filter starts the list again from its first page.
  const status = select(STATUSES, params.status ?? "", { name: "status" });
  status.addEventListener(
    "change",
    () => location.hash = routeHash("tokens", { ...params, status: status.value, after: "" }),
  );
  const search = h("input", { type: "search", name: "q", value: params.q ?? "", autocomplete: "off" });
  search.addEventListener(
    "change",
    () => location.hash = routeHash("tokens", { ...params, q: search.value.trim(), after: "" }),
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
  const size = pageSizeOf(params.limit);
  let tokens: Bounded<Token>;
  try {
    tokens = await getAll<Token>(
      "/admin/tokens",
      { status: params.status, q: params.q, after: params.after },
      size,
    );
  } catch (err) {
    replace(body);
    showError(body, err);
    return;
  }
  const rows = tokens.data.map((t) => [
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
    pageNotice(params, tokens, size),
    table(
      "Tokens",
      ["Name", "Environment", "Source", "Status", "Models", "Limits", "Budget", "Expires"],
      rows,
      "No tokens match.",
    ),
  );
};
