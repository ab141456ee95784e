/**
 * The semantic lookup is the gateway's own embedding call, recorded apart (`<request id>.semantic`): it does not
 * repeat the client request's guardrail outcomes, which were counted once already on the client's record (they
 * were copied onto the lookup's record, so `gateway_guardrail_outcomes_total` counted every flag twice and
 * `/admin/requests?guardrail=` listed the lookup as if the guardrail had acted on it).
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseConfigText } from "../config/load.ts";
import { createMemoryLogger } from "../log.ts";
import { createProviders } from "../providers/registry.ts";
import { createGateway } from "../server.ts";
import { GatewayMetrics } from "../metrics/gateway_metrics.ts";
import { createConfiguredCache } from "../cache/create.ts";
import type { UsageRecord } from "../usage/record.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../../tests/helpers/gateway.ts";

const YAML = `
providers:
  local: { type: builtin }
guardrails:
  watch-mail: { type: pii, entities: [EMAIL], action: flag, phase: input }
models:
  chat-echo:
    type: chat
    targets: [{ provider: local, model: echo }]
    guardrails: [watch-mail]
    cache: { semantic: { embeddings: emb, threshold: 0.95 } }
  emb: { type: embedding, targets: [{ provider: local, model: hash }] }
${TEST_TOKENS_YAML}`;

Deno.test("semantic lookup: its own record does not repeat the client request's guardrail outcomes", async () => {
  const result = parseConfigText(YAML, { source: "<t>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  const state = { config: result.config, providers: createProviders(result.config.providers) };
  const records: UsageRecord[] = [];
  const metrics = new GatewayMetrics();
  const logger = createMemoryLogger();
  const cache = await createConfiguredCache(result.config, logger, metrics.cache);
  const h = createGateway({
    state: () => state,
    logger,
    services: { usage: { write: (r) => records.push(r) }, metrics, cache },
  });
  const body = JSON.stringify({
    model: "chat-echo",
    messages: [{ role: "user", content: "mail me at bob@example.com" }],
  });
  const res = await h(
    new Request("http://gw.test/v1/chat/completions", {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        "content-length": String(body.length),
      },
      body,
    }),
  );
  await res.text();
  assert.equal(res.status, 200);
  const flagLines = metrics.render().split("\n").filter((l) =>
    l.startsWith("gateway_guardrail_outcomes_total{")
  );
  const semantic = records.find((r) => r.request_id.endsWith(".semantic"));
  assert.ok(semantic, "the lookup left its own record");
  assert.equal(semantic.guardrails, null, "the gateway's own embedding call ran no guardrail");
  assert.deepEqual(flagLines, [
    'gateway_guardrail_outcomes_total{guardrail="watch-mail",phase="input",action="flag"} 1',
  ]);
  const client = records.find((r) => !r.request_id.endsWith(".semantic"));
  assert.deepEqual(
    client?.guardrails?.map((g) => g.name),
    ["watch-mail"],
    "the client's record keeps its outcome",
  );
});
