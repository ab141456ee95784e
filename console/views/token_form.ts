/// <reference lib="dom" />
/**
 * The token form (create and edit share its labels), and the panel that shows a new secret once, with a copy
 * button and the base URL a client points at.
 *
 * @module
 */
import { field, h, select } from "../dom.ts";
import type { TokenFormValues } from "../token_body.ts";

/** The form's inputs, and a reader of their values. */
export interface TokenFormFields {
  readonly fields: HTMLElement[];
  values(): TokenFormValues;
}

/** The inputs of the token form, filled from `initial`; the name is read-only when `nameLocked`. */
export function tokenFormFields(initial: TokenFormValues, nameLocked: boolean): TokenFormFields {
  const text = (name: string, value: string, attrs: Record<string, string | boolean> = {}) =>
    h("input", { type: "text", name, value, autocomplete: "off", spellcheck: "false", ...attrs });
  const number = (name: string, value: string) =>
    h("input", {
      type: "text",
      inputmode: "numeric",
      pattern: "[0-9]*",
      name,
      value,
      autocomplete: "off",
      size: 10,
    });
  const name = text("name", initial.name, { required: !nameLocked, readonly: nameLocked });
  const environment = text("environment", initial.environment, { placeholder: "default" });
  const models = text("models", initial.models, { required: true, placeholder: "chat-default, embed-*" });
  const endpoints = text("endpoints", initial.endpoints, { placeholder: "chat, embeddings" });
  const rpm = number("rpm", initial.rpm);
  const tpm = number("tpm", initial.tpm);
  const concurrent = number("concurrent", initial.concurrent);
  const budgetTokens = number("budget_tokens", initial.budgetTokens);
  const budgetPeriod = select([["day", "day"], ["month", "month"]], initial.budgetPeriod, {
    name: "budget_period",
  });
  const maxTokens = number("max_tokens", initial.maxTokens);
  const expiresAt = text("expires_at", initial.expiresAt, {
    placeholder: "2027-01-01 or 2027-01-01T00:00:00Z",
  });
  const description = h("textarea", { name: "description", rows: 2, maxlength: 500 });
  description.value = initial.description;
  return {
    fields: [
      h(
        "div",
        { class: "form-grid" },
        field("Name", name),
        field("Environment", environment),
        field("Models", models, "Comma-separated aliases or globs."),
        field("Endpoints", endpoints, "Comma-separated, optional: all when empty."),
        field("Requests per minute", rpm),
        field("Tokens per minute", tpm),
        field("Concurrent requests", concurrent),
        field("Budget (tokens)", budgetTokens),
        field("Budget period", budgetPeriod),
        field("Max tokens", maxTokens),
        field("Expires at", expiresAt, "ISO date or date-time; empty for never."),
      ),
      field("Description", description),
    ],
    values: () => ({
      name: name.value,
      environment: environment.value,
      models: models.value,
      endpoints: endpoints.value,
      rpm: rpm.value,
      tpm: tpm.value,
      concurrent: concurrent.value,
      budgetTokens: budgetTokens.value,
      budgetPeriod: budgetPeriod.value,
      maxTokens: maxTokens.value,
      expiresAt: expiresAt.value,
      description: description.value,
    }),
  };
}

/**
 * The one-time secret: a read-only input labelled "New token secret", a "Copy" button, the base URL, and a
 * "Done" button that runs `done`. The secret is never stored anywhere by the console.
 */
export function secretPanel(secret: string, note: string, done: () => void): HTMLElement {
  const input = h("input", {
    type: "text",
    readonly: true,
    value: secret,
    class: "secret",
    spellcheck: "false",
  });
  const copied = h("span", { class: "note", role: "status" });
  const copy = h("button", { type: "button", class: "secondary" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(secret);
      copied.textContent = "Copied.";
    } catch {
      // No clipboard permission (plain http on another host): select it for Ctrl+C instead.
      input.select();
      copied.textContent = "Selected: press Ctrl+C to copy.";
    }
  });
  const base = h("input", { type: "text", readonly: true, value: `${location.origin}/v1`, class: "secret" });
  const doneButton = h("button", { type: "button", onclick: done }, "Done");
  const panel = h(
    "div",
    { class: "secret-panel" },
    h("p", { class: "warning" }, note),
    h("div", { class: "secret-row" }, field("New token secret", input), copy, copied),
    field("Base URL", base),
    h("div", { class: "actions" }, doneButton),
  );
  queueMicrotask(() => input.select());
  return panel;
}
