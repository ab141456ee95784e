/**
 * Two small helpers every store over `node:sqlite`'s synchronous API needs: a call as a promise (the store
 * interfaces are asynchronous, so a throw must become a rejection), and a rollback that tolerates a transaction
 * already ended.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";

/** Runs a synchronous database call as a promise, so a throw becomes a rejection as the interface promises. */
export function run<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
}

/** Rolls back the open transaction, if any (a failed COMMIT may already have ended it). */
export function rollback(db: DatabaseSync): void {
  try {
    db.exec("ROLLBACK");
  } catch {
    // no transaction open: nothing to undo
  }
}
