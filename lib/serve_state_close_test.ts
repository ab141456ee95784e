/**
 * Shutdown with PostgreSQL hung (it accepts and takes statements, and answers nothing): the gateway's shared
 * state must close within the usage pipeline's share of the shutdown, with every record not confirmed by the
 * database in the spill file, once; and the replay must store each record once, also the batch whose INSERT
 * committed while its answer was held. Before, the close waited out the token directory's calls, then the batch
 * in flight, then the final insert, each for a whole `postgres.timeout`, and a platform's kill (Docker's 10 s)
 * came first: every record still in memory was lost.
 *
 * `postgres.timeout` is ten minutes here, so a close that waits on the database cannot pass for one that does not.
 */
import assert from "node:assert/strict";
import { parseConfigText } from "./config/load.ts";
import { createMemoryLogger } from "./log.ts";
import { GatewayMetrics } from "./metrics/gateway_metrics.ts";
import { openSharedState } from "./serve_state.ts";
import { createUsagePipeline } from "./usage/pipeline.ts";
import { openPostgresStore } from "./usage/postgres_store.ts";
import { backstop, eventually } from "../tests/helpers/backstop.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../tests/helpers/postgres.ts";
import { bytesInclude, startTcpProxy } from "../tests/helpers/tcp_proxy.ts";
import { makeRecord, readJsonl } from "../tests/helpers/usage.ts";

function config(url: string, schema: string, dir: string) {
  const result = parseConfigText(
    `
postgres: { url: "${url}", schema: ${schema}, timeout: 10m, pool_size: 2 }
usage: { spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers: { local: { type: builtin } }
models: { chat: { type: chat, targets: [{ provider: local, model: echo }] } }
`,
    { source: `${dir}/gateway.yaml`, env: {} },
  );
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

async function requestCounts(schema: string): Promise<Map<string, number>> {
  const rows = await queryOnce(
    `SELECT request_id, count(*)::int AS n FROM "${schema}".usage GROUP BY request_id`,
  );
  return new Map(rows.map((r) => [String(r.request_id), Number(r.n)]));
}

Deno.test("shutdown with postgres hung: records are spilled within the close's share, then stored once", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("gw_close_hung");
  const dir = await Deno.makeTempDir();
  const database = new URL(TEST_DATABASE_URL);
  // The connection that sends the values of record 3 stalls: its batch's INSERT commits, its answer never comes.
  const proxy = startTcpProxy(Number(database.port || 5432), database.hostname, {
    stallWhen: (data) => bytesInclude(data, "req_3"),
  });
  const throughProxy = new URL(TEST_DATABASE_URL);
  throughProxy.hostname = "127.0.0.1";
  throughProxy.port = String(proxy.port);
  const logger = createMemoryLogger();
  try {
    const shared = await openSharedState(
      config(throughProxy.href, schema, dir),
      logger,
      new GatewayMetrics(),
      undefined,
      { usageCloseMs: 100 },
    );
    const pipeline = shared.pipeline!;
    for (let i = 0; i < 3; i++) pipeline.write(makeRecord(i));
    await pipeline.flush();
    assert.equal((await requestCounts(schema)).size, 3, "stored while the database answers");

    for (let i = 3; i < 8; i++) pipeline.write(makeRecord(i));
    await eventually("the batch in flight committed", async () => (await requestCounts(schema)).size === 8);
    // Hung from now on, for every call (the token directory's too).
    proxy.stall();
    // Queued behind the batch in flight.
    for (let i = 8; i < 10; i++) pipeline.write(makeRecord(i));

    // Before, this waited for the database: 30 s (the pipeline's default) and more.
    await backstop(shared.close(), "the shared state closes while the database hangs", 20_000);
    assert.ok(logger.lines.some((l) => l.msg === "usage_close_timeout"), "the close says it spilled");
    const spilled = (await readJsonl(`${dir}/spill.jsonl`)).map((r) => r.request_id).sort();
    assert.deepEqual(
      spilled,
      ["req_3", "req_4", "req_5", "req_6", "req_7", "req_8", "req_9"],
      "each record the database did not confirm is spilled, once",
    );

    // The next start replays the spill file: the batch that had committed is not stored twice.
    proxy.up();
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    const replay = createUsagePipeline({
      store,
      spillPath: `${dir}/spill.jsonl`,
      queueSize: 100,
      batchSize: 100,
      flushIntervalMs: 20,
      logger: createMemoryLogger(),
    });
    await replay.replaySpill();
    await replay.close();
    await store.close();
    const counts = await requestCounts(schema);
    assert.deepEqual(
      [...counts.entries()].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true })),
      Array.from({ length: 10 }, (_, i) => [`req_${i}`, 1]),
      "every record stored exactly once",
    );
  } finally {
    await proxy.close();
    await dropSchema(schema);
    await Deno.remove(dir, { recursive: true });
  }
});
