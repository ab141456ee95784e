/// <reference lib="dom" />
/**
 * Alerts: the alerts this replica sent most recently (budget thresholds, denial bursts, ejections), newest
 * first, each as one line with how its delivery to every receiver went. Receivers show as their index in
 * `alerts:` and their host only (the API never gives the path, which often carries a webhook's key).
 *
 * @module
 */
import { get } from "../api.ts";
import { h, replace, table, timeCell } from "../dom.ts";
import { formatTime } from "../format.ts";
import { alertSummary, formatDelivery } from "../spend_format.ts";
import type { AlertDelivery, AlertList } from "../types.ts";
import { heading, loading, showError, type View } from "./common.ts";

/** Every receiver's delivery, one per line, its status marked like token statuses. */
function deliveriesCell(deliveries: readonly AlertDelivery[]): HTMLElement {
  return h(
    "ul",
    { class: "changes" },
    deliveries.map((d) =>
      h(
        "li",
        { class: d.status === "failed" || d.status === "dropped" ? "warning" : undefined },
        formatDelivery(d),
      )
    ),
  );
}

export const alertsView: View = async (root) => {
  const refresh = h("button", {
    type: "button",
    class: "secondary",
    onclick: () => void alertsView(root, "", {}),
  }, "Refresh");
  const body = h("div", {}, loading());
  replace(root, heading("Alerts", refresh), body);
  let alerts: AlertList;
  try {
    alerts = await get<AlertList>("/admin/alerts");
  } catch (err) {
    replace(body);
    showError(body, err);
    return;
  }
  if (!alerts.configured && alerts.data.length === 0) {
    replace(
      body,
      h(
        "p",
        { class: "empty-state" },
        "No alert webhooks configured (",
        h("code", {}, "alerts:"),
        " in the config).",
      ),
    );
    return;
  }
  const rows = alerts.data.map(({ alert, deliveries }) => [
    timeCell(alert.time, formatTime(alert.time)),
    alert.type,
    alertSummary(alert),
    deliveriesCell(deliveries),
  ]);
  replace(
    body,
    h(
      "p",
      { class: "note" },
      "The alerts this replica sent most recently (up to 100), newest first, and how each receiver took them.",
    ),
    table("Recent alerts", ["Time", "Type", "Summary", "Deliveries"], rows, "No alerts sent yet."),
  );
};
