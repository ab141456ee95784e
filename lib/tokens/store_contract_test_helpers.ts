/**
 * The token store contract's machinery, shared by the contract's test files: each `contract(...)` runs alike
 * against every store: memory; SQLite through the usage database's worker, in a temp dir; PostgreSQL in a
 * schema of its own, dropped after. The SQL stores run in CI always; off CI (`CI` unset) they skip only when
 * their service cannot be reached.
 */
import { createMemoryTokenStore } from "./store_memory.ts";
import { openSqliteWorkerStore } from "../usage/sqlite_worker_store.ts";
import { openPostgresStore } from "../usage/postgres_store.ts";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import type { AuditEntry, StoredToken, TokenStore } from "./types.ts";

/** A store under test and how to dispose of what it made. */
export interface Subject {
  store: TokenStore;
  /** A second handle on the same data (another connection), where the store has one. */
  second?: () => Promise<TokenStore>;
  /** The PostgreSQL schema the store is in (its notifications' payload), where it has one. */
  schema?: string;
  dispose(): Promise<void>;
}

interface Kind {
  name: string;
  /** Null when the test should skip (never in CI). */
  open(): Promise<Subject | null>;
}

/** Whether a missing service may skip its tests: only off CI. */
export const MAY_SKIP = Deno.env.get("CI") === undefined;

export async function openPostgresSubject(): Promise<Subject | null> {
  const schema = randomSchema("tokens");
  const open = () => openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  let db;
  try {
    db = await open();
  } catch (err) {
    if (MAY_SKIP) return null;
    throw err;
  }
  const others: { close(): Promise<void> }[] = [];
  return {
    store: db.tokens,
    schema,
    second: async () => {
      const other = await open();
      others.push(other);
      return other.tokens;
    },
    dispose: async () => {
      for (const other of others) await other.close();
      await db.close();
      await dropSchema(schema);
    },
  };
}

const KINDS: Kind[] = [
  {
    name: "memory",
    open: () => {
      const store = createMemoryTokenStore();
      return Promise.resolve({ store, dispose: () => store.close() });
    },
  },
  {
    // SQLite is in the runtime: never skipped.
    name: "sqlite",
    open: async () => {
      const dir = await Deno.makeTempDir({ prefix: "token-store-" });
      const db = await openSqliteWorkerStore(`${dir}/usage.sqlite`);
      return {
        store: db.tokens,
        dispose: async () => {
          await db.close();
          await Deno.remove(dir, { recursive: true });
        },
      };
    },
  },
  { name: "postgres", open: openPostgresSubject },
];

let counter = 0;
function hexId(prefix: string): string {
  counter++;
  return `${prefix}_${counter.toString(16).padStart(24, "0")}`;
}

export function makeToken(overrides: Partial<StoredToken> = {}): StoredToken {
  return {
    id: hexId("tok"),
    name: "ci-bot",
    environment: "staging",
    description: "CI pipeline",
    models: ["chat-*", "embed"],
    endpoints: ["chat", "embeddings"],
    limits: { rpm: 60, tpm: 100_000, concurrent: 4 },
    budget: { tokens: 1_000_000, period: "month" } as StoredToken["budget"],
    max_tokens: 2048,
    cache: { no_store: false, no_cache: true, max_age: 600_000 },
    team: "platform",
    team_id: "team_platform",
    end_user_limits: {
      rpm: 10,
      budget: { tokens: 5000, period: "day" },
      header: "x-end-user",
      max_users: 500,
    },
    guardrails: ["no-cards", "moderation"],
    expires_at: "2099-01-01T00:00:00.000Z",
    disabled: false,
    created_at: "2026-11-24T09:00:00.000Z",
    updated_at: "2026-11-24T09:00:00.000Z",
    created_by: "ops-admin",
    revoked_at: null,
    rotated_at: null,
    secrets: [{ sha256: "a".repeat(64), expires_at: null }],
    ...overrides,
  };
}

export function makeAudit(token: StoredToken, overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    id: hexId("aud"),
    time: new Date().toISOString(),
    actor: "ops-admin",
    action: "create",
    token_id: token.id,
    token_name: token.name,
    changes: { name: token.name, limits: { rpm: 60 } },
    ...overrides,
  };
}

/** Runs `body` against a fresh store of `kind`, skipping (outside CI only) when the service is missing. */
export function contract(title: string, body: (subject: Subject) => Promise<void>): void {
  for (const kind of KINDS) {
    Deno.test(`token store (${kind.name}): ${title}`, async (t) => {
      const subject = await kind.open();
      if (subject === null) {
        await t.step({ name: `${kind.name} unreachable (not CI): skipped`, ignore: true, fn: () => {} });
        return;
      }
      try {
        await body(subject);
      } finally {
        await subject.dispose();
      }
    });
  }
}
