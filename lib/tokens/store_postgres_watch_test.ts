/**
 * The PostgreSQL token store's `watch`, against the shared test database (a schema of its own, dropped after;
 * skipped off CI when the database cannot be reached): what one replica's watch hears of another's puts, and
 * what it must not hear. Its restart after the database is lost is in store_postgres_restart_test.ts.
 *
 * @module
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { backstop } from "../../tests/helpers/backstop.ts";
import { TOKENS_CHANNEL } from "./store_postgres.ts";
import { makeAudit, makeToken, openPostgresSubject } from "./store_contract_test_helpers.ts";

/**
 * A replica's watch hears another replica's put as it happens (awaited; the backstop only names a put never
 * heard), and hears nothing else, which is shown without waiting for a quiet moment:
 * - another schema's notifications: three of other schemas and then this fleet's, sent in one transaction,
 *   reach the watch's connection in that order (PostgreSQL's guarantee) and in one write of the server's, read
 *   at once: a watch that counted the others would be at 5, not 2, when the count is read;
 * - a stopped watch: after `stop()` a fresh watch hears two puts one after the other; the stopped one's
 *   connection would have had the first long before the second was even made.
 */
Deno.test("token store (postgres): a replica's watch hears another's put, not another schema's, not once stopped", async (t) => {
  const subject = await openPostgresSubject();
  if (subject === null) {
    await t.step({ name: "postgres unreachable (not CI): skipped", ignore: true, fn: () => {} });
    return;
  }
  const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
  try {
    const other = await subject.second!();
    const heard = hearings();
    const stop = await other.watch!(heard.hear);
    const token = makeToken({ name: "watched" });
    await subject.store.put(token, makeAudit(token));
    await heard.reaching(1, "the other replica's watch hears the put");
    assert.deepEqual((await other.loadAll()).tokens.map((x) => x.id), [token.id]);

    // Fleets in other schemas of the database notify on the same channel: a longer, a shorter and an unrelated
    // schema name, then this fleet's own, all in one transaction.
    const schema = subject.schema!;
    await sql.begin(async (tx) => {
      for (const elsewhere of [`${schema}x`, schema.slice(0, -1), "gw_elsewhere"]) {
        await tx`SELECT pg_notify(${TOKENS_CHANNEL}, ${elsewhere})`;
      }
      await tx`SELECT pg_notify(${TOKENS_CHANNEL}, ${schema})`;
    });
    await heard.reaching(2, "this fleet's notification, sent after the other schemas'");
    assert.equal(heard.count, 2, "a change in another schema is not this fleet's");

    await stop();
    const fresh = hearings();
    const stopFresh = await other.watch!(fresh.hear);
    try {
      for (const [n, name] of [[1, "after-stop"], [2, "after-stop-2"]] as const) {
        const later = makeToken({ name });
        await subject.store.put(later, makeAudit(later));
        await fresh.reaching(n, `a watch started after the stop hears put ${n}`);
      }
    } finally {
      await stopFresh();
    }
    assert.equal(heard.count, 2, "a stopped watch hears nothing");
  } finally {
    await sql.end({ timeout: 5 });
    await subject.dispose();
  }
});

/** A watch's listener that counts what it hears, and waits for the count to reach a number. */
function hearings() {
  let count = 0;
  const waiters = new Set<{ n: number; resolve(): void }>();
  return {
    get count() {
      return count;
    },
    hear() {
      count++;
      for (const waiter of waiters) if (count >= waiter.n) waiter.resolve();
    },
    /** Resolves once `n` were heard (at once if they were); fails naming `what` after the backstop. */
    reaching(n: number, what: string): Promise<void> {
      if (count >= n) return Promise.resolve();
      const { promise, resolve } = Promise.withResolvers<void>();
      const waiter = { n, resolve };
      waiters.add(waiter);
      return backstop(promise, what).finally(() => waiters.delete(waiter));
    },
  };
}
