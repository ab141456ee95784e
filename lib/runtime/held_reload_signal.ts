/**
 * SIGHUP heard from the moment `serve` begins, and held while it starts. Without a handler the signal's default
 * action ends the process at once (exit 129), and with `--workers N` worker 0 serves before the others listen,
 * so a SIGHUP then would cut its streams and lose their usage records. `serve` installs this before anything
 * starts; the reloader takes the signals once it exists (`listen`), and a signal that came before the start was
 * over runs its reload once `serve` says so (`open`), or is dropped with the start (`drop`).
 *
 * @module
 */
import type { Runtime } from "./types.ts";

/** The reload signal of a starting `serve`: see the module's description. */
export interface HeldReloadSignal {
  /**
   * Where a starting gateway takes its reload signals (as {@linkcode Runtime.onReloadSignal}, one listener): they
   * reach `handler` once {@linkcode open} was called; one that came before is held until then.
   */
  listen(handler: () => void): void;
  /** The start is over: a signal held during it reaches the listener now (once), and every later one at once. */
  open(): void;
  /** Whether a signal arrived that no listener has had yet. */
  held(): boolean;
}

/** Installs the reload-signal handler of `runtime` now and holds what it hears until {@linkcode HeldReloadSignal.open}. */
export function holdReloadSignal(runtime: Pick<Runtime, "onReloadSignal">): HeldReloadSignal {
  let listener: (() => void) | null = null;
  let opened = false;
  let pending = false;
  const deliver = () => {
    if (!opened || listener === null) return;
    if (!pending) return;
    pending = false;
    listener();
  };
  runtime.onReloadSignal(() => {
    pending = true;
    deliver();
  });
  return {
    listen(handler) {
      listener = handler;
      deliver();
    },
    open() {
      opened = true;
      deliver();
    },
    held: () => pending,
  };
}
