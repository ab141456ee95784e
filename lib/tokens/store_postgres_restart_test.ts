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
import { eventually } from "../../tests/helpers/backstop.ts";

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
    await eventually("a put before the restart is heard", () => heard >= 1);
    assert.equal(heard, 1);

    await pg.stop("immediate");
    const [second, secondAudit] = tokenNamed("during", 2);
    await assert.rejects(writer.tokens.put(second, secondAudit), "a put while the database is down fails");
    // Not a bound: a pause while the database is down, so the watch may try (and fail) to listen again
    // meanwhile; the test holds however long it lasts.
    await new Promise((r) => setTimeout(r, 500));
    await pg.start();

    // Listening again is announced (a reload) once the watch listens again, awaited as it happens (its backoff
    // between attempts is at most 2 s; the backstop only names an announcement that never comes).
    await eventually("listening again after the restart is announced", () => heard >= 2);
    assert.equal(heard, 2, "announced once");
    const [third, thirdAudit] = tokenNamed("after", 3);
    await writer.tokens.put(third, thirdAudit);
    await eventually("a put after the restart is heard", () => heard >= 3);
    assert.equal(heard, 3);
    assert.deepEqual((await reader.tokens.loadAll()).tokens.map((x) => x.name).sort(), ["after", "before"]);
  } finally {
    await stop();
    await writer.close();
    await reader.close();
    await pg.destroy();
  }
});
