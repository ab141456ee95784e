/**
 * How `/admin/tokens` writes to the token store (`tokens.ts` decides what to write): each write with its
 * audit entry, at a time that orders it, and each change of a stored token (PATCH, revoke, rotate) as a
 * read-modify-write that never overwrites a change it did not see.
 *
 * A change reads the token, works out the new token from it and writes it as a compare-and-set on the
 * `updated_at` it read (`TokenStore.put`'s `basedOn`), and every write moves `updated_at` forward
 * ({@linkcode writeTime}). Without that, two rotations at once each wrote a secret list that lacked the other's
 * secret, and only the last one written held. This replica makes its changes of one token one at a time
 * ({@linkcode OneAtATime}), so they all take effect, each over what the one before it left; a change that lost
 * to another replica's is worked out again from the token as it is then, and only after
 * {@linkcode CHANGE_ATTEMPTS} such losses is it refused, 409 `token_changed_concurrently`, having changed
 * nothing.
 *
 * @module
 */
import { GatewayError, printable } from "../../errors.ts";
import { randomHex } from "../../encoding/random_hex.ts";
import type { TokenDirectory } from "../../tokens/directory.ts";
import { OneAtATime } from "../../tokens/one_at_a_time.ts";
import {
  type AuditAction,
  type AuditEntry,
  type StoredToken,
  TeamGoneError,
  TokenChangedError,
  TokenNameTakenError,
} from "../../tokens/types.ts";
import { badField } from "../../tokens/field_errors.ts";
import { teamsById, tokenTeamId } from "../../tokens/team_identity.ts";
import type { RequestContext } from "../../http/context.ts";

/**
 * How many times a change of a stored token is worked out and written before it is refused because other
 * replicas kept changing the token in between (each loss means another change was written, so the fleet as a
 * whole always makes progress).
 */
export const CHANGE_ATTEMPTS = 8;

export function conflict(message: string, code: string): GatewayError {
  return new GatewayError(409, message, { type: "invalid_request_error", code });
}

export function nameTaken(name: string): GatewayError {
  return conflict(`A token named '${printable(name)}' already exists.`, "token_name_taken");
}

function changedConcurrently(): GatewayError {
  return conflict(
    "This token was changed by other requests at the same moment, and this change could not be made; nothing " +
      "was changed by it. Read the token and try again.",
    "token_changed_concurrently",
  );
}

/** The 503 of a write the store did not take (logged: an operator must hear of a store that fails writes). */
export function storeUnavailable(ctx: RequestContext, err: unknown): GatewayError {
  ctx.logger.error("token_store_write_failed", { error: err instanceof Error ? err.message : String(err) });
  return new GatewayError(503, "The token store cannot be reached; nothing was changed. Try again.", {
    type: "server_error",
    code: "token_store_unavailable",
    cause: err,
  });
}

/** What a directory (a gateway) keeps to order its writes: its queues of changes by token id, its last time. */
interface Writer {
  readonly queue: OneAtATime;
  lastMs: number;
}
const writers = new WeakMap<TokenDirectory, Writer>();

function writerOf(directory: TokenDirectory): Writer {
  let writer = writers.get(directory);
  if (writer === undefined) writers.set(directory, writer = { queue: new OneAtATime(), lastMs: 0 });
  return writer;
}

/**
 * This directory's queue of changes by key: a token's id, or `team:<name>` for a team (`team_writes.ts`), so a
 * replica's changes of one token or team run one at a time.
 */
export function writeQueue(directory: TokenDirectory): OneAtATime {
  return writerOf(directory).queue;
}

/**
 * The time of a write (the token's `updated_at`, its audit entry's `time`): now, but after this replica's
 * previous write and, for a change, after `current.updated_at`, by a millisecond at least (it runs ahead of
 * the clock only for writes less than a millisecond apart). So every write of a token moves its `updated_at`
 * forward whatever the replicas' clocks say, which makes it the token's revision (what the compare-and-set
 * compares), and the audit trail (ordered by time) lists any one token's writes, and one replica's, in the
 * order they were written. A team's writes (`team_writes.ts`) take their times here too, so they share that
 * order.
 */
export function writeTime(
  directory: TokenDirectory,
  current?: { readonly updated_at: string },
): { ms: number; iso: string } {
  const writer = writerOf(directory);
  const after = current === undefined ? 0 : Date.parse(current.updated_at) + 1;
  const ms = Math.max(Date.now(), writer.lastMs + 1, after);
  writer.lastMs = ms;
  return { ms, iso: new Date(ms).toISOString() };
}

/**
 * Writes `token` with its audit entry (at `token.updated_at`), then reloads, so this replica honours the
 * change before it answers. `basedOn` (the `updated_at` the change was worked out from) makes the write a
 * compare-and-set; a lost one rejects with the store's {@linkcode TokenChangedError}.
 */
export async function write(
  ctx: RequestContext,
  directory: TokenDirectory,
  token: StoredToken,
  action: AuditAction,
  changes: Record<string, unknown>,
  basedOn?: string,
): Promise<void> {
  const entry: AuditEntry = {
    id: `aud_${randomHex(12)}`,
    time: token.updated_at,
    actor: ctx.admin?.name ?? "unknown",
    action,
    token_id: token.id,
    token_name: token.name,
    changes,
  };
  // A live token in a stored team: the store writes it only if that team (by id) is still there (a delete of
  // it may have been answered since this request validated the name). A token whose team is already gone is
  // in none, and its other fields may still change.
  const id = token.revoked_at === null ? tokenTeamId(token) : null;
  const team = id === null ? undefined : teamsById(ctx.state.config.teams).get(id);
  try {
    await directory.store.put(token, entry, basedOn, team?.source === "api" ? team.id : undefined);
  } catch (err) {
    if (err instanceof TokenNameTakenError) throw nameTaken(token.name);
    if (err instanceof TeamGoneError) {
      throw badField("team", `the team "${printable(err.teamName)}" was deleted while this request was made`);
    }
    if (err instanceof TokenChangedError) throw err;
    throw storeUnavailable(ctx, err);
  }
  ctx.logger.info("token_changed", { action, token: token.name, id: token.id, actor: entry.actor });
  await directory.refresh();
}

/** What a change decided from the token as it is: a token to write, or an answer with nothing to write. */
export type Decision =
  | { answer: Response }
  | {
    token: StoredToken;
    action: AuditAction;
    changes: Record<string, unknown>;
    /** The answer once `token` is written. */
    answer: () => Response;
  };

/**
 * Reads the stored token `id` (`find`: loaded just now), lets `decide` work out the change from it, and writes
 * that as a compare-and-set, one change of that token at a time on this replica. A write that lost to another
 * replica's is decided again from the token as it is now, up to {@linkcode CHANGE_ATTEMPTS} times, then
 * refused with 409 `token_changed_concurrently`. `decide` may throw (a 400, a 409) and may run more than once.
 */
export function changeStored(
  ctx: RequestContext,
  directory: TokenDirectory,
  id: string,
  find: () => Promise<StoredToken>,
  decide: (current: StoredToken) => Decision,
): Promise<Response> {
  return writerOf(directory).queue.run(id, async () => {
    for (let attempt = 1;; attempt++) {
      const current = await find();
      // A token read while the store cannot be read is the one loaded last: nothing is worked out from it.
      const status = directory.status();
      if (!status.ok) {
        throw storeUnavailable(ctx, new Error(status.error ?? "the token store cannot be read"));
      }
      const decision = decide(current);
      if (!("token" in decision)) return decision.answer;
      try {
        await write(ctx, directory, decision.token, decision.action, decision.changes, current.updated_at);
        return decision.answer();
      } catch (err) {
        if (!(err instanceof TokenChangedError)) throw err;
        if (attempt >= CHANGE_ATTEMPTS) {
          ctx.logger.warn("token_changed_concurrently", { id, action: decision.action, attempts: attempt });
          throw changedConcurrently();
        }
      }
    }
  });
}
