/**
 * `GET /admin/alerts`: the alerts this replica sent most recently (newest first, at most 100), each with how
 * its delivery to every receiver went. Receivers show as their index in `alerts:` and their host only: a
 * webhook's path often carries its key. Empty when no `alerts:` are configured. `configured` says whether this
 * process sends alerts: its receivers are those it started with (`alerts` is taken at start), so a reload
 * that adds or removes them changes nothing here until a restart.
 *
 * @module
 */
import type { RequestContext } from "../../http/context.ts";
import type { ClientRequest } from "../../runtime/types.ts";

/** `GET /admin/alerts`. */
export function handleAlerts(_request: ClientRequest, ctx: RequestContext): Response {
  const alerts = ctx.services.alerts;
  const body = {
    object: "list",
    // What runs, not the reloaded config's `alerts`: the receivers are fixed at start.
    configured: alerts != null,
    data: alerts ? alerts.recent() : [],
  };
  return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
}
