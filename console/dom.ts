/// <reference lib="dom" />
/**
 * A tiny element builder: every value goes into the page as a text node or a property, never as HTML, so
 * names, messages and anything else from the API cannot inject markup; and with the characters a browser
 * obeys instead of drawing (bidi overrides, zero-width characters) marked visibly (`visible_text.ts`), so such
 * a value cannot disguise itself or the text around it. Also the few widgets every view uses (tables,
 * definition lists, alerts, dialogs).
 *
 * @module
 */
import { visibleText } from "./visible_text.ts";

/** A child: text (escaped by construction), an element, or nothing. */
export type Child = Node | string | number | null | undefined | false;

/** Attributes and properties: `on*` functions become listeners; `class`, `for`, `aria-*`, `data-*` attributes. */
export type Attrs = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

/**
 * Attributes kept exactly as given: a form control's `value` is what a filter sends back to the API, and an
 * `href` is percent-encoded already. Every other attribute (`title`, `aria-label`, …) is read by people.
 */
const VERBATIM = new Set(["value", "href"]);

/**
 * `h("a", {href: "#/x"}, "text")`. A `false`/null/undefined attribute is left out; `true` sets it empty. Text
 * and attributes people read go through {@linkcode visibleText}.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "value" && "value" in el) (el as HTMLInputElement).value = String(value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, VERBATIM.has(name) ? String(value) : visibleText(String(value)));
  }
  append(el, ...children);
  return el;
}

/** Appends children as nodes; strings and numbers as text, hidden characters marked ({@linkcode visibleText}). */
export function append(parent: Node, ...children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(
      typeof child === "object" ? child : document.createTextNode(visibleText(String(child))),
    );
  }
}

/** Replaces every child of `parent`. */
export function replace(parent: Node, ...children: (Child | Child[])[]): void {
  while (parent.firstChild !== null) parent.removeChild(parent.firstChild);
  append(parent, ...children);
}

/** An error shown to the user, announced by screen readers. */
export function alertBox(message: string): HTMLElement {
  return h("p", { role: "alert", class: "alert" }, message);
}

/** A table with a caption, `th scope="col"` headers, and a row per entry; `empty` when there are none. */
export function table(
  caption: string,
  columns: readonly string[],
  rows: readonly Child[][],
  empty = "No data.",
): HTMLElement {
  const body = rows.length === 0
    ? [h("tr", {}, h("td", { colspan: columns.length, class: "empty" }, empty))]
    : rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))));
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      {},
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, columns.map((name) => h("th", { scope: "col" }, name)))),
      h("tbody", {}, body),
    ),
  );
}

/** A definition list: `[["Requests", "12"], …]`. */
export function definitions(
  entries: readonly [string, Child | Child[]][],
  label?: string,
  compact = false,
): HTMLDListElement {
  return h(
    "dl",
    { class: compact ? "stats compact" : "stats", "aria-label": label },
    entries.map(([term, value]) => h("div", {}, h("dt", {}, term), h("dd", {}, value))),
  );
}

let fieldCounter = 0;

/** A fresh element id for label/input pairs. */
export function uid(prefix: string): string {
  return `${prefix}-${++fieldCounter}`;
}

/** A labelled control in a `div.field`. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  if (control.id === "") control.id = uid("f");
  const hintEl = hint === undefined ? null : h("small", { id: `${control.id}-hint` }, hint);
  if (hintEl !== null) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}

/** A `select` with `[value, text]` options and `selected` chosen. */
export function select(
  options: readonly [string, string][],
  selected: string,
  attrs: Attrs = {},
): HTMLSelectElement {
  const el = h("select", attrs, options.map(([value, text]) => h("option", { value }, text)));
  el.value = selected;
  return el;
}

/**
 * A modal `dialog` (focus is trapped and Escape closes it, natively); removed from the page once closed.
 * `onClose` runs after it closes for any reason.
 */
export function openDialog(title: string, content: Child[], onClose?: () => void): HTMLDialogElement {
  const titleId = uid("dlg");
  const dialog = h("dialog", { "aria-labelledby": titleId }, h("h2", { id: titleId }, title), content);
  dialog.addEventListener("close", () => {
    dialog.remove();
    onClose?.();
  });
  document.body.appendChild(dialog);
  dialog.showModal();
  return dialog;
}

/** A time in a table cell: a `time` element that does not wrap. */
export function timeCell(iso: string, text: string): HTMLTimeElement {
  return h("time", { datetime: iso, class: "nowrap" }, text);
}

/** A link. */
export function link(href: string, text: string, attrs: Attrs = {}): HTMLAnchorElement {
  return h("a", { ...attrs, href }, text);
}
