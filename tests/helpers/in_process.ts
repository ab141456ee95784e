/**
 * A gateway run in-process, without a socket: its fetch handler over a config's text, and the usage records it
 * wrote. A JSON answer's record is written before the handler returns, so a test reads them without waiting.
 *
 * @module
 */
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import type { RouteDeps } from "../../lib/routing/route.ts";
import { createGateway } from "../../lib/server.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";

/** A gateway's fetch handler, the usage records it wrote, and its log lines. */
export interface InProcessGateway {
  /** Answers `path` (from the root, `/v1beta/models`) as the gateway would over a socket. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  records: UsageRecord[];
  logs: Record<string, unknown>[];
}

/**
 * A gateway serving `yaml` in-process; `routing` swaps in routing's dependencies (a health registry on a clock
 * the test moves, to see a cooldown end without waiting for it).
 */
export function inProcessGateway(yaml: string, routing?: Partial<RouteDeps>): InProcessGateway {
  const result = parseConfigText(yaml, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const records: UsageRecord[] = [];
  const handler = createGateway({
    state: () => state,
    logger,
    ...(routing === undefined ? {} : { routing }),
    services: { usage: { write: (r) => records.push(r) } },
  });
  return {
    fetch: (path, init = {}) => {
      const headers = new Headers(init.headers);
      // A socket request carries Content-Length (fetch adds it there): in-process it is added by hand.
      if (typeof init.body === "string") {
        headers.set("content-length", String(new TextEncoder().encode(init.body).byteLength));
      }
      return handler(new Request(`http://gateway.test${path}`, { ...init, headers }));
    },
    records,
    logs: logger.lines,
  };
}

/**
 * A `fetch` for an SDK client's options that answers every request through `gw`, by its path and query (the
 * client's base URL is `http://gateway.test`, or any origin).
 */
export function fetchThrough(gw: InProcessGateway): typeof fetch {
  return ((input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    return gw.fetch(url.pathname + url.search, init);
  }) as typeof fetch;
}
