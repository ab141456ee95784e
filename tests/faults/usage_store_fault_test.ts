/**
 * Acceptance: with the usage store slow, then failing, requests still succeed without waiting for it, and
 * after recovery and shutdown every request has exactly one record.
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

const TOKEN = "gw-fault-test-token-0123456789";

Deno.test("usage store slow, then failing: requests are not delayed, and no record is lost", async () => {
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
    const started = performance.now();
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
    return performance.now() - started;
  };

  // Slow: every insert takes two seconds; the queue (50) overflows into the spill file.
  store.delayMs = 2_000;
  const slow: number[] = [];
  for (let i = 0; i < 200; i++) slow.push(await send(i));
  // Not a benchmark: a request that waited for the store would take at least its two seconds.
  assert.ok(Math.max(...slow) < 1_000, `slowest request took ${Math.max(...slow)} ms`);
  assert.ok(pipeline.stats().spilled > 0, "the overflow went to the spill file");

  // Failing: inserts throw for a while.
  store.delayMs = 0;
  store.failNext = 20;
  const failing: number[] = [];
  for (let i = 200; i < 400; i++) failing.push(await send(i));
  assert.ok(Math.max(...failing) < 1_000);

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
