/**
 * Test fixture: the usage store's worker, except that an insert (or a part of a batch) holding a record whose
 * `request_id` is `crash-the-worker` kills it with an uncaught error, the way a bug or a native fault would.
 *
 * @module
 */
import "../../lib/usage/sqlite_worker.ts";
import { recordsOf, type StoreCall } from "../../lib/usage/sqlite_worker_protocol.ts";

const scope = globalThis as unknown as { onmessage: ((event: MessageEvent<StoreCall>) => void) | null };
const real = scope.onmessage!;
scope.onmessage = (event) => {
  const call = event.data;
  if (
    (call.method === "insert" || call.method === "stage") &&
    recordsOf(call.records).some((r) => r.request_id === "crash-the-worker")
  ) {
    setTimeout(() => {
      throw new Error("worker crashed on purpose");
    });
    return;
  }
  real(event);
};
