/// <reference lib="dom" />
/**
 * One token's page: its settings, disable/enable, rotate (with a grace period, the new secret shown once),
 * revoke, an edit form, its usage over the last 30 days and its recent requests. Config tokens are read-only
 * (the API refuses changes to them), so they get no edit controls. A token the API no longer knows but whose
 * usage is recorded (a config token removed from the file) gets the page of `token_activity.ts`.
 *
 * @module
 */
import { get, request } from "../api.ts";
import { alertBox, type Child, definitions, field, h, link, openDialog, replace } from "../dom.ts";
import { formatBudget, formatCount, formatLimits, formatTime, formatTokenCache, NONE } from "../format.ts";
import { routeHash } from "../query.ts";
import { FormError, formValuesOf, patchBody } from "../token_body.ts";
import type { Token } from "../types.ts";
import { heading, loading, messageOf, showError, type View } from "./common.ts";
import {
  activityLinks,
  activitySections,
  fillActivity,
  goneTokenPage,
  isTokenNotFound,
} from "./token_activity.ts";
import { secretPanel, tokenFormFields } from "./token_form.ts";

function details(token: Token): HTMLElement {
  const entries: [string, Child][] = [
    [
      "Status",
      h(
        "span",
        { class: `status status-${token.status}` },
        token.shadowed_by_config
          ? `${token.status}, but not served: a token of the config file has this name`
          : token.status,
      ),
    ],
    ["ID", h("code", {}, token.id)],
    ["Environment", token.environment],
    ["Source", token.source],
    ["Models", token.models.join(", ")],
    ["Endpoints", token.endpoints?.join(", ") ?? "all"],
    ["Limits", formatLimits(token.limits)],
    ["Budget", formatBudget(token.budget)],
    ["Max tokens", formatCount(token.max_tokens)],
    ["Cache", formatTokenCache(token.cache)],
    ["Expires", token.expires_at === null ? "never" : formatTime(token.expires_at)],
    ["Description", token.description ?? NONE],
    [
      "Created",
      token.created_at === null ? NONE : `${formatTime(token.created_at)} by ${token.created_by ?? "?"}`,
    ],
  ];
  // Only when they happened: a page that says "revoked" means the token is.
  if (token.rotated_at !== null) entries.push(["Rotated", formatTime(token.rotated_at)]);
  if (token.revoked_at !== null) entries.push(["Revoked", formatTime(token.revoked_at)]);
  return definitions(entries, "Token", true);
}

/** Asks for a grace period, rotates, and shows the new secret. */
function rotateDialog(token: Token, rerender: () => void): void {
  const grace = h("input", { type: "text", name: "grace", value: "60s", size: 8, autocomplete: "off" });
  const errors = h("div", {});
  const confirm = h("button", { type: "submit" }, "Rotate secret");
  const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
  const form = h(
    "form",
    {},
    h("p", {}, "A new secret replaces the current one. The old secret keeps working for the grace period."),
    field("Grace period", grace, "A duration such as 0s, 60s, 5m or 1h."),
    errors,
    h("div", { class: "actions" }, confirm, cancel),
  );
  let rotated = false;
  const dialog = openDialog(`Rotate ${token.name}`, [form], () => rotated && rerender());
  cancel.addEventListener("click", () => dialog.close());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    confirm.disabled = true;
    replace(errors);
    try {
      const value = grace.value.trim();
      const answer = await request<Token>(
        "POST",
        `/admin/tokens/${encodeURIComponent(token.id)}/rotate`,
        value === "" ? {} : { grace: value },
      );
      rotated = true;
      // Without a grace period the API answers the rotation's own time: the old secret stopped then.
      const previous = answer.previous_expires_at ?? null;
      const inGrace = previous !== null && answer.rotated_at !== null &&
        Date.parse(previous) > Date.parse(answer.rotated_at);
      const until = inGrace
        ? `The old secret works until ${formatTime(previous)}.`
        : "The old secret no longer works.";
      replace(
        form,
        secretPanel(
          answer.token ?? "",
          `Copy the new secret now: it is shown this once. ${until}`,
          () => dialog.close(),
        ),
      );
      form.querySelector<HTMLInputElement>("input.secret")?.focus();
    } catch (err) {
      replace(errors, alertBox(messageOf(err)));
      confirm.disabled = false;
    }
  });
}

/** Asks to confirm, then revokes. */
function revokeDialog(token: Token, rerender: () => void): void {
  const errors = h("div", {});
  const confirm = h("button", { type: "button", class: "danger" }, "Revoke token");
  const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
  const dialog = openDialog(`Revoke ${token.name}?`, [
    h(
      "p",
      {},
      "Every replica refuses the token from now on. This cannot be undone; the name becomes free again.",
    ),
    errors,
    h("div", { class: "actions" }, confirm, cancel),
  ]);
  cancel.addEventListener("click", () => dialog.close());
  confirm.addEventListener("click", async () => {
    confirm.disabled = true;
    try {
      await request<Token>("DELETE", `/admin/tokens/${encodeURIComponent(token.id)}`);
      dialog.close();
      rerender();
    } catch (err) {
      replace(errors, alertBox(messageOf(err)));
      confirm.disabled = false;
    }
  });
  cancel.focus();
}

/** The edit form: sends only what changed. */
function editForm(token: Token, rerender: () => void): HTMLElement {
  const form = tokenFormFields(formValuesOf(token), true);
  const status = h("div", {});
  const save = h("button", { type: "submit" }, "Save changes");
  const el = h(
    "form",
    { class: "token-form", novalidate: true, "aria-labelledby": "edit-heading" },
    h("h2", { id: "edit-heading" }, "Edit"),
    form.fields,
    status,
    h("div", { class: "actions" }, save),
  );
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    replace(status);
    let body: Record<string, unknown>;
    try {
      body = patchBody(form.values(), token);
    } catch (err) {
      replace(status, alertBox(err instanceof FormError ? err.message : messageOf(err)));
      return;
    }
    if (Object.keys(body).length === 0) {
      replace(status, h("p", { role: "status" }, "Nothing changed."));
      return;
    }
    save.disabled = true;
    try {
      await request<Token>("PATCH", `/admin/tokens/${encodeURIComponent(token.id)}`, body);
      rerender();
    } catch (err) {
      replace(status, alertBox(messageOf(err)));
      save.disabled = false;
    }
  });
  return el;
}

export const tokenPageView: View = async (root, id) => {
  const rerender = () => void tokenPageView(root, id, {});
  replace(root, loading());
  let token: Token;
  try {
    token = await get<Token>(`/admin/tokens/${encodeURIComponent(id)}`);
  } catch (err) {
    if (isTokenNotFound(err)) return await goneTokenPage(root, id, err);
    replace(root, heading("Token"), link("#/tokens", "All tokens"));
    showError(root, err);
    return;
  }
  const editable = token.source === "api" && token.status !== "revoked";
  const actions: HTMLElement[] = [];
  if (editable) {
    const toggle = h("button", { type: "button", class: "secondary" }, token.disabled ? "Enable" : "Disable");
    toggle.addEventListener("click", async () => {
      toggle.disabled = true;
      try {
        await request<Token>("PATCH", `/admin/tokens/${encodeURIComponent(token.id)}`, {
          disabled: !token.disabled,
        });
        rerender();
      } catch (err) {
        toggle.disabled = false;
        showError(root, err);
      }
    });
    actions.push(
      toggle,
      h(
        "button",
        { type: "button", class: "secondary", onclick: () => rotateDialog(token, rerender) },
        "Rotate",
      ),
      h(
        "button",
        { type: "button", class: "danger", onclick: () => revokeDialog(token, rerender) },
        "Revoke",
      ),
    );
  }
  const note = token.source === "config"
    ? h("p", { class: "note" }, "Defined in the config file (read-only)")
    : token.status === "revoked"
    ? h("p", { class: "note" }, `This token was revoked at ${formatTime(token.revoked_at)}.`)
    : null;
  const sections = activitySections();
  const [overview, log] = activityLinks(token.id);
  replace(
    root,
    h("p", { class: "crumbs" }, link("#/tokens", "Tokens"), " / ", token.name),
    heading(token.name, ...actions),
    h(
      "p",
      { class: "status-line" },
      "Status: ",
      h("strong", { class: `status status-${token.status}` }, token.status),
    ),
    note,
    h(
      "p",
      {},
      link(routeHash("explain", { token: token.name }), "Explain"),
      " · ",
      // By id, as the usage below: a revoked token's name is free for a new one, whose usage is its own.
      overview,
      " · ",
      log,
    ),
    details(token),
    sections.usage,
    sections.recent,
    editable ? editForm(token, rerender) : null,
  );
  await fillActivity(sections, token.id);
};
