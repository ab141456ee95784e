/**
 * What a reload of `serve --workers N` waits for before seeding budgets a second time: the requests open in the
 * workers at its swap, as the primary knows them from their reports (`WorkerLedger.open`). They were admitted
 * without a budget the reload added, so their spend reaches its counter only through the usage store, once
 * their records are there. A request's record is read before its end (`ReportBatch`), so once every one of
 * them has ended, or its worker died (which records its open requests), their records are in the pipeline.
 *
 * @module
 */
import type { WorkerLedger } from "./primary_methods.ts";

/** A worker as the primary holds it. */
interface Watched {
  readonly ledger: WorkerLedger;
}

/** The waits of reloads still under way, checked as the primary reads the workers' reports. */
export class OpenRequestsWatch<S extends Watched> {
  #watches: { left: Map<S, number[]>; over: () => void }[] = [];

  /** Resolves once the requests open now in `workers` have ended (checked by {@linkcode check}). */
  whenOver(workers: readonly S[]): Promise<void> {
    const left = new Map<S, number[]>();
    for (const worker of workers) {
      if (worker.ledger.open.size > 0) left.set(worker, [...worker.ledger.open.keys()]);
    }
    if (left.size === 0) return Promise.resolve();
    return new Promise((over) => this.#watches.push({ left, over }));
  }

  /** After the reports were read: ends the waits whose requests have all ended, or whose workers are gone. */
  check(live: readonly S[]): void {
    if (this.#watches.length === 0) return;
    this.#watches = this.#watches.filter((watch) => {
      for (const [worker, ids] of watch.left) {
        if (!live.includes(worker) || ids.every((n) => !worker.ledger.open.has(n))) watch.left.delete(worker);
      }
      if (watch.left.size > 0) return true;
      watch.over();
      return false;
    });
  }
}
