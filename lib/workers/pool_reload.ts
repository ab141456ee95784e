/**
 * The workers' part of a reload of `serve --workers N` (`primary.ts` validates the file once and decides): each
 * worker swaps the one validated config in, then every worker is told the outcome, which its `/readyz` shows.
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
 * Has every worker of `workers` resolve `validation` and swap it in. A worker's failure is the reload's; a worker
 * that is no longer `serving` (it died meanwhile) is left out, since its replacement starts on the reload's
 * result. Null when no worker answered.
 */
export async function applyInWorkers<W extends Reached>(
  workers: readonly W[],
  serving: (worker: W) => boolean,
  trigger: string,
  validation: ValidationResult,
): Promise<ReloadStatus | null> {
  const statuses = await Promise.all(
    workers.map(async (worker): Promise<ReloadStatus | null> => {
      try {
        return await worker.channel.call<ReloadStatus>("reload.apply", trigger, validation);
      } catch (err) {
        // One still serving did not swap the config in, and the reload is not a success.
        if (!serving(worker)) return null;
        const message = `a worker did not apply it: ${err instanceof Error ? err.message : String(err)}`;
        return reloadOutcome(trigger, [{ path: "", message }]);
      }
    }),
  );
  return statuses.find((s) => s !== null && !s.ok) ?? statuses.find((s) => s !== null) ?? null;
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
