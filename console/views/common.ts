/// <reference lib="dom" />
/**
 * What several views share: the page heading, the time range select, the overview's filter chips, and how a
 * failed call is shown.
 *
 * @module
 */
import { ApiError } from "../api.ts";
import { alertBox, type Child, field, h, select } from "../dom.ts";
import { type CostClasses, formatCost, formatCostClasses, formatCostShares } from "../format.ts";
import { type RangeId, RANGES } from "../range.ts";

/** A view: renders into `root` (a fresh element, already in the page) for the route's rest and parameters. */
export type View = (
  root: HTMLElement,
  rest: string,
  params: Readonly<Record<string, string>>,
) => Promise<void>;

/** The view's `h1` (focusable, so navigation can move focus to it) and any controls beside it. */
export function heading(title: string, ...controls: Child[]): HTMLElement {
  return h(
    "header",
    { class: "view-head" },
    h("h1", { tabindex: -1 }, title),
    h("div", { class: "controls" }, controls),
  );
}

/** The "Time range" select; `onChange` gets the chosen range. */
export function rangeSelect(current: RangeId, onChange: (range: RangeId) => void): HTMLElement {
  const options = Object.entries(RANGES).map(([id, r]) => [id, r.label] as [string, string]);
  const el = select(options, current, { name: "range" });
  el.addEventListener("change", () => onChange(el.value as RangeId));
  return field("Time range", el);
}

/** The message of a failed call, for an alert. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.detail;
  return err instanceof Error ? err.message : String(err);
}

/** Shows a failed call as an alert in `root` (after what is there). */
export function showError(root: HTMLElement, err: unknown): void {
  root.appendChild(alertBox(messageOf(err)));
}

/** A placeholder while a view loads. */
export function loading(): HTMLElement {
  return h("p", { class: "loading", role: "status" }, "Loading…");
}

/** "Showing the first 50 of 72." when a table was cut, else null. */
export function cutNote(shown: number, total: number): HTMLElement | null {
  return shown < total ? h("p", { class: "note" }, `Showing the first ${shown} of ${total}.`) : null;
}

/**
 * A cost with its split by token class in a tooltip (for table cells, where a second line would crowd the row).
 * Without a split (an API from before it) the cost is shown alone.
 */
export function costCell(c: CostClasses & { readonly cost: number }): HTMLElement {
  const split = c.cost_input === undefined ? undefined : formatCostClasses(c);
  return h(
    "span",
    { title: split, class: split === undefined ? undefined : "cost-split" },
    formatCost(c.cost),
  );
}

/** A summary's cost: the cell, and under it the small "of which cached · cache writes · reasoning" line. */
export function costSummary(c: CostClasses & { readonly cost: number }): Child[] {
  const shares = formatCostShares(c);
  return [costCell(c), shares === "" ? null : h("small", { class: "cost-shares muted" }, shares)];
}
