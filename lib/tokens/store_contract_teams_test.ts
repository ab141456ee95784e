/**
 * The token store contract for teams made through the admin API, run alike against every store (memory, SQLite
 * through the worker, PostgreSQL in a schema of its own; see store_contract_test_helpers.ts): `putTeam` round
 * trips every field, bumps the version shared with tokens, appends its audit entry to the tokens' trail,
 * refuses a second live team of a name (`TeamNameTakenError`) but frees the name of a deleted team, is a
 * compare-and-set with `basedOn` (`TokenChangedError`, nothing written), and `loadAll` leaves deleted teams out.
 */
import assert from "node:assert/strict";
import {
  type StoredTeam,
  TeamGoneError,
  TeamHasMembersError,
  TeamNameTakenError,
  TokenChangedError,
} from "./types.ts";
import { contract, makeAudit, makeToken } from "./store_contract_test_helpers.ts";
import type { AuditEntry } from "./types.ts";

let counter = 0;

function makeTeam(overrides: Partial<StoredTeam> = {}): StoredTeam {
  counter++;
  return {
    id: `tm_${counter.toString(16).padStart(24, "0")}`,
    name: "platform",
    description: "the platform group",
    budget: { cost: 500, period: "month" },
    limits: { rpm: 600, concurrent: 40 },
    models: ["chat-*"],
    created_at: "2026-11-24T09:00:00.000Z",
    updated_at: "2026-11-24T09:00:00.000Z",
    created_by: "ops-admin",
    deleted_at: null,
    ...overrides,
  };
}

function teamAudit(team: StoredTeam, overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    // Random: the helpers' token audits count from 1 too, and one trail holds both.
    id: `aud_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`,
    time: team.updated_at,
    actor: "ops-admin",
    action: "create",
    token_id: team.id,
    token_name: team.name,
    changes: { name: team.name },
    ...overrides,
  };
}

contract(
  "teams: putTeam then loadAll gives back every field, beside the tokens, at one version",
  async ({ store }) => {
    const full = makeTeam();
    const bare = makeTeam({ name: "bare", description: null, budget: null, limits: null, models: null });
    const before = await store.version();
    await store.putTeam(full, teamAudit(full));
    await store.putTeam(bare, teamAudit(bare));
    const token = makeToken({ team: "platform" });
    await store.put(token, makeAudit(token));
    const loaded = await store.loadAll();
    assert.deepEqual(loaded.teams, [bare, full], "by name");
    assert.deepEqual(loaded.tokens, [token]);
    assert.equal(loaded.version, before + 3, "one version for tokens and teams");
    assert.equal(await store.version(), loaded.version);
  },
);

contract(
  "teams: a second live team of a name is refused; a deleted team frees its name",
  async ({ store }) => {
    const first = makeTeam({ name: "research" });
    await store.putTeam(first, teamAudit(first));
    const again = makeTeam({ name: "research" });
    const version = await store.version();
    await assert.rejects(store.putTeam(again, teamAudit(again)), TeamNameTakenError);
    assert.equal(await store.version(), version, "nothing written");
    // A token of the same name is no team: names are per kind.
    const token = makeToken({ name: "research", team: null });
    await store.put(token, makeAudit(token));

    const deleted: StoredTeam = {
      ...first,
      deleted_at: "2026-11-24T10:00:00.000Z",
      updated_at: "2026-11-24T10:00:00.000Z",
    };
    await store.putTeam(deleted, teamAudit(deleted, { action: "delete", changes: {} }), first.updated_at);
    assert.deepEqual((await store.loadAll()).teams, [], "a deleted team is not loaded");
    await store.putTeam(again, teamAudit(again));
    assert.deepEqual((await store.loadAll()).teams.map((t) => t.id), [again.id], "the new team, a new id");
  },
);

contract("teams: putTeam with basedOn is a compare-and-set on updated_at", async ({ store }) => {
  const team = makeTeam({ name: "cas" });
  await assert.rejects(store.putTeam(team, teamAudit(team), "2026-01-01T00:00:00.000Z"), TokenChangedError);
  await store.putTeam(team, teamAudit(team), null); // null: only if there is no such row yet
  await assert.rejects(store.putTeam(team, teamAudit(team), null), TokenChangedError);
  const changed: StoredTeam = { ...team, limits: { rpm: 1 }, updated_at: "2026-11-24T09:00:01.000Z" };
  await store.putTeam(changed, teamAudit(changed, { action: "update" }), team.updated_at);
  const stale: StoredTeam = { ...team, limits: { rpm: 2 }, updated_at: "2026-11-24T09:00:02.000Z" };
  const version = await store.version();
  await assert.rejects(store.putTeam(stale, teamAudit(stale), team.updated_at), TokenChangedError);
  assert.equal(await store.version(), version);
  assert.deepEqual((await store.loadAll()).teams, [changed]);
});

contract(
  "teams: their audit entries are in the trail, delete included, found by id or name",
  async ({ store }) => {
    const team = makeTeam({ name: "audited" });
    const created = teamAudit(team, { time: "2026-11-24T09:00:00.000Z" });
    await store.putTeam(team, created);
    const gone: StoredTeam = {
      ...team,
      deleted_at: "2026-11-24T09:00:01.000Z",
      updated_at: "2026-11-24T09:00:01.000Z",
    };
    const deleted = teamAudit(gone, { action: "delete", changes: {}, time: gone.updated_at });
    await store.putTeam(gone, deleted);
    assert.deepEqual((await store.audit({ limit: 10, token: team.id })).entries, [deleted, created]);
    assert.deepEqual((await store.audit({ limit: 10, token: "audited", action: "delete" })).entries, [
      deleted,
    ]);
  },
);

contract("teams: a second handle sees a team written by the first", async ({ store, second }) => {
  if (second === undefined) return; // only PostgreSQL has another connection to look through
  const other = await second();
  const team = makeTeam({ name: "shared" });
  await store.putTeam(team, teamAudit(team));
  assert.deepEqual((await other.loadAll()).teams, [team]);
  const clash = makeTeam({ name: "shared" });
  await assert.rejects(other.putTeam(clash, teamAudit(clash)), TeamNameTakenError);
});

contract(
  "teams: a token joins a stored team only while it is live; a team with live members is not deleted",
  async ({ store }) => {
    const team = makeTeam({ name: "joinable" });
    await store.putTeam(team, teamAudit(team));
    const member = makeToken({ name: "member-1", team: "joinable", team_id: team.id });
    await store.put(member, makeAudit(member), undefined, team.id);

    // The delete is refused while a token that is not revoked names the team.
    const deleted: StoredTeam = {
      ...team,
      deleted_at: "2026-11-24T10:00:00.000Z",
      updated_at: "2026-11-24T10:00:00.000Z",
    };
    let version = await store.version();
    const refused = await store.putTeam(deleted, teamAudit(deleted, { action: "delete" }), team.updated_at)
      .then(() => null, (err) => err);
    assert.ok(refused instanceof TeamHasMembersError, String(refused));
    assert.deepEqual(refused.members, ["member-1"]);
    assert.equal(await store.version(), version, "nothing written");

    // Once the member is revoked, the delete goes through; then no token joins the deleted team.
    const revoked = { ...member, revoked_at: "2026-11-24T09:30:00.000Z", secrets: [] };
    await store.put(revoked, makeAudit(revoked));
    await store.putTeam(deleted, teamAudit(deleted, { action: "delete" }), team.updated_at);
    const late = makeToken({ name: "member-2", team: "joinable", team_id: team.id });
    version = await store.version();
    await assert.rejects(store.put(late, makeAudit(late), undefined, team.id), TeamGoneError);
    assert.equal(await store.version(), version, "nothing written");
    assert.equal((await store.loadAll()).tokens.some((t) => t.name === "member-2"), false);
  },
);

contract(
  "teams: membership is by the team's id: a token of an earlier team of the name does not hold a new one",
  async ({ store }) => {
    // Joined the config's "reused" (id `team_reused`), which the file dropped since; then a team is made here
    // under the name. The token is not the new team's member, so the new team can be deleted.
    const old = makeToken({ name: "old-member", team: "reused", team_id: "team_reused" });
    await store.put(old, makeAudit(old));
    const team = makeTeam({ name: "reused" });
    await store.putTeam(team, teamAudit(team));
    const deleted: StoredTeam = {
      ...team,
      deleted_at: "2026-11-24T10:00:00.000Z",
      updated_at: "2026-11-24T10:00:00.000Z",
    };
    await store.putTeam(deleted, teamAudit(deleted, { action: "delete" }), team.updated_at);
    assert.deepEqual((await store.loadAll()).teams, []);
    assert.equal((await store.loadAll()).tokens.find((t) => t.id === old.id)?.team_id, "team_reused");
  },
);
