/**
 * `/admin/explain` under `serve --workers N`: a target's `max_in_flight` is held across every worker, so the
 * worker that answers the explanation judges saturation by the places all of them took.
 */
import assert from "node:assert/strict";
import { parseConfigText } from "../config/load.ts";
import { HealthRegistry } from "../routing/health.ts";
import { createInFlightBuffer, SharedInFlight } from "../workers/shared_in_flight.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { explain } from "./explain.ts";

const T0 = Date.UTC(2026, 10, 24, 12);

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-one:
    type: chat
    targets:
      - { provider: local, model: echo, max_in_flight: 1 }
tokens:
  - { name: app, sha256: ${"a".repeat(64)}, models: ["*"] }
`;

Deno.test("explain under workers: a target full on another worker is at capacity, and model.targets denies", async () => {
  const parsed = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const config = parsed.config;
  const model = config.models.get("chat-one")!;
  const token = [...config.tokens.values()][0];
  const buffer = createInFlightBuffer(2);
  const busy = new HealthRegistry(() => T0);
  busy.sharedInFlight = new SharedInFlight(buffer, 2, 0);
  const asked = new HealthRegistry(() => T0);
  asked.sharedInFlight = new SharedInFlight(buffer, 2, 1);

  const explainOn = (health: HealthRegistry) =>
    explain({
      token,
      alias: "chat-one",
      endpoint: "chat",
      config,
      counters: createMemoryCounterStore(() => T0),
      health,
      now: T0,
    });

  const idle = await explainOn(asked);
  assert.deepEqual([idle?.targets[0].in_flight, idle?.targets[0].available, idle?.allowed], [0, true, true]);

  const lease = busy.acquire(model.targets[0], config.routing);
  assert.ok(typeof lease !== "string", "worker 0 takes the one place");
  assert.equal(asked.acquire(model.targets[0], config.routing), "saturated", "routing on worker 1 agrees");

  const full = await explainOn(asked);
  assert.deepEqual([full?.targets[0].in_flight, full?.targets[0].available], [1, false]);
  assert.equal(full?.denied_by?.rule, "model.targets");
  assert.equal(asked.inFlight(model.targets[0]), 1, "/admin/targets reads the same count");

  lease.release();
  const freed = await explainOn(asked);
  assert.deepEqual([freed?.targets[0].in_flight, freed?.targets[0].available, freed?.allowed], [
    0,
    true,
    true,
  ]);
});
