/**
 * Acceptance: with the usage store slow, then failing, requests still succeed without waiting for it, and
 * after recovery and shutdown every request has exactly one record. "Slow" is a store held until the test lets
 * it go: a request that waited for it would never be answered, which no clock has to tell.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { parseConfigText } from "../../lib/config/load.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { createUsagePipeline } from "../../lib/usage/pipeline.ts";
import { createSqliteStore } from "../../lib/usage/sqlite_store.ts";
import { controlledStore, countRows } from "../helpers/usage.ts";
import { backstop, eventually } from "../helpers/backstop.ts";

const TOKEN = "gw-fault-test-token-0123456789";

Deno.test("usage store slow, then failing: requests do not wait for it, and no record is lost", async () => {
  const dir = await Deno.makeTempDir();
  const result = parseConfigText(
    `providers: { local: { type: builtin } }
models: { chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] } }
tokens: [ { name: t, sha256: ${hashToken(TOKEN)}, models: ["*"] } ]
`,
    { source: "<test>", env: {} },
  );
  assert.ok(result.ok);
  const state = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const dbPath = `${dir}/usage.sqlite`;
  const store = controlledStore(createSqliteStore(dbPath));
  const pipeline = createUsagePipeline({
    store,
    spillPath: `${dir}/spill.jsonl`,
    queueSize: 50,
    batchSize: 10,
    flushIntervalMs: 10,
    retryMaxMs: 50,
    logger,
  });
  const handler = createGateway({
    state: () => state,
    logger,
    services: {
      usage: pipeline,
      usageStore: {
        flush: () => pipeline.flush(),
        query: (q) => store.query(q),
        listRecords: (q) => store.listRecords(q),
      },
    },
  });
  const send = async (i: number) => {
    const response = await handler(
      new Request("http://gw/v1/chat/completions", {
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN}`,
          "content-type": "application/json",
          "x-request-id": `r${i}`,
        },
        body: JSON.stringify({
          model: "chat-echo",
          stream: i % 2 === 0,
          messages: [{ role: "user", content: `n ${i}` }],
        }),
      }),
    );
    await response.text();
    assert.equal(response.status, 200);
  };

  // Slow: every insert is held until the test releases the store; the queue (50) overflows into the spill file.
  store.block();
  await send(0);
  await eventually("the pipeline's insert is held by the store", () => store.calls > 0);
  for (let i = 1; i < 200; i++) await backstop(send(i), `request r${i} answered while the store is held`);
  assert.ok(pipeline.stats().spilled > 0, "the overflow went to the spill file");
  store.release();

  // Failing: inserts throw for a while; the requests are answered all the same.
  store.failNext = 20;
  for (let i = 200; i < 400; i++) await send(i);

  // Recovery and shutdown: everything queued or spilled ends up in the store exactly once.
  await pipeline.flush();
  await pipeline.replaySpill();
  await pipeline.close();
  await store.close();
  const { rows, distinct, ids } = countRows(dbPath);
  assert.equal(distinct, 400);
  assert.equal(rows, 400, "no record twice");
  for (let i = 0; i < 400; i++) assert.ok(ids.has(`r${i}`), `r${i}`);
  await Deno.remove(dir, { recursive: true });
});
