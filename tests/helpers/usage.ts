/**
 * Shared pieces of the usage tests: a record factory, wrappers that make a store slow, failing or blocked,
 * and readers of what ended up in the database and on disk.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { DatabaseSync } from "node:sqlite";
import type { UsageRecord } from "../../lib/usage/record.ts";
import type { StoredUsageRecord, UsageStore } from "../../lib/usage/store.ts";

/**
 * A usage record with sensible defaults; `overrides` win. The token's identity defaults to the config file's
 * token of its name (`cfg_<name>`).
 */
export function makeRecord(i: number, overrides: Partial<UsageRecord> = {}): UsageRecord {
  const token = overrides.token === undefined ? "alice" : overrides.token;
  return {
    token_id: token === null ? null : `cfg_${token}`,
    time: new Date(Date.UTC(2025, 0, 1, 0, 0, 0) + i * 1000).toISOString(),
    request_id: `req_${i}`,
    token: "alice",
    environment: "prod",
    alias: "chat-default",
    provider: "openai",
    upstream_model: "gpt-4o-mini",
    endpoint: "chat",
    stream: false,
    status: 200,
    outcome: "allow",
    rule: null,
    prompt_tokens: 10,
    completion_tokens: 5,
    tokens_estimated: false,
    cost: 0.001,
    cost_input: 0,
    cost_cached: 0,
    cost_cache_write: 0,
    cost_output: 0,
    cost_reasoning: 0,
    cost_web_search: 0,
    latency_ms: 100,
    ttft_ms: null,
    attempts: 1,
    error_code: null,
    dropped: null,
    cache: null,
    saved_tokens: 0,
    saved_cost: 0,
    trace_id: null,
    team: null,
    guardrails: null,
    team_id: null,
    ...overrides,
  };
}

/** A store wrapper whose `insert` can be delayed, made to fail, or held until released. */
export interface ControlledStore extends UsageStore {
  /** Milliseconds each insert waits before reaching the inner store. */
  delayMs: number;
  /** How many more inserts fail (each failing call decrements it). */
  failNext: number;
  /** Holds every insert until `release()`. */
  block(): void;
  release(): void;
  /** Insert calls made, failed ones included. */
  calls: number;
  /** Settles once no insert is in flight (each in flight settled, whether it stored or failed). */
  idle(): Promise<void>;
}

/** Wraps `inner` so tests can make it slow, failing or blocked. */
export function controlledStore(inner: UsageStore): ControlledStore {
  let gate: { promise: Promise<void>; resolve: () => void } | null = null;
  const inFlight = new Set<Promise<void>>();
  const store: ControlledStore = {
    delayMs: 0,
    failNext: 0,
    calls: 0,
    block() {
      if (gate) return;
      let resolve = () => {};
      const promise = new Promise<void>((r) => (resolve = r));
      gate = { promise, resolve };
    },
    release() {
      gate?.resolve();
      gate = null;
    },
    insert(records: readonly StoredUsageRecord[]) {
      store.calls++;
      const insert = (async () => {
        if (gate) await gate.promise;
        if (store.delayMs > 0) await new Promise((r) => setTimeout(r, store.delayMs));
        if (store.failNext > 0) {
          store.failNext--;
          throw new Error("store unavailable");
        }
        await inner.insert(records);
      })();
      const settled = insert.then(() => {}, () => {});
      inFlight.add(settled);
      settled.then(() => inFlight.delete(settled));
      return insert;
    },
    async idle() {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
    query: (q) => inner.query(q),
    listRecords: (q) => inner.listRecords(q),
    sumSince: (token, since) => inner.sumSince(token, since),
    sumTeamSince: (team, since) => inner.sumTeamSince(team, since),
    deleteOlderThan: (iso, limit) => inner.deleteOlderThan(iso, limit),
    close: () => inner.close(),
  };
  return store;
}

/** Rows and distinct request ids in the `usage` table of the database file at `path`. */
export function countRows(path: string): { rows: number; distinct: number; ids: Set<string> } {
  const db = new DatabaseSync(path);
  try {
    const ids = new Set<string>();
    let rows = 0;
    for (const row of db.prepare("SELECT request_id FROM usage").all()) {
      rows++;
      ids.add(String(row.request_id));
    }
    return { rows, distinct: ids.size, ids };
  } finally {
    db.close();
  }
}

/** The parsed lines of a JSONL file; empty when it does not exist. */
export async function readJsonl<T = StoredUsageRecord>(path: string): Promise<T[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return [];
  }
  return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as T);
}

/**
 * The lines of a JSONL file another task may be appending to, up to its last newline: a line without its
 * newline yet is still being written (a reader can see a write's first part before its rest), so it is left
 * for a later read rather than parsed as a torn record. Empty when the file does not exist.
 */
export async function readWrittenJsonl<T = StoredUsageRecord>(path: string): Promise<T[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return [];
  }
  return text.slice(0, text.lastIndexOf("\n") + 1).split("\n").filter((l) => l.trim() !== "").map((l) =>
    JSON.parse(l) as T
  );
}

/** Whether a file exists. */
export async function exists(path: string): Promise<boolean> {
  try {
    await readFile(path);
    return true;
  } catch {
    return false;
  }
}

/** Polls `cond` every 10 ms until it holds; throws after `timeoutMs`. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("waitFor timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}
