/**
 * Tokens issued through the admin API kept in memory: for a gateway without a database (`usage.sqlite: none`)
 * and for tests. Lost at restart; only this process writes, so there is nothing to watch.
 *
 * Rows are copied in and out (`structuredClone`), so a caller changing an object it put or loaded cannot
 * change what is stored, as with the SQL stores, which keep columns and JSON text.
 *
 * @module
 */
import { isoToMs, liveSecrets, pageAudit, type SequencedAuditEntry } from "./store_rules.ts";
import { tokenTeamId } from "./team_identity.ts";
import {
  type StoredTeam,
  type StoredToken,
  TeamGoneError,
  TeamHasMembersError,
  TeamNameTakenError,
  TokenChangedError,
  TokenNameTakenError,
  type TokenStore,
} from "./types.ts";

const byNameThenId = (a: { name: string; id: string }, b: { name: string; id: string }) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/**
 * A `TokenStore` in `Map`s; `put` and `putTeam` (their compare-and-set included) are atomic because each runs
 * to completion before any other call.
 */
export function createMemoryTokenStore(): TokenStore {
  const tokens = new Map<string, StoredToken>();
  const teams = new Map<string, StoredTeam>();
  const audit: SequencedAuditEntry[] = [];
  let version = 0;
  let seq = 0;

  return {
    kind: "memory",
    loadAll() {
      const rows = [...tokens.values()].sort(byNameThenId);
      const live = [...teams.values()].filter((t) => t.deleted_at === null).sort(byNameThenId);
      return Promise.resolve({ version, tokens: structuredClone(rows), teams: structuredClone(live) });
    },
    version() {
      return Promise.resolve(version);
    },
    put(token, entry, basedOn, joins) {
      try {
        if (basedOn !== undefined && (tokens.get(token.id)?.updated_at ?? null) !== basedOn) {
          return Promise.reject(new TokenChangedError(token.id));
        }
        if (joins !== undefined && teams.get(joins)?.deleted_at !== null) {
          return Promise.reject(new TeamGoneError(token.team ?? ""));
        }
        if (token.revoked_at === null) {
          for (const other of tokens.values()) {
            if (other.id !== token.id && other.revoked_at === null && other.name === token.name) {
              return Promise.reject(new TokenNameTakenError(token.name));
            }
          }
        }
        const now = Date.now();
        // Rows always have `team`, `team_id`, `end_user_limits` and `guardrails` (null: none), as the SQL stores' columns
        // give them back.
        const copy: StoredToken = {
          ...structuredClone(token),
          team: token.team ?? null,
          team_id: token.team_id ?? null,
          end_user_limits: structuredClone(token.end_user_limits ?? null),
          guardrails: token.guardrails ? [...token.guardrails] : null,
        };
        const timeMs = isoToMs(entry.time, "audit.time");
        for (const [id, other] of tokens) {
          const kept = liveSecrets(other.secrets, now);
          if (kept.length !== other.secrets.length) tokens.set(id, { ...other, secrets: kept });
        }
        tokens.set(copy.id, { ...copy, secrets: liveSecrets(copy.secrets, now) });
        audit.push({ seq: ++seq, timeMs, entry: structuredClone(entry) });
        version++;
        return Promise.resolve();
      } catch (error) {
        return Promise.reject(error);
      }
    },
    putTeam(team, entry, basedOn) {
      try {
        if (basedOn !== undefined && (teams.get(team.id)?.updated_at ?? null) !== basedOn) {
          return Promise.reject(new TokenChangedError(team.id));
        }
        if (team.deleted_at === null) {
          for (const other of teams.values()) {
            if (other.id !== team.id && other.deleted_at === null && other.name === team.name) {
              return Promise.reject(new TeamNameTakenError(team.name));
            }
          }
        } else {
          // Members by the team's identity, as the SQL stores check `team_id`: a token of an earlier team of this
          // name is not one.
          const members = [...tokens.values()].filter((t) =>
            t.revoked_at === null && tokenTeamId(t) === team.id
          );
          if (members.length > 0) {
            return Promise.reject(new TeamHasMembersError(team.name, members.map((t) => t.name)));
          }
        }
        const timeMs = isoToMs(entry.time, "audit.time");
        teams.set(team.id, structuredClone(team));
        audit.push({ seq: ++seq, timeMs, entry: structuredClone(entry) });
        version++;
        return Promise.resolve();
      } catch (error) {
        return Promise.reject(error);
      }
    },
    audit(query) {
      try {
        return Promise.resolve(structuredClone(pageAudit(audit, query)));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    close() {
      return Promise.resolve();
    },
  };
}
