/**
 * The token directory over the memory store: stored tokens join the config's token map (config tokens win a
 * name clash), each live secret authenticates until its grace end, changes made elsewhere arrive by the version
 * check, and a store that cannot be read leaves the last tokens serving (fail static) and says so.
 */
import assert from "node:assert/strict";
import { hashToken } from "../auth/authenticate.ts";
import { parseConfigText } from "../config/load.ts";
import type { ResolvedConfig } from "../config/types.ts";
import { createMemoryLogger } from "../log.ts";
import { GatewayMetrics } from "../metrics/gateway_metrics.ts";
import { createTokenDirectory } from "./directory.ts";
import { createMemoryTokenStore } from "./store_memory.ts";
import { creationAudit, storedToken } from "./stored_rows_test_helpers.ts";
import type { AuditEntry, StoredTeam, StoredToken, TokenStore } from "./types.ts";
import { eventually } from "../../tests/helpers/backstop.ts";

/**
 * A poll interval no test waits out: a directory given it loads only when told to (`refresh()`, its watch),
 * so what it loads shows what told it, never a version check that came by chance.
 */
const NEVER_POLLS_MS = 600_000;

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-a: { type: chat, targets: [ { provider: local, model: echo } ] }
  chat-b: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed: { type: embedding, targets: [ { provider: local, model: hash } ] }
tokens:
  - { name: from-file, sha256: ${hashToken("gw-from-file-0123456789")}, models: ["*"] }
`;

function config(): ResolvedConfig {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.config;
}

/**
 * A memory store that can be made to fail, as a database that went away; `failedChecks` counts the version
 * checks it failed.
 */
function flakyStore(): TokenStore & { down: boolean; readonly failedChecks: number } {
  const inner = createMemoryTokenStore();
  const guard = <T>(
    f: () => Promise<T>,
  ) => (store.down ? Promise.reject(new Error("connection refused")) : f());
  let failedChecks = 0;
  const store = {
    down: false,
    get failedChecks() {
      return failedChecks;
    },
    kind: inner.kind,
    loadAll: () => guard(() => inner.loadAll()),
    version: () => {
      if (store.down) failedChecks++;
      return guard(() => inner.version());
    },
    put: (t: StoredToken, a: AuditEntry) => guard(() => inner.put(t, a)),
    putTeam: (t: StoredTeam, a: AuditEntry) => guard(() => inner.putTeam(t, a)),
    audit: inner.audit,
    close: inner.close,
  };
  return store;
}

Deno.test("directory: stored tokens join the config's, memoized per state and load", async () => {
  const store = createMemoryTokenStore();
  const ci = storedToken("ci-bot", { models: ["chat-*"], endpoints: ["chat"], max_tokens: 100 });
  await store.put(ci, creationAudit(ci));
  const off = storedToken("cache-off", { cache: false });
  await store.put(off, creationAudit(off));
  const aged = storedToken("cache-aged", { cache: { no_store: false, no_cache: true, max_age: 60_000 } });
  await store.put(aged, creationAudit(aged));
  const gone = storedToken("gone", { revoked_at: "2026-11-24T09:05:00.000Z" });
  await store.put(gone, creationAudit(gone));
  const directory = createTokenDirectory({ store, logger: createMemoryLogger(), pollMs: NEVER_POLLS_MS });
  try {
    await directory.refresh();
    const state = { config: config() };
    const applied = directory.apply(state);
    assert.equal(directory.apply(state), applied, "the same state at the same load: the same object");
    assert.notEqual(applied, state);
    const identity = applied.config.tokens.get(hashToken("secret-of-ci-bot"));
    assert.ok(identity, "the stored token authenticates");
    assert.deepEqual([...identity.aliases].sort(), ["chat-a", "chat-b"], "patterns expand over the aliases");
    assert.equal(identity.id, ci.id);
    assert.equal(identity.source, "api");
    assert.deepEqual([...identity.endpoints ?? []], ["chat"]);
    assert.equal(identity.maxTokens, 100);
    assert.equal(identity.cache, null, "no cache settings: as each request's headers say");
    const tokenOf = (name: string) => applied.config.tokens.get(hashToken(`secret-of-${name}`));
    assert.deepEqual(tokenOf("cache-off")?.cache, { noStore: true, noCache: false, maxAgeMs: null });
    assert.deepEqual(tokenOf("cache-aged")?.cache, { noStore: false, noCache: true, maxAgeMs: 60_000 });
    assert.equal(applied.config.tokens.get(hashToken("secret-of-gone")), undefined, "revoked: not served");
    assert.ok(applied.config.tokens.get(hashToken("gw-from-file-0123456789")), "config tokens stay");
    assert.equal(state.config.tokens.size, 1, "the config itself is not changed");
    assert.equal(directory.status().count, 3);

    const later = storedToken("later");
    await store.put(later, creationAudit(later));
    assert.equal(directory.apply(state), applied, "nothing new until the store is read again");
    await directory.refresh();
    const next = directory.apply(state);
    assert.notEqual(next, applied);
    assert.ok(next.config.tokens.get(hashToken("secret-of-later")));
  } finally {
    await directory.close();
  }
});

Deno.test("directory: a rotated-out secret works until its grace end, capped by the token's expiry", async () => {
  const store = createMemoryTokenStore();
  const now = Date.now();
  const tokenEnd = new Date(now + 60_000).toISOString();
  const t = storedToken("rotated", {
    expires_at: tokenEnd,
    secrets: [
      { sha256: hashToken("new"), expires_at: null },
      { sha256: hashToken("old"), expires_at: new Date(now + 5_000).toISOString() },
      { sha256: hashToken("older"), expires_at: new Date(now + 3_600_000).toISOString() },
    ],
  });
  await store.put(t, creationAudit(t));
  const directory = createTokenDirectory({ store, logger: createMemoryLogger(), pollMs: NEVER_POLLS_MS });
  try {
    await directory.refresh();
    const tokens = directory.apply({ config: config() }).config.tokens;
    assert.equal(tokens.get(hashToken("new"))?.expiresAt, Date.parse(tokenEnd));
    assert.equal(tokens.get(hashToken("old"))?.expiresAt, now + 5_000);
    assert.equal(tokens.get(hashToken("older"))?.expiresAt, Date.parse(tokenEnd), "capped by the token");
  } finally {
    await directory.close();
  }
});

Deno.test("directory: a config token wins a name clash, logged once", async () => {
  const store = createMemoryTokenStore();
  const clash = storedToken("from-file");
  await store.put(clash, creationAudit(clash));
  const logger = createMemoryLogger();
  const directory = createTokenDirectory({ store, logger, pollMs: NEVER_POLLS_MS });
  try {
    await directory.refresh();
    directory.apply({ config: config() });
    const tokens = directory.apply({ config: config() }).config.tokens;
    assert.equal(tokens.get(hashToken("secret-of-from-file")), undefined);
    assert.equal(logger.lines.filter((l) => l.msg === "token_name_clash").length, 1);
    assert.ok(!JSON.stringify(logger.lines).includes(clash.secrets[0].sha256), "no hash in the log");
  } finally {
    await directory.close();
  }
});

Deno.test("directory: fail static while the store is down, one log line per change of state", async () => {
  const store = flakyStore();
  const t = storedToken("kept");
  await store.put(t, creationAudit(t));
  const logger = createMemoryLogger();
  const metrics = new GatewayMetrics();
  const directory = createTokenDirectory({ store, logger, metrics, pollMs: 20 });
  try {
    await directory.refresh();
    assert.match(metrics.render(), /^gateway_token_store_up 1$/m);
    assert.match(metrics.render(), /^gateway_tokens_loaded 1$/m);
    const loadedAt = directory.status().loaded_at;
    store.down = true;
    await directory.refresh();
    // Several failed version checks, counted as they happen.
    await eventually("three failed version checks", () => store.failedChecks >= 3);
    const status = directory.status();
    assert.equal(status.ok, false);
    assert.equal(status.error, "connection refused");
    assert.equal(status.count, 1);
    assert.equal(status.loaded_at, loadedAt);
    assert.ok(
      directory.apply({ config: config() }).config.tokens.get(hashToken("secret-of-kept")),
      "still served",
    );
    assert.match(metrics.render(), /^gateway_token_store_up 0$/m);
    assert.equal(logger.lines.filter((l) => l.msg === "token_store_unreachable").length, 1);

    store.down = false;
    await eventually("the directory recovers by itself", () => directory.status().ok);
    assert.match(metrics.render(), /^gateway_token_store_up 1$/m);
    assert.equal(logger.lines.filter((l) => l.msg === "token_store_recovered").length, 1);
  } finally {
    await directory.close();
  }
});

Deno.test("directory: a change made elsewhere arrives by the version check, and by watch", async () => {
  const store = createMemoryTokenStore();
  let notify = () => {};
  let unwatched = false;
  const watched: TokenStore = {
    ...store,
    version: store.version,
    watch(onChange) {
      notify = onChange;
      return Promise.resolve(() => {
        unwatched = true;
        return Promise.resolve();
      });
    },
  };
  const polled = createTokenDirectory({ store, logger: createMemoryLogger(), pollMs: 30 });
  const listening = createTokenDirectory({
    store: watched,
    logger: createMemoryLogger(),
    pollMs: NEVER_POLLS_MS,
  });
  try {
    await polled.refresh();
    await listening.refresh();
    const t = storedToken("elsewhere");
    await store.put(t, creationAudit(t)); // another replica's write: nobody here calls refresh()
    await eventually("the version check finds it", () => polled.status().count === 1);
    assert.equal(listening.status().count, 0, "not loaded before the notification");
    notify();
    await eventually("the notification loads it", () => listening.status().count === 1);
  } finally {
    await polled.close();
    await listening.close();
  }
  assert.equal(unwatched, true, "close stops watching");
});

/**
 * Catches `setTimeout` rather than scheduling: each call's delay and callback go to `onArm` (nothing runs by
 * itself), so a test reads the interval that reaches the timer instead of waiting it out. Returns the undo.
 */
function catchTimers(onArm: (ms: number, fire: () => void) => void): () => void {
  const real = globalThis.setTimeout;
  const caught = (fire: () => void, ms?: number) => {
    onArm(ms ?? 0, fire);
    return 0;
  };
  globalThis.setTimeout = caught as unknown as typeof setTimeout;
  return () => globalThis.setTimeout = real;
}

Deno.test("directory: without pollMs, the store's version is checked every second (the documented safety net under watch)", async () => {
  const store = createMemoryTokenStore();
  let checks = 0;
  const counted: TokenStore = { ...store, version: () => (checks++, store.version()) };
  const armed: { ms: number; fire: () => void }[] = [];
  const arm = (ms: number, fire: () => void) => armed.push({ ms, fire });
  let release = catchTimers(arm);
  let directory;
  try {
    directory = createTokenDirectory({ store: counted, logger: createMemoryLogger() });
  } finally {
    release();
  }
  try {
    await directory.refresh();
    assert.deepEqual(armed.map((a) => a.ms), [1_000], "the first check is armed a second away");
    assert.equal(checks, 0, "and not made before");
    // Its timer fires: one check, and the next armed a second after it (within the check's promise chain,
    // so the timers stay caught until then).
    const rearmed = Promise.withResolvers<void>();
    release = catchTimers((ms, fire) => (arm(ms, fire), rearmed.resolve()));
    try {
      armed[0].fire();
      await rearmed.promise;
    } finally {
      release();
    }
    assert.equal(checks, 1, "one version check");
    assert.deepEqual(armed.map((a) => a.ms), [1_000, 1_000], "the next check a second later");
  } finally {
    await directory.close();
  }
});

Deno.test("directory: a stored token whose budget seed failed is seeded again until it succeeds, then not again", async () => {
  const store = createMemoryTokenStore();
  const offered: string[] = [];
  let failing = true;
  const directory = createTokenDirectory({
    store,
    logger: createMemoryLogger(),
    pollMs: 10,
    seedBudgets: (tokens) => {
      offered.push(...tokens.map((t) => t.name));
      // the usage database is down for the first seed
      return Promise.resolve(failing ? tokens.map((t) => t.id) : []);
    },
  });
  try {
    const a = storedToken("budgeted", { budget: { tokens: 1000, period: "day" } });
    await store.put(a, creationAudit(a));
    await directory.refresh();
    assert.deepEqual(offered, ["budgeted"]);
    assert.equal(directory.status().count, 1, "served meanwhile");
    failing = false;
    await eventually("the failed seed is offered again", () => offered.length >= 2);
    assert.deepEqual(offered, ["budgeted", "budgeted"], "offered again without any change to the store");
    await directory.refresh();
    await directory.refresh();
    assert.deepEqual(offered, ["budgeted", "budgeted"], "seeded once it succeeded");
  } finally {
    await directory.close();
  }
});

Deno.test("directory: budgets of stored tokens are seeded once, when they first appear", async () => {
  const store = createMemoryTokenStore();
  const seededNames: string[] = [];
  const directory = createTokenDirectory({
    store,
    logger: createMemoryLogger(),
    pollMs: NEVER_POLLS_MS,
    seedBudgets: (tokens) => {
      seededNames.push(...tokens.map((t) => t.name));
      return Promise.resolve();
    },
  });
  try {
    const a = storedToken("budgeted", { budget: { tokens: 1000, period: "day" } });
    await store.put(a, creationAudit(a));
    const b = storedToken("unbudgeted");
    await store.put(b, creationAudit(b));
    await directory.refresh();
    await store.put({ ...a, disabled: true }, creationAudit(a));
    await directory.refresh();
    assert.deepEqual(seededNames, ["budgeted"]);
    await store.put({ ...a, budget: { cost: 5, period: "month" } }, creationAudit(a));
    await directory.refresh();
    assert.deepEqual(seededNames, ["budgeted", "budgeted"], "a budget in another unit is seeded afresh");
  } finally {
    await directory.close();
  }
});
