/**
 * The workers' part of a reload of `serve --workers N` (`primary.ts` validates the file once and decides). All or
 * nothing, in two phases: every worker sets the one validated config up beside the one it serves (which may fail:
 * its providers' setup), and only once every worker did, and the primary agrees, does each swap it in (which cannot
 * fail); otherwise each forgets it, so a failed reload leaves every worker on the old config. A reload that no worker
 * set up, or none swapped in (each died or stopped answering first), failed: no worker checked it, and the
 * replacements start on the config before it, as the outcome says. Then every worker is told the outcome, which its
 * `/readyz` shows.
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

/** The failed outcome of a reload that no worker took: set up, or swapped in. */
export function noWorkerTookIt(trigger: string): ReloadStatus {
  const message =
    "no worker took it: every worker died or stopped answering during the reload (each is replaced " +
    "on the config before it; reload again once they serve)";
  return reloadOutcome(trigger, [{ path: "", message }]);
}

/**
 * Phase one: every worker of `workers` sets `validation` up, swapping nothing in. A worker's failure is the
 * reload's; a worker that is no longer `serving` (it died meanwhile, or was ended for not answering) is left out,
 * since its replacement starts in the state the reload's outcome decides. Failed when no worker answered.
 */
export async function prepareInWorkers<W extends Reached>(
  workers: readonly W[],
  serving: (worker: W) => boolean,
  trigger: string,
  validation: ValidationResult,
): Promise<ReloadStatus> {
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
  return statuses.find((s) => s !== null && !s.ok) ?? statuses.find((s) => s !== null) ??
    noWorkerTookIt(trigger);
}

/**
 * Phase two, once the primary decided `status`: every worker of `workers` swaps in what it prepared (when `status`
 * is a success), or forgets it. A worker's swap cannot fail (its new state is set up already), so one still
 * `serving` that does not say it swapped is `broken` (a bug, or a worker that lost what it prepared), and the caller
 * replaces it: no worker serves other than the outcome. One that died meanwhile is replaced anyway. The outcome is
 * `status`, unless no worker swapped it in: then it failed ({@linkcode noWorkerTookIt}).
 */
export async function finishInWorkers<W extends Reached>(
  workers: readonly W[],
  serving: (worker: W) => boolean,
  status: ReloadStatus,
  broken: (worker: W) => void,
): Promise<ReloadStatus> {
  const commit = status.ok;
  let swappedIn = 0;
  await Promise.all(workers.map(async (worker) => {
    const swapped = await worker.channel.call(commit ? "reload.commit" : "reload.discard").then(
      (answer) => answer === true,
      () => false,
    );
    // What a worker discards it never swaps in: one that cannot answer is left as it is.
    if (commit && !swapped && serving(worker)) broken(worker);
    if (swapped) swappedIn++;
  }));
  return commit && swappedIn === 0 ? noWorkerTookIt(status.trigger) : status;
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
