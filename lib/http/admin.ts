/**
 * Admin endpoints, for operators with an admin token: the live state of every routing target, and a config
 * reload on demand.
 *
 * @module
 */
import type { ReloadStatus } from "../reload.ts";
import type { RequestContext } from "./context.ts";

const JSON_TYPE = { "content-type": "application/json" };

/**
 * `GET /admin/targets`: every alias's targets in config order with their health (in flight, recent latency,
 * consecutive failures, ejected until). Targets that have had no traffic yet show as healthy with no data.
 */
export function handleTargets(_request: Request, ctx: RequestContext): Response {
  const health = new Map(ctx.routing.health.snapshot().map((s) => [s.key, s]));
  const aliases = [...ctx.state.config.models.values()].map((model) => ({
    alias: model.alias,
    strategy: model.strategy,
    targets: model.targets.map((target) => {
      const h = health.get(target.key);
      return {
        provider: target.provider,
        model: target.model,
        weight: target.weight,
        max_in_flight: target.maxInFlight,
        retries: target.retries,
        state: h?.state ?? "healthy",
        in_flight: h?.in_flight ?? 0,
        consecutive_failures: h?.consecutive_failures ?? 0,
        ejected_until: h?.ejected_until ?? null,
        latency_ewma_ms: h?.latency_ewma_ms ?? null,
        successes: h?.successes ?? 0,
        failures: h?.failures ?? 0,
      };
    }),
  }));
  return new Response(JSON.stringify({ object: "list", data: aliases }), { headers: JSON_TYPE });
}

/** `POST /admin/reload`: reloads the config file now; 200 when swapped in, 422 with every issue when not. */
export async function handleReload(reload: (trigger: string) => Promise<ReloadStatus>): Promise<Response> {
  const status = await reload("admin");
  return new Response(JSON.stringify(status), { status: status.ok ? 200 : 422, headers: JSON_TYPE });
}
