/**
 * A replica's `watch` keeps hearing token changes after PostgreSQL restarts: it connects and listens again
 * by itself, says so once it does (changes made meanwhile were not heard), and then hears the next put of
 * another replica as before. Runs its own PostgreSQL server (`tests/helpers/private_postgres.ts`), so
 * crashing it disturbs no one; off CI it skips when PostgreSQL's server tools are missing.
 */
import assert from "node:assert/strict";
import { openPostgresStore } from "../usage/postgres_store.ts";
import { type PrivatePostgres, startPrivatePostgres } from "../../tests/helpers/private_postgres.ts";
import type { AuditEntry, StoredToken } from "./types.ts";

function tokenNamed(name: string, n: number): [StoredToken, AuditEntry] {
  const id = `tok_${n.toString(16).padStart(24, "0")}`;
  const time = new Date().toISOString();
  return [{
    id,
    name,
    environment: "default",
    description: null,
    models: ["*"],
    endpoints: null,
    limits: null,
    budget: null,
    max_tokens: null,
    cache: null,
    expires_at: null,
    disabled: false,
    created_at: time,
    updated_at: time,
    created_by: "ops",
    revoked_at: null,
    rotated_at: null,
    secrets: [{ sha256: "e".repeat(64), expires_at: null }],
  }, {
    id: `aud_${n.toString(16).padStart(24, "0")}`,
    time,
    actor: "ops",
    action: "create",
    token_id: id,
    token_name: name,
    changes: {},
  }];
}

/** Resolves once `check()` holds, polling every 25 ms; rejects after `ms`. */
async function until(check: () => boolean, ms: number, what: string): Promise<number> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return Date.now() - started;
}

Deno.test("token store (postgres): watch hears changes again after the database restarts", async (t) => {
  let pg: PrivatePostgres;
  try {
    pg = await startPrivatePostgres();
  } catch (err) {
    if (Deno.env.get("CI") !== undefined) throw err;
    await t.step({ name: `no private PostgreSQL (not CI): skipped (${err})`, ignore: true, fn: () => {} });
    return;
  }
  const options = { url: pg.url, schema: "gw_tokens_restart", timeoutMs: 2_000 };
  const writer = await openPostgresStore(options);
  const reader = await openPostgresStore(options);
  let heard = 0;
  const stop = await reader.tokens.watch!(() => heard++);
  try {
    const [first, firstAudit] = tokenNamed("before", 1);
    await writer.tokens.put(first, firstAudit);
    await until(() => heard === 1, 1_000, "a put before the restart is heard");

    await pg.stop("immediate");
    const [second, secondAudit] = tokenNamed("during", 2);
    await assert.rejects(writer.tokens.put(second, secondAudit), "a put while the database is down fails");
    await new Promise((r) => setTimeout(r, 500));
    await pg.start();

    // Listening again is announced (a reload), within the backoff (at most 2 s) after the restart.
    await until(() => heard === 2, 5_000, "listening again after the restart is announced");
    const [third, thirdAudit] = tokenNamed("after", 3);
    await writer.tokens.put(third, thirdAudit);
    await until(() => heard === 3, 1_000, "a put after the restart is heard");
    assert.deepEqual((await reader.tokens.loadAll()).tokens.map((x) => x.name).sort(), ["after", "before"]);
  } finally {
    await stop();
    await writer.close();
    await reader.close();
    await pg.destroy();
  }
});
