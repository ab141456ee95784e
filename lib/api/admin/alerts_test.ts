/**
 * `GET /admin/alerts` through the gateway's fetch handler: `configured` says whether this process sends
 * alerts, which its receivers at start decide (`alerts` is taken at start), whatever a reload put in the
 * config since.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../auth/authenticate.ts";
import { createAlerts } from "../../alerts/alerts.ts";
import { alertsSchema } from "../../config/alerts_schema.ts";
import { parseConfigText } from "../../config/load.ts";
import type { GatewayState } from "../../http/context.ts";
import { createMemoryLogger } from "../../log.ts";
import { createMemoryCounterStore } from "../../policy/memory_counter_store.ts";
import { createProviders } from "../../providers/registry.ts";
import { createGateway } from "../../server.ts";

const ADMIN = "gw-admin-alerts-0123456789abcdef";

function state(alerts: string): GatewayState {
  const yaml = `
providers:
  local: { type: builtin }
models:
  chat: { type: chat, targets: [ { provider: local, model: echo } ] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
${alerts}
`;
  const result = parseConfigText(yaml, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return { config: result.config, providers: createProviders(result.config.providers) };
}

async function configured(handler: (request: Request) => Promise<Response>): Promise<unknown> {
  const response = await handler(
    new Request("http://gateway.test/admin/alerts", { headers: { authorization: `Bearer ${ADMIN}` } }),
  );
  assert.equal(response.status, 200);
  return (await response.json()).configured;
}

Deno.test("admin alerts: configured follows the receivers the process started with, not a reloaded config", async () => {
  const withReceiver = state(`alerts: [ { url: "http://127.0.0.1:9/hook", ejections: true } ]`);
  const without = state("");
  const logger = createMemoryLogger();

  // Started without alerts, then reloaded with a receiver: none is sent until a restart.
  const off = createGateway({ state: () => withReceiver, logger, services: { alerts: null } });
  assert.equal(await configured(off), false);

  // Started with a receiver, then reloaded without: it still gets this process's alerts.
  const alerts = createAlerts(
    alertsSchema.parse([{ url: "http://127.0.0.1:9/hook", ejections: true }]),
    createMemoryCounterStore(),
  );
  try {
    const on = createGateway({ state: () => without, logger, services: { alerts } });
    assert.equal(await configured(on), true);
  } finally {
    await alerts.close();
  }
});
