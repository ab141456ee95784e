/**
 * Test fixture: the serving worker of `serve --workers N` (lib/workers/worker_main.ts), except when the config a
 * reload hands a worker for its first phase (`reload.prepare`) has an alias named for a fault:
 *
 * - `fail-in-worker-1`: worker 1 answers with an error, as a worker whose setup of the new config fails there alone
 *   (or a bug) would;
 * - `die-in-worker-1`: worker 1 dies while preparing, by an uncaught error, as a crash mid-reload would;
 * - `die-in-every-worker`: every worker dies so;
 * - `hang-in-worker-1`: worker 1 never answers, its event loop free (a worker waiting on something that never
 *   comes). (A thread stuck in a loop is not injected: Deno cannot end it, and it would outlive the test.)
 *
 * Everything else is worker_main's. A replacement takes the reload at its start, not by that message, so it
 * starts.
 *
 * @module
 */
import "../../lib/workers/worker_main.ts";
import type { ValidationResult } from "../../lib/config/load.ts";
import type { ChannelMessage } from "../../lib/workers/channel.ts";
import type { WorkerInit } from "../../lib/workers/protocol.ts";

const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<ChannelMessage>) => void) | null;
  postMessage(message: ChannelMessage): void;
};
const real = scope.onmessage!;
let index = -1;

/** Dies by an uncaught error, as a crash would. */
function crash(): void {
  setTimeout(() => {
    throw new Error(`worker ${index} crashed mid-reload on purpose`);
  });
}

scope.onmessage = (event) => {
  const message = event.data;
  if (message.k === "call" && message.m === "init") index = (message.a[0] as WorkerInit).index;
  if (message.k === "call" && message.m === "reload.prepare") {
    const validation = message.a[1] as ValidationResult;
    const aliases = validation.ok ? Object.keys(validation.validated.data.models) : [];
    if (aliases.includes("die-in-every-worker")) return crash();
    if (index === 1 && aliases.includes("fail-in-worker-1")) {
      const e = { name: "Error", message: "worker 1 could not set the config up (on purpose)" };
      return scope.postMessage({ k: "err", id: message.id, e });
    }
    if (index === 1 && aliases.includes("die-in-worker-1")) return crash();
    if (index === 1 && aliases.includes("hang-in-worker-1")) return;
  }
  real(event);
};
