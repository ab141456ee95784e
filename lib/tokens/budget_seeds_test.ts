/**
 * Budget seeds beside the token directory's loads: a change that takes access away is served at once however
 * long other budgets' seeds take (docs/admin_api.md: every replica within 2 seconds), while a budget that was
 * never seeded is never served (a new token waits for its first seed; a changed budget keeps the one served
 * before); seeds run a few at a time, and a failed one is retried in the background, not on every load.
 */
import assert from "node:assert/strict";
import { hashToken } from "../auth/authenticate.ts";
import { parseConfigText } from "../config/load.ts";
import type { ResolvedConfig } from "../config/types.ts";
import { createMemoryLogger } from "../log.ts";
import { SEED_CONCURRENCY, servedRows } from "./budget_seeds.ts";
import { createTokenDirectory } from "./directory.ts";
import { createMemoryTokenStore } from "./store_memory.ts";
import { creationAudit, storedTeam, storedToken } from "./stored_rows_test_helpers.ts";
import type { StoredTeam, StoredToken } from "./types.ts";

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-a: { type: chat, targets: [ { provider: local, model: echo } ] }
  chat-b: { type: chat, targets: [ { provider: local, model: echo } ] }
`;

function state(): { config: ResolvedConfig } {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return { config: result.config };
}

/** A promise resolved from outside. */
function latch<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => open = resolve);
  return { promise, open };
}

/** Waits for `done` by turns of the event loop, up to `ms` (the docs' bound, not a guess at a duration). */
async function within(ms: number, done: () => boolean): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  return done();
}

const DAY_TOKENS = { tokens: 1000, period: "day" as const };
const served = (s: { config: ResolvedConfig }, name: string) =>
  s.config.tokens.get(hashToken(`secret-of-${name}`));

Deno.test("budget seeds: a revoke is served while a new token's first seed is under way, which waits for it", async () => {
  const store = createMemoryTokenStore();
  const seedOf = new Map<string, ReturnType<typeof latch<string[]>>>();
  const directory = createTokenDirectory({
    store,
    logger: createMemoryLogger(),
    pollMs: 60_000,
    seedBudgets: (tokens) => {
      const held = latch<string[]>();
      seedOf.set(tokens[0].name, held);
      return held.promise;
    },
  });
  const s = state();
  try {
    const victim = storedToken("victim");
    await store.put(victim, creationAudit(victim));
    await directory.refresh();
    assert.ok(served(directory.apply(s), "victim"));

    const fresh = storedToken("fresh", { budget: DAY_TOKENS });
    await store.put(fresh, creationAudit(fresh));
    const created = directory.refresh(); // the slow seed of `fresh` starts and stays under way
    assert.ok(await within(2_000, () => seedOf.has("fresh")));
    assert.equal(served(directory.apply(s), "fresh"), undefined, "not served before its budget is seeded");

    const revokedAt = "2026-11-24T10:00:00.000Z";
    await store.put(
      { ...victim, revoked_at: revokedAt, updated_at: revokedAt, secrets: [] },
      creationAudit(victim),
    );
    const revoked = directory.refresh();
    assert.ok(
      await within(2_000, () => served(directory.apply(s), "victim") === undefined),
      "the revoke is served while the other token's seed is still under way",
    );
    assert.equal(served(directory.apply(s), "fresh"), undefined);

    seedOf.get("fresh")!.open([]);
    await created;
    await revoked;
    assert.ok(served(directory.apply(s), "fresh"), "served once its seed is over");
  } finally {
    for (const held of seedOf.values()) held.open([]);
    await directory.close();
  }
});

Deno.test("budget seeds: a failed seed is served and retried in the background, not before the next change", async () => {
  const store = createMemoryTokenStore();
  const retry = latch<string[]>();
  let calls = 0;
  const directory = createTokenDirectory({
    store,
    logger: createMemoryLogger(),
    pollMs: 60_000, // no retry is due during the test: a load must not retry it
    seedBudgets: (tokens) => ++calls === 1 ? Promise.resolve(tokens.map((t) => t.id)) : retry.promise,
  });
  const s = state();
  try {
    const budgeted = storedToken("budgeted", { budget: DAY_TOKENS });
    const victim = storedToken("victim");
    for (const t of [budgeted, victim]) await store.put(t, creationAudit(t));
    await directory.refresh();
    assert.equal(calls, 1);
    assert.ok(served(directory.apply(s), "budgeted"), "a failed seed is served meanwhile");

    const revokedAt = "2026-11-24T10:00:00.000Z";
    await store.put(
      { ...victim, revoked_at: revokedAt, updated_at: revokedAt, secrets: [] },
      creationAudit(victim),
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answered = await Promise.race([
      directory.refresh().then(() => true),
      new Promise<false>((r) => timer = setTimeout(() => r(false), 2_000)),
    ]);
    clearTimeout(timer);
    assert.ok(answered, "the change's own refresh does not wait for another token's seed to be retried");
    assert.equal(served(directory.apply(s), "victim"), undefined);
    assert.equal(calls, 1, "not retried by a load before its wait is over");
  } finally {
    retry.open([]);
    await directory.close();
  }
});

Deno.test("budget seeds: a changed budget waits for its seed, the rest of the change does not", async () => {
  const store = createMemoryTokenStore();
  const held = latch<string[]>();
  let calls = 0;
  const directory = createTokenDirectory({
    store,
    logger: createMemoryLogger(),
    pollMs: 60_000,
    seedBudgets: () => ++calls === 1 ? Promise.resolve([]) : held.promise,
  });
  const s = state();
  try {
    const token = storedToken("changing", { budget: DAY_TOKENS });
    await store.put(token, creationAudit(token));
    await directory.refresh();
    const monthCost = { cost: 5, period: "month" as const };
    await store.put({
      ...token,
      models: ["chat-a"],
      budget: monthCost,
      updated_at: "2026-11-24T10:00:00.000Z",
    }, creationAudit(token));
    const changed = directory.refresh();
    assert.ok(await within(2_000, () => calls === 2), "the new budget's seed is under way");
    const during = served(directory.apply(s), "changing");
    assert.deepEqual([...during?.aliases ?? []], ["chat-a"], "the narrower models are served at once");
    assert.deepEqual(during?.budget, DAY_TOKENS, "the budget seeded before is kept meanwhile");
    held.open([]);
    await changed;
    assert.deepEqual(served(directory.apply(s), "changing")?.budget, monthCost);
  } finally {
    held.open([]);
    await directory.close();
  }
});

Deno.test("budget seeds: new budgets are seeded a few at a time, not one after another", async () => {
  const store = createMemoryTokenStore();
  const held = latch<string[]>();
  let running = 0;
  let most = 0;
  const directory = createTokenDirectory({
    store,
    logger: createMemoryLogger(),
    pollMs: 60_000,
    seedBudgets: async (tokens) => {
      running += tokens.length;
      most = Math.max(most, running);
      const failed = await held.promise;
      running -= tokens.length;
      return failed;
    },
  });
  try {
    for (let i = 0; i < SEED_CONCURRENCY * 3; i++) {
      const t = storedToken(`budgeted-${i}`, { budget: DAY_TOKENS });
      await store.put(t, creationAudit(t));
    }
    const loaded = directory.refresh();
    assert.ok(await within(2_000, () => most >= SEED_CONCURRENCY), `seeds run side by side (${most})`);
    held.open([]);
    await loaded;
    assert.equal(most, SEED_CONCURRENCY, "never more at once than the bound");
    assert.equal(directory.status().count, SEED_CONCURRENCY * 3);
  } finally {
    held.open([]);
    await directory.close();
  }
});

Deno.test("budget seeds: a token joining a team whose budget waits keeps its team meanwhile; a new one waits", () => {
  const before = storedTeam("old-team");
  const fresh = storedTeam("new-team", { budget: DAY_TOKENS });
  const mover = storedToken("mover", { team: before.name, team_id: before.id });
  const newcomer = storedToken("newcomer", { team: fresh.name, team_id: fresh.id });
  const pending = (owner: StoredToken | StoredTeam) => owner.id === fresh.id;
  const moved = { ...mover, team: fresh.name, team_id: fresh.id };
  const view = servedRows([moved, newcomer], [before, fresh], { tokens: [mover], teams: [before] }, pending);
  assert.deepEqual(view.tokens.map((t) => [t.name, t.team_id]), [["mover", before.id]]);
  const settled = servedRows([moved, newcomer], [before, fresh], view, () => false);
  assert.deepEqual(settled.tokens.map((t) => [t.name, t.team_id]), [["mover", fresh.id], [
    "newcomer",
    fresh.id,
  ]]);
});
