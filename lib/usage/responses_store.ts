/**
 * Stored responses (`POST /v1/responses` with `store` left on): what `GET /v1/responses/{id}`,
 * `DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items` and `previous_response_id` read. They live
 * in the usage database (SQLite by default: `responses_store_sqlite.ts`, run in the usage store's worker), or
 * in memory with `usage.sqlite: none` (`responses_store_memory.ts`).
 *
 * Ownership is part of every read: a response is visible only to the token that created it, by the token's
 * immutable identity (`ResolvedToken.id`: `tok_…` for an issued token, `cfg_<name>` for the config file's),
 * never by its name, which a revoked token frees for another. Any other token gets `null`, exactly as for an id
 * that never existed, so the handler answers both with the same 404 and an id cannot be probed across tokens.
 * The paging and chain logic is here, shared by the stores, so both answer alike.
 *
 * @module
 */
import type { JsonObject } from "../openai/types.ts";
import { printable } from "../errors.ts";
import { isStorableId } from "./client_text.ts";
import { UsageQueryError } from "./query.ts";

/** One stored response: the Response object, the input it answered, and who and what served it. */
export interface StoredResponse {
  /** `resp_…`, the Response object's id. */
  id: string;
  /**
   * The identity (`ResolvedToken.id`) of the token that created it: the only one that may read, delete or
   * chain from it. Not the name: a name reissued after a revoke is another token.
   */
  owner: string;
  /** The token's environment, for the record. */
  environment: string;
  /** Unix seconds, as the Response object's `created_at`; retention counts from it. */
  created_at: number;
  /** The alias the client asked for. */
  alias: string;
  /** The configured provider name that served it. */
  provider: string;
  /**
   * Whether that provider spoke Responses natively (`native_responses: true`): a later `previous_response_id`
   * may then be passed through to the same provider rather than rebuilt.
   */
  native: boolean;
  /**
   * For a natively served response, the upstream's own response id (the client sees the gateway's `id`): what a
   * later `previous_response_id` passed through to the same provider names. `null` (or absent) otherwise.
   */
  upstream_id?: string | null;
  previous_response_id: string | null;
  /**
   * This request's own input as items (not the rebuilt conversation; {@linkcode ResponsesStore.chain} rebuilds
   * that). Paging uses each item's `id`; `put` gives one to an item without.
   */
  input_items: JsonObject[];
  /** The Response object as the client received it; its `output` items are the chain's outputs. */
  response: JsonObject;
}

/** Where a native upstream holds a stored conversation whole: its provider, and its own id for the newest response. */
export interface UpstreamChain {
  provider: string;
  id: string;
}

/** A stored conversation, as {@linkcode ResponsesStore.chain} rebuilds it. */
export interface Conversation {
  /** For each response from the first of the chain, its input items then its output items, oldest first. */
  items: JsonObject[];
  /**
   * For each of `items`, the provider whose native target produced it (an output item of a response that
   * provider served natively), else null (input items, a translated answer's output): a native target resent
   * the conversation gets back the reasoning items it produced itself, never another model's encrypted state.
   */
  nativeBy: (string | null)[];
  /**
   * The provider and upstream id of the newest response when that upstream holds exactly this conversation, so
   * that a later `previous_response_id` to that provider may name the id instead of resending `items`: the
   * newest response was served natively (and has an upstream id), and the chain is whole back to its first
   * response. A natively served response was sent either its predecessor's upstream id or the conversation
   * rebuilt as input, so its upstream's chain holds every earlier response, and would still hold one deleted or
   * pruned here (the client asked for it to be gone). null otherwise.
   */
  upstream: UpstreamChain | null;
}

/** A page request for `GET /v1/responses/{id}/input_items`, as the query string gives it. */
export interface ItemsPage {
  /** An item id: the page starts after it, in the chosen order. */
  after?: string;
  /** An item id: the page ends before it, in the chosen order. */
  before?: string;
  /** 1–100, default 20. */
  limit?: number;
  /** `desc` (default: newest first, as OpenAI) or `asc`. */
  order?: "asc" | "desc";
}

/** OpenAI's list object, as `input_items` answers it. */
export interface ItemsList {
  object: "list";
  data: JsonObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** Where stored responses are kept. Every method may reject (a store failure is the handler's 5xx). */
export interface ResponsesStore {
  /** Stores `record` (replacing one with the same id and owner). `store: false` responses are never put. */
  put(record: StoredResponse): Promise<void>;
  /**
   * Keeps a `store: false` response for the client's connection only, so that the connection's next request
   * may chain from it (OpenAI's WebSocket mode keeps the last one in memory). Only a connection's store has it
   * (lib/api/responses/connection_responses.ts); the gateway's stores keep nothing of such a response.
   */
  remember?(record: StoredResponse): Promise<void>;
  /** The response if it exists and belongs to `owner` (a token's identity); `null` otherwise. */
  get(id: string, owner: string): Promise<StoredResponse | null>;
  /** Deletes the response if it exists and belongs to `owner`; whether it did. */
  delete(id: string, owner: string): Promise<boolean>;
  /**
   * One page of the response's input items, or `null` when it does not exist or is not `owner`'s. Rejects with
   * `UsageQueryError` (its `param` names the query parameter) for a bad limit, order or cursor.
   */
  inputItems(id: string, owner: string, page: ItemsPage): Promise<ItemsList | null>;
  /**
   * The conversation up to and including response `id`, oldest first: for each response from the first of
   * its `previous_response_id` chain, its input items then its output items, and whether an upstream holds it
   * whole ({@linkcode Conversation.upstream}). `null` when response `id` is missing or belongs to another owner.
   * An earlier response that is missing (deleted, pruned, or another owner's) ends the chain there: the
   * conversation is the responses after it (OpenAI's API, too, goes on without a deleted response), so a long
   * conversation outlives the retention of its first turns. Rejects with a `UsageQueryError` naming
   * `previous_response_id` ({@linkcode chainTooLong}) when the responses walked pass {@linkcode MAX_CHAIN_BYTES}
   * or number more than {@linkcode MAX_CHAIN}: the walk stops there.
   */
  chain(id: string, owner: string): Promise<Conversation | null>;
  /**
   * The items `ids` name (what `item_reference` inputs point at), in the same order: each an input or output
   * item of one of `owner`'s stored responses (of the one put last when several hold that id), or `null` when
   * none does. Another owner's item is `null`, exactly as one that never existed. A lookup by id (an index),
   * not a scan of the owner's responses.
   */
  items(ids: readonly string[], owner: string): Promise<(JsonObject | null)[]>;
  /**
   * Deletes at most `limit` of the responses created before `beforeIso` (retention), and their items, in one
   * statement (in SQLite, one transaction over both tables, so the item index never names a response that is
   * gone); resolves to how many responses. Retention calls it until fewer than `limit` come back: one statement
   * over a large backlog would outlast PostgreSQL's time limit (and roll back, deleting nothing), or hold the
   * SQLite worker from every other call while it ran.
   */
  prune(beforeIso: string, limit: number): Promise<number>;
}

/**
 * Most responses a `previous_response_id` conversation rebuilds: a longer one is refused as too long
 * ({@linkcode chainTooLong}), as one over {@linkcode MAX_CHAIN_BYTES} is. It bounds the walk (one lookup per
 * response) whatever the responses' size. Ids are the gateway's own, so a cycle cannot be built from outside.
 */
export const MAX_CHAIN = 10_000;

/**
 * Most stored conversation a `previous_response_id` rebuilds, counted as {@linkcode linkBytes} of each of its
 * responses: 16 MiB. Without it a client sending 64 KiB a turn could have the gateway rebuild, hold and send
 * upstream a conversation of any size, far past `server.max_body_size` and any model's context window. The same
 * bound holds what a WebSocket connection keeps of its `store: false` responses (one source of truth).
 */
export const MAX_CHAIN_BYTES = 16 * 1024 * 1024;

/**
 * What a stored response counts against {@linkcode MAX_CHAIN_BYTES}: the length of its input items' and its
 * Response object's JSON text. The PostgreSQL store stops its chain query by the same measure (the text it
 * keeps is that JSON), so every store stops where this one does.
 */
export function linkBytes(record: Pick<StoredResponse, "input_items" | "response">): number {
  return JSON.stringify(record.input_items).length + JSON.stringify(record.response).length;
}

/**
 * The store's refusal of a conversation over {@linkcode MAX_CHAIN_BYTES} (or, with `over` saying so, longer than
 * {@linkcode MAX_CHAIN} responses): the client's 400, naming the id.
 */
export function chainTooLong(
  id: string,
  over = `over ${MAX_CHAIN_BYTES / 1024 / 1024} MiB`,
): UsageQueryError {
  return new UsageQueryError(
    `The conversation behind response '${printable(id)}' is ${over}, more ` +
      "than the gateway rebuilds for previous_response_id. Compact it (POST /v1/responses/compact) or send a " +
      "shorter conversation as input.",
    "previous_response_id",
  );
}

/** `input_items` page size bounds, as OpenAI's. */
export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;

/** Id prefixes OpenAI uses for input items, for items that arrive without an id. */
const ITEM_PREFIX: Readonly<Record<string, string>> = {
  message: "msg",
  function_call: "fc",
  function_call_output: "fco",
  reasoning: "rs",
};

/** A fresh item id in OpenAI's form (`msg_` and 48 hex digits for a message). */
export function newItemId(type: unknown): string {
  const prefix = typeof type === "string" && ITEM_PREFIX[type] ? ITEM_PREFIX[type] : "item";
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return `${prefix}_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * `items` with an `id` on each (a fresh one where missing, or where it repeats an earlier item's, so cursors
 * are unambiguous). Items that already have a unique id are kept as they are (the same objects).
 */
export function withItemIds(items: readonly JsonObject[]): JsonObject[] {
  const seen = new Set<string>();
  return items.map((item) => {
    const id = item.id;
    if (typeof id === "string" && id !== "" && !seen.has(id)) {
      seen.add(id);
      return item;
    }
    const fresh = newItemId(item.type);
    seen.add(fresh);
    return { ...item, id: fresh };
  });
}

/** Checks and fills in a page request; throws `UsageQueryError` naming the parameter. */
export function pageOf(page: ItemsPage): Required<Pick<ItemsPage, "limit" | "order">> & ItemsPage {
  const limit = page.limit ?? DEFAULT_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new UsageQueryError(`limit must be an integer from 1 to ${MAX_PAGE}`, "limit");
  }
  const order = page.order ?? "desc";
  if (order !== "asc" && order !== "desc") {
    throw new UsageQueryError("order must be 'asc' or 'desc'", "order");
  }
  return { ...page, limit, order };
}

/**
 * One page of `items` (stored oldest first). The window is the items strictly between `after` and `before` in
 * the chosen order; with only `before` the page is the `limit` items just before it, otherwise the first
 * `limit` after `after` (or from the start). `has_more` says whether the window holds more than the page, in
 * the direction being paged. An id that is not one of the items is a `UsageQueryError`.
 */
export function pageItems(items: readonly JsonObject[], request: ItemsPage): ItemsList {
  const { limit, order, after, before } = pageOf(request);
  const ordered = order === "asc" ? items : [...items].reverse();
  const indexOf = (id: string, param: string) => {
    const i = ordered.findIndex((item) => item.id === id);
    if (i < 0) throw new UsageQueryError(`No input item with id '${printable(id)}' in this response.`, param);
    return i;
  };
  const start = after !== undefined ? indexOf(after, "after") + 1 : 0;
  const end = before !== undefined ? indexOf(before, "before") : ordered.length;
  const window = ordered.slice(start, Math.max(start, end));
  const data = before !== undefined && after === undefined
    ? window.slice(Math.max(0, window.length - limit))
    : window.slice(0, limit);
  const id = (item: JsonObject | undefined) => typeof item?.id === "string" ? item.id : null;
  return {
    object: "list",
    data,
    first_id: id(data[0]),
    last_id: id(data[data.length - 1]),
    has_more: window.length > data.length,
  };
}

/** A response's output items (the Response object's `output`), or none if it has no list there. */
export function outputItems(response: JsonObject): JsonObject[] {
  const output = response.output;
  return Array.isArray(output)
    ? output.filter((item): item is JsonObject => typeof item === "object" && item !== null)
    : [];
}

/** Where an item with an id sits in a stored response: one entry of the item index. */
export interface ItemSlot {
  id: string;
  /** In the Response object's `output` (true) or in the input items (false). */
  output: boolean;
  /** Its index in that list. */
  position: number;
}

/**
 * The items of a stored response that the item index holds: every input and output item with an id a store
 * can hold (`isStorableId`; the input items after `withItemIds` have non-empty ids), input items first.
 */
export function itemSlots(record: Pick<StoredResponse, "input_items" | "response">): ItemSlot[] {
  const slots: ItemSlot[] = [];
  // Positions in the lists as stored (the SQLite store cuts the item out of the stored JSON by them).
  const add = (items: readonly unknown[], output: boolean) =>
    items.forEach((item, position) => {
      const id = typeof item === "object" && item !== null ? (item as JsonObject).id : undefined;
      // An id no store can hold (NUL, a lone surrogate, too long: client_text.ts) is not indexed: never referable.
      if (isStorableId(id)) slots.push({ id, output, position });
    });
  add(record.input_items, false);
  const output = record.response.output;
  add(Array.isArray(output) ? output : [], true);
  return slots;
}

/** The item with id `id` in `record` (its input items first, then its output), or `null`. */
export function findItem(
  record: Pick<StoredResponse, "input_items" | "response">,
  id: string,
): JsonObject | null {
  return record.input_items.find((item) => item.id === id) ??
    outputItems(record.response).find((item) => item.id === id) ?? null;
}

/**
 * Rebuilds the conversation up to response `id` from `lookup` (one owned response by id, or null): walks
 * `previous_response_id` back to the first still there (and `owner`'s), then lays out each response's input
 * items and output items, oldest first. Null when response `id` is missing or not `owner`'s (or the chain
 * loops); throws {@linkcode chainTooLong} as soon as the links walked pass {@linkcode MAX_CHAIN_BYTES} or
 * {@linkcode MAX_CHAIN}.
 */
export function buildChain(
  id: string,
  owner: string,
  lookup: (id: string, owner: string) => StoredResponse | null,
): Conversation | null {
  const links: StoredResponse[] = [];
  const seen = new Set<string>();
  let next: string | null = id;
  let bytes = 0;
  while (next !== null) {
    if (seen.has(next)) return null;
    seen.add(next);
    const link = lookup(next, owner);
    if (link === null && links.length === 0) return null;
    if (link === null) break; // an earlier response deleted or pruned: the conversation starts after it
    // Too long, not missing: a 404 here told the client that a response it just got does not exist.
    if (links.length === MAX_CHAIN) throw chainTooLong(id, `over ${MAX_CHAIN} responses long`);
    bytes += linkBytes(link);
    if (bytes > MAX_CHAIN_BYTES) throw chainTooLong(id);
    links.push(link);
    next = link.previous_response_id;
  }
  const items: JsonObject[] = [];
  const nativeBy: (string | null)[] = [];
  for (let i = links.length - 1; i >= 0; i--) {
    const link = links[i];
    for (const item of link.input_items) items.push(item), nativeBy.push(null);
    const producer = link.native ? link.provider : null;
    for (const item of outputItems(link.response)) items.push(item), nativeBy.push(producer);
  }
  // `next` is null only when the walk reached the chain's first response: nothing of it is gone.
  const newest = links[0];
  const upstream = next === null && newest.native && typeof newest.upstream_id === "string"
    ? { provider: newest.provider, id: newest.upstream_id }
    : null;
  return { items, nativeBy, upstream };
}

/** `beforeIso` as Unix seconds; throws `UsageQueryError` when it is not a time. */
export function cutoffSeconds(beforeIso: string): number {
  const ms = Date.parse(beforeIso);
  if (Number.isNaN(ms)) throw new UsageQueryError(`'${beforeIso}' is not an ISO 8601 time`, "before");
  return ms / 1000;
}
