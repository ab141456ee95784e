/**
 * Stored responses on a PostgreSQL that stalls (it takes the calls and answers none): one call per probe
 * interval waits for `postgres.timeout`, not every `/v1/responses` request. Once a call has timed out, the
 * answers that follow (JSON and streamed) are answered at once and not stored, and `previous_response_id` and
 * `GET /v1/responses/{id}` get their documented 503 `store_unavailable` at once, without the database being
 * tried again, until the next probe; the first probe the database answers makes it used again.
 *
 * The database is the shared test one (a schema of this test's), behind a TCP proxy of the test that holds its
 * replies (`helpers/tcp_proxy.ts`) and counts what reached it meanwhile: each call tried is one message sent
 * (a query, or a new connection's startup), as nothing it sends is answered. The store's probe clock is the
 * test's, so which call is the probe is decided by the test, never by how fast the machine is. The handler logs
 * `response_store_failed` for the puts that tried the database only: an outage at the request rate would
 * otherwise write one error line per request.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { parseConfigText } from "../../lib/config/load.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { openPostgresStore } from "../../lib/usage/postgres_store.ts";
import { STORE_PROBE_INTERVAL_MS } from "../../lib/timers/store_breaker.ts";
import { dropSchema, postgresOrSkip, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";
import { startTcpProxy } from "../helpers/tcp_proxy.ts";

const TOKEN = "gw-responses-stall-0123456789abcdef";
const TERMINATE = 0x58; // "X": a connection's goodbye when the pool is replaced, not a call

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: stall, environment: test, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`;

Deno.test("stored responses: a stalled PostgreSQL holds one request per probe interval, the others answer at once", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("gw_resp_stall");
  const database = new URL(TEST_DATABASE_URL);
  const proxy = startTcpProxy(Number(database.port || 5432), database.hostname);
  const url = new URL(TEST_DATABASE_URL);
  url.host = `127.0.0.1:${proxy.port}`;
  let clock = 1_000_000;
  const db = await openPostgresStore({
    url: url.href,
    schema,
    timeoutMs: 300,
    poolSize: 2,
    responsesProbe: { now: () => clock },
  });
  const parsed = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const state = { config: parsed.config, providers: createProviders(parsed.config.providers) };
  const logger = createMemoryLogger();
  /** The puts the handler logged as failed: one per call that tried the database, none per request. */
  const storeFailures = () => logger.lines.filter((l) => l.msg === "response_store_failed").length;
  const handler = createGateway({
    state: () => state,
    logger,
    services: { responses: db.responses },
  });
  const call = (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${TOKEN}`);
    if (typeof init.body === "string") {
      headers.set("content-type", "application/json");
      headers.set("content-length", String(new TextEncoder().encode(init.body).byteLength));
    }
    return handler(new Request(`http://gateway.test${path}`, { ...init, headers }));
  };
  const create = async (extra: Record<string, unknown> = {}) => {
    const r = await call("/v1/responses", {
      method: "POST",
      body: JSON.stringify({ model: "chat-echo", input: "hi", ...extra }),
    });
    return { status: r.status, body: await r.json() };
  };
  /** The calls that reached the stalled database: what was sent, but a replaced pool's goodbye. */
  const tried = () => proxy.sentWhileStalled.filter((sent) => sent[0] !== TERMINATE).length;
  try {
    // Healthy: stored, and read back.
    const kept = await create();
    assert.equal(kept.status, 200);
    assert.equal((await call(`/v1/responses/${kept.body.id}`)).status, 200);

    proxy.stall();
    // The first answer waits for the store's timeout, then goes out unstored.
    const first = await create();
    assert.equal(first.status, 200);
    assert.equal(first.body.status, "completed");
    assert.equal(tried(), 1);

    // Until the next probe the database is not tried: answers go out at once, while it is still stalled.
    for (let i = 0; i < 3; i++) {
      const r = await create();
      assert.equal(r.status, 200);
      assert.equal(r.body.status, "completed");
    }
    const stream = await call("/v1/responses", {
      method: "POST",
      body: JSON.stringify({ model: "chat-echo", input: "hi", stream: true }),
    });
    assert.equal(stream.status, 200);
    const events = await stream.text();
    assert.match(events, /event: response\.completed/, "the stream ends with its last event");
    // A lookup the database would have to answer: the documented 503, at once.
    const chained = await create({ previous_response_id: kept.body.id });
    assert.equal(chained.status, 503, JSON.stringify(chained.body));
    assert.equal(chained.body.error.code, "store_unavailable");
    const read = await call(`/v1/responses/${kept.body.id}`);
    assert.equal(read.status, 503);
    assert.ok(read.headers.get("retry-after"));
    await read.body?.cancel();
    assert.equal(tried(), 1, "the stalled database was tried once, by the first request");

    // A probe interval later one request tries it again (and waits), the next one does not.
    clock += STORE_PROBE_INTERVAL_MS;
    assert.equal((await create()).status, 200);
    assert.equal(tried(), 2);
    assert.equal((await create()).status, 200);
    assert.equal(tried(), 2);
    // Six answers went out unstored; the log says so for the two puts that tried the database, not per request.
    assert.equal(storeFailures(), 2, "one log line per put that tried the database");

    // The database answers again: the next probe finds it, and responses are stored and read once more.
    proxy.release();
    clock += STORE_PROBE_INTERVAL_MS;
    const back = await create();
    assert.equal(back.status, 200);
    const again = await call(`/v1/responses/${back.body.id}`);
    assert.equal(again.status, 200);
    assert.equal((await again.json()).id, back.body.id);
    const continued = await create({ previous_response_id: kept.body.id });
    assert.equal(continued.status, 200);
  } finally {
    await db.close();
    await proxy.close();
    await dropSchema(schema);
  }
});
