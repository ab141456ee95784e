/**
 * Test fixture: the serving worker of `serve --workers N` (lib/workers/worker_main.ts), except worker 1 when the
 * config a reload hands it for its first phase (`reload.prepare`) has an alias named for a fault:
 *
 * - `fail-in-worker-1`: it answers with an error, as a worker whose setup of the new config fails there alone (or
 *   a bug) would;
 * - `die-in-worker-1`: it dies while preparing, by an uncaught error, as a crash mid-reload would.
 *
 * Everything else is worker_main's. A replacement (worker 1 again) takes the reload at its start, not by that
 * message, so it starts.
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
scope.onmessage = (event) => {
  const message = event.data;
  if (message.k === "call" && message.m === "init") index = (message.a[0] as WorkerInit).index;
  if (index === 1 && message.k === "call" && message.m === "reload.prepare") {
    const validation = message.a[1] as ValidationResult;
    const aliases = validation.ok ? Object.keys(validation.validated.data.models) : [];
    if (aliases.includes("fail-in-worker-1")) {
      const e = { name: "Error", message: "worker 1 could not set the config up (on purpose)" };
      return scope.postMessage({ k: "err", id: message.id, e });
    }
    if (aliases.includes("die-in-worker-1")) {
      setTimeout(() => {
        throw new Error("worker 1 crashed mid-reload on purpose");
      });
      return;
    }
  }
  real(event);
};
