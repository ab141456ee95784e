/**
 * Shared by the stored-response stores' tests: the stores the contract runs over, and a stored response with
 * message items, at a fixed time.
 *
 * @module
 */
import type { JsonObject } from "../openai/types.ts";
import type { ResponsesStore, StoredResponse } from "./responses_store.ts";
import { createMemoryResponsesStore } from "./responses_store_memory.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";

export const NOW = Date.UTC(2025, 5, 1) / 1000;
export const DAY = 86_400;

export const message = (id: string, role: string, text: string): JsonObject => ({
  id,
  type: "message",
  role,
  content: [{ type: role === "assistant" ? "output_text" : "input_text", text }],
});

/** A stored response with `inputs` (item ids) as user messages and `outputs` as assistant messages. */
export function response(
  id: string,
  overrides: Partial<StoredResponse> & { inputs?: string[]; outputs?: string[] } = {},
): StoredResponse {
  const { inputs = [`${id}_in`], outputs = [`${id}_out`], ...rest } = overrides;
  return {
    id,
    owner: "alice",
    environment: "prod",
    created_at: NOW,
    alias: "chat-default",
    provider: "openai",
    native: false,
    upstream_id: null,
    previous_response_id: null,
    input_items: inputs.map((item) => message(item, "user", `said ${item}`)),
    response: {
      id,
      object: "response",
      created_at: NOW,
      status: "completed",
      model: "chat-default",
      output: outputs.map((item) => message(item, "assistant", `answered ${item}`)),
    },
    ...rest,
  };
}

/** A store of the contract, opened afresh, and what closes (and removes) it. */
export interface OpenedResponsesStore {
  store: ResponsesStore;
  close(): Promise<void>;
}

/**
 * Every `ResponsesStore` the contract tests run over: in memory, SQLite on the calling thread, SQLite through
 * the usage store's worker (the one the server uses), and PostgreSQL (a private schema of the test database,
 * dropped at close).
 */
export const RESPONSES_STORES: readonly (readonly [string, () => Promise<OpenedResponsesStore>])[] = [
  ["memory", () => Promise.resolve({ store: createMemoryResponsesStore(), close: () => Promise.resolve() })],
  ["sqlite", () => {
    const db = createSqliteStore(":memory:");
    return Promise.resolve({ store: db.responses, close: () => db.close() });
  }],
  ["worker", async () => {
    const dir = await Deno.makeTempDir({ prefix: "responses-store-" });
    const db = await openSqliteWorkerStore(`${dir}/usage.sqlite`);
    return {
      store: db.responses,
      close: async () => {
        await db.close();
        await Deno.remove(dir, { recursive: true });
      },
    };
  }],
  ["postgres", async () => {
    const schema = randomSchema("responses");
    const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema });
    return {
      store: db.responses,
      close: async () => {
        await db.close();
        await dropSchema(schema);
      },
    };
  }],
];
