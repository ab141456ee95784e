/**
 * How `/admin/teams` writes to the token store (`team_changes.ts` decides what to write), the way
 * `token_writes.ts` does for tokens: each write with its audit entry (in the tokens' audit trail, under the
 * team's id and name), at a time from the same clock, then a reload before answering; each change of a stored
 * team (PATCH, DELETE) a read-modify-write that is a compare-and-set on the `updated_at` it read, made one at a
 * time per team on this replica and worked out again when another replica's change came in between.
 *
 * @module
 */
import type { TokenDirectory } from "../../tokens/directory.ts";
import {
  type AuditAction,
  type AuditEntry,
  type StoredTeam,
  TeamHasMembersError,
  TeamNameTakenError,
  TokenChangedError,
} from "../../tokens/types.ts";
import type { RequestContext } from "../../http/context.ts";
import { printable } from "../../errors.ts";
import type { GatewayError } from "../../errors.ts";
import { CHANGE_ATTEMPTS, conflict, storeUnavailable, writeQueue } from "./token_writes.ts";
import { randomHex } from "../../encoding/random_hex.ts";

/** 409 `team_name_taken`: a team of the config or a live stored team has the name. */
export function teamNameTaken(name: string): GatewayError {
  return conflict(`A team named '${printable(name)}' already exists.`, "team_name_taken");
}

/**
 * 409 `team_has_members`: a team is deleted only without members; `members` are their names as far as known
 * (none when the refusal came from another process).
 */
export function teamHasMembers(members: readonly string[]): GatewayError {
  const named = members.length === 0
    ? ""
    : ` (${members.slice(0, 5).map((m) => `'${printable(m)}'`).join(", ")}${
      members.length > 5 ? ", …" : ""
    })`;
  return conflict(
    `This team still has member token(s)${named}; move or revoke them first.`,
    "team_has_members",
  );
}

/**
 * Writes `team` with its audit entry (at `team.updated_at`), then reloads, so this replica serves the change
 * before it answers. `basedOn` makes the write a compare-and-set; a lost one rejects with the store's
 * {@linkcode TokenChangedError}.
 */
export async function writeTeam(
  ctx: RequestContext,
  directory: TokenDirectory,
  team: StoredTeam,
  action: AuditAction,
  changes: Record<string, unknown>,
  basedOn?: string,
): Promise<void> {
  const entry: AuditEntry = {
    id: `aud_${randomHex(12)}`,
    time: team.updated_at,
    actor: ctx.admin?.name ?? "unknown",
    action,
    token_id: team.id,
    token_name: team.name,
    changes,
  };
  try {
    await directory.store.putTeam(team, entry, basedOn);
  } catch (err) {
    if (err instanceof TeamNameTakenError) throw teamNameTaken(team.name);
    if (err instanceof TeamHasMembersError) throw teamHasMembers(err.members);
    if (err instanceof TokenChangedError) throw err;
    throw storeUnavailable(ctx, err);
  }
  ctx.logger.info("team_changed", { action, team: team.name, id: team.id, actor: entry.actor });
  await directory.refresh();
}

/** What a change decided from the team as it is: a team to write, or an answer with nothing to write. */
export type TeamDecision =
  | { answer: Response | Promise<Response> }
  | {
    team: StoredTeam;
    action: AuditAction;
    changes: Record<string, unknown>;
    /** The answer once `team` is written. */
    answer: () => Response | Promise<Response>;
  };

/**
 * Reads the stored team `name` (`find`: loaded just now; it throws the 404/409 of a team it cannot change),
 * lets `decide` work out the change, and writes it as a compare-and-set, one change of that team at a time on
 * this replica; one that lost to another replica's is decided again, up to {@linkcode CHANGE_ATTEMPTS} times,
 * then refused with 409 `team_changed_concurrently`. `decide` may throw and may run more than once.
 */
export function changeTeam(
  ctx: RequestContext,
  directory: TokenDirectory,
  name: string,
  find: () => Promise<StoredTeam>,
  decide: (current: StoredTeam) => TeamDecision,
): Promise<Response> {
  return writeQueue(directory).run(`team:${name}`, async () => {
    for (let attempt = 1;; attempt++) {
      const current = await find();
      const status = directory.status();
      if (!status.ok) {
        throw storeUnavailable(ctx, new Error(status.error ?? "the token store cannot be read"));
      }
      const decision = decide(current);
      if (!("team" in decision)) return await decision.answer;
      try {
        await writeTeam(ctx, directory, decision.team, decision.action, decision.changes, current.updated_at);
        return await decision.answer();
      } catch (err) {
        if (!(err instanceof TokenChangedError)) throw err;
        if (attempt >= CHANGE_ATTEMPTS) {
          ctx.logger.warn("team_changed_concurrently", {
            team: name,
            action: decision.action,
            attempts: attempt,
          });
          throw conflict(
            "This team was changed by other requests at the same moment, and this change could not be made; " +
              "nothing was changed by it. Read the team and try again.",
            "team_changed_concurrently",
          );
        }
      }
    }
  });
}
