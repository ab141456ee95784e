/**
 * `/metrics` of a pool whose workers die and are replaced. A worker's counters live in its own thread, so a
 * sum over the live workers alone drops what a dead one had counted, and Prometheus reads the drop as a reset.
 * A worker that crashed cannot be asked, so the primary keeps what each worker last answered to a scrape and,
 * when one dies, keeps its counters and histograms from then on (its gauges, streams open and the like, end
 * with it). A scrape so never sees a counter go down; what the dead worker counted after its last scrape is
 * lost (the requests it had open are counted by the primary, as failed: `primary.ts`).
 *
 * @module
 */
import { cumulativeFamilies, sumExpositions } from "./metrics_sum.ts";

/** The metrics of the live workers and of the dead ones, summed; see the module's description. */
export class PoolMetrics<W extends object> {
  /** What each live worker answered to its latest scrape. */
  readonly #last = new WeakMap<W, string>();
  /** The counters and histograms of the workers that died, summed, as of their last scrape. */
  #retired = "";

  /**
   * Asks every worker in `live()` for its metrics (`ask`: "" when it cannot answer, then its last answer is
   * taken) and sums them with the dead workers' and the primary's (`primary`). A worker that died while asked counts as dead: its answer, if any,
   * is left out, as {@linkcode retire} has kept its last one.
   */
  async sum(live: () => readonly W[], ask: (worker: W) => Promise<string>, primary: string): Promise<string> {
    const asked = live();
    const texts = await Promise.all(asked.map(ask));
    const still = new Set(live());
    const answered: string[] = [];
    for (const [i, worker] of asked.entries()) {
      if (!still.has(worker)) continue;
      // One that could not answer (busy dying, say) counts with its last answer, not as nothing.
      if (texts[i] !== "") this.#last.set(worker, texts[i]);
      answered.push(this.#last.get(worker) ?? "");
    }
    return sumExpositions([...answered, this.#retired], primary);
  }

  /** `worker` died: what it counted up to its last scrape is kept in every later sum. */
  retire(worker: W): void {
    const last = this.#last.get(worker);
    if (last === undefined) return;
    this.#last.delete(worker);
    this.#retired = cumulativeFamilies(sumExpositions([this.#retired, last]));
  }
}
