/**
 * A usage store whose inserts report how they went, for the `gateway_usage_store_up` gauge: the pipeline
 * retries and spills on its own, and this only lets an operator see from `/metrics` that a shared database
 * (PostgreSQL) is not taking records, as the log's `usage_store_failed` / `usage_store_recovered` say.
 *
 * @module
 */
import type { UsageStore } from "./store.ts";

/** `store` with each insert's outcome passed to `onResult` (true: stored); everything else as it was. */
export function observeInserts<S extends UsageStore>(store: S, onResult: (ok: boolean) => void): S {
  return {
    ...store,
    async insert(records) {
      try {
        await store.insert(records);
      } catch (err) {
        onResult(false);
        throw err;
      }
      onResult(true);
    },
  };
}
