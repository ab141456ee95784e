/**
 * The workers' part of a reload of `serve --workers N` (`primary.ts` validates the file once and decides). All or
 * nothing, in two phases: every worker sets the one validated config up beside the one it serves (which may fail:
 * its providers' setup), and only once every worker did, and the primary agrees, does each swap it in (which cannot
 * fail); otherwise each forgets it, so a failed reload leaves every worker on the old config. Then every worker is
 * told the outcome, which its `/readyz` shows.
 *
 * @module
 */
import type { ValidationResult } from "../config/load.ts";
import type { ConfigIssue } from "../config/types.ts";
import type { ReloadStatus } from "../reload.ts";
import type { Channel } from "./channel.ts";

/** A worker as a reload reaches it. */
interface Reached {
  readonly channel: Channel;
}

/** A reload's outcome as the primary alone knows it: failed when there are `issues` (the previous config kept). */
export function reloadOutcome(trigger: string, issues: readonly ConfigIssue[]): ReloadStatus {
  return { ok: issues.length === 0, at: new Date().toISOString(), trigger, issues, restart_required: [] };
}

/**
 * Phase one: every worker of `workers` sets `validation` up, swapping nothing in. A worker's failure is the
 * reload's; a worker that is no longer `serving` (it died meanwhile) is left out, since its replacement starts in
 * the state the reload's outcome decides. Null when no worker answered.
 */
export async function prepareInWorkers<W extends Reached>(
  workers: readonly W[],
  serving: (worker: W) => boolean,
  trigger: string,
  validation: ValidationResult,
): Promise<ReloadStatus | null> {
  const statuses = await Promise.all(
    workers.map(async (worker): Promise<ReloadStatus | null> => {
      try {
        return await worker.channel.call<ReloadStatus>("reload.prepare", trigger, validation);
      } catch (err) {
        // One still serving could not set it up, and the reload is not a success.
        if (!serving(worker)) return null;
        const message = `a worker did not apply it: ${err instanceof Error ? err.message : String(err)}`;
        return reloadOutcome(trigger, [{ path: "", message }]);
      }
    }),
  );
  return statuses.find((s) => s !== null && !s.ok) ?? statuses.find((s) => s !== null) ?? null;
}

/**
 * Phase two, once the primary decided: every worker of `workers` swaps in what it prepared (`commit`), or forgets
 * it. A worker's swap cannot fail (its new state is set up already), so one still `serving` that does not say it
 * swapped is `broken` (a bug, or a worker that lost what it prepared), and the caller replaces it: no worker serves
 * other than the outcome. One that died meanwhile is replaced anyway.
 */
export async function finishInWorkers<W extends Reached>(
  workers: readonly W[],
  serving: (worker: W) => boolean,
  commit: boolean,
  broken: (worker: W) => void,
): Promise<void> {
  await Promise.all(workers.map(async (worker) => {
    const swapped = await worker.channel.call(commit ? "reload.commit" : "reload.discard").then(
      (answer) => answer === true,
      () => false,
    );
    // What a worker discards it never swaps in: one that cannot answer is left as it is.
    if (commit && !swapped && serving(worker)) broken(worker);
  }));
}

/**
 * Tells every worker the reload's outcome as the primary decided it, which the worker's `/readyz` shows rather than
 * what its own reloader saw: a reload the primary refused before asking any worker (a stored money budget left
 * without a price) shows on every worker, and `restart_required` is counted against the gateway's start on every
 * worker, a replacement started on a later config too. Waited for, so that once `POST /admin/reload` is answered
 * every worker's `/readyz` says so; a worker that cannot answer (dying) is not waited for.
 */
export async function tellWorkers(workers: readonly Reached[], status: ReloadStatus): Promise<void> {
  await Promise.all(workers.map((w) => w.channel.call("reload.status", status).catch(() => {})));
}
