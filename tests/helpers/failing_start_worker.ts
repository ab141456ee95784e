/**
 * Test fixture: the serving worker of `serve --workers N` (lib/workers/worker_main.ts), except that worker 1 fails
 * to start while the file `fail-starts` beside the config lists a way to fail, one line a start: `reject` (its start
 * throws: the `init` call is answered with an error, as a worker whose setup throws answers) or `crash` (an uncaught
 * error while starting). Each start of worker 1 takes the first line off; once the file is empty, or absent, it
 * starts as worker_main does.
 *
 * @module
 */
import "../../lib/workers/worker_main.ts";
import type { ChannelMessage } from "../../lib/workers/channel.ts";
import type { WorkerInit } from "../../lib/workers/protocol.ts";

const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<ChannelMessage>) => void) | null;
  postMessage(message: ChannelMessage): void;
};
const real = scope.onmessage!;

/** The next way to fail listed for worker 1 beside `source`, taken off the list; null to start. */
function nextFailure(source: string): string | null {
  const file = `${source.slice(0, source.lastIndexOf("/"))}/fail-starts`;
  let lines: string[];
  try {
    lines = Deno.readTextFileSync(file).split("\n").filter((l) => l.trim() !== "");
  } catch {
    return null;
  }
  if (lines.length === 0) return null;
  Deno.writeTextFileSync(file, lines.slice(1).join("\n"));
  return lines[0].trim();
}

scope.onmessage = (event) => {
  const message = event.data;
  if (message.k === "call" && message.m === "init") {
    const init = message.a[0] as WorkerInit;
    const failure = init.index === 1 ? nextFailure(init.source) : null;
    if (failure === "reject") {
      const e = { name: "Error", message: "worker 1 could not start (on purpose)" };
      return scope.postMessage({ k: "err", id: message.id, e });
    }
    if (failure === "crash") {
      setTimeout(() => {
        throw new Error("worker 1 crashed while starting, on purpose");
      });
      return;
    }
  }
  real(event);
};
