/**
 * Limits per end user of an application (`end_user_limits:` on an alias or a token): which user a request is
 * for, the counters that limit that user, and the bounded set of users tracked.
 *
 * The user is what the client says it is: the configured header, else the body's `safety_identifier`, `user`
 * (OpenAI's chat, Responses and embeddings) or `metadata.user_id` (Anthropic's Messages). A request that names
 * no user is not limited per user — these limits share an application's capacity fairly among its users;
 * they do not authenticate them.
 *
 * A client can invent users, so the users tracked per alias or token are bounded (`max_users`): the least
 * recently seen is forgotten first, together with its counters ({@linkcode CounterStore.forget}) and what is
 * kept beside its budgets (the settled spend, alerts' claims), and starts afresh if it returns. A user is
 * seen when its request is admitted; a request that settles after its user was pushed out writes none of the
 * user's budget counters (`PeriodDelta.heldIn`: its reservation went with them), else they would be written
 * afresh, kept until the period ended. If the user is back meanwhile, its counters are new ones (numbered
 * apart: `CheckResult.generation`), and such a request's refund is not given to them: it would cancel the
 * returning requests' reservations. The most recent users' counters are never touched by that, so their
 * limits stay exact.
 *
 * Only whoever holds the counters keeps that list and forgets: one list per set of counters, so no list that
 * saw only part of the traffic drops the counters of a user active elsewhere. A single process's engine keeps
 * it over its in-memory store; the workers of `serve --workers N` tell the primary whom they saw
 * ({@linkcode CounterStore.seen}) and the primary keeps the one list; with Redis, the list bounds only the
 * replica's local limiter (`fail_open`), and the shared keys expire by their own TTL (a bucket once full
 * again, a budget's counter after its period), never deleted by a replica's list.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { EndUserLimitsConfig } from "../config/schema.ts";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import type { JsonObject } from "../openai/types.ts";
import type { BudgetOwner } from "./budgets.ts";
import type { Check, CounterStore, PeriodCheck, SeenUser } from "./counter_store.ts";

/** Longest user id kept as written in a counter key; longer ones are hashed (a key stays short). */
const MAX_KEPT_ID = 64;

/** One `end_user_limits` block that applies to a request, and the user it is judged for. */
export interface EndUserScope {
  /** Whose block: the alias's (applied to every token using it) or the token's. */
  readonly kind: "alias" | "token";
  /** The alias's name or the token's name, for messages. */
  readonly ownerName: string;
  /**
   * The counter owner: `alias:<name>:token:<id>` or `token:<id>`. An alias's block holds each token's users
   * apart: a user id is the client's to choose, so two applications (tokens) may both have a user "1", and
   * keyed by the alias alone one application could spend, or deliberately exhaust, the other's user's
   * limits. A token is named by its identity, never its reusable name.
   */
  readonly owner: string;
  /** The block whose `max_users` list the user is in: `alias:<name>` or `token:<id>` (see {@linkcode seenUsers}). */
  readonly block: string;
  readonly limits: EndUserLimitsConfig;
  /** The user, as the request names it. */
  readonly user: string;
  /** The user as it appears in counter keys: as written when short and plain, else a digest. */
  readonly userKey: string;
}

function text(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** The end user a request names for `limits`, or undefined. */
export function endUserOf(
  limits: EndUserLimitsConfig,
  body: JsonObject | undefined,
  headers: Headers | undefined,
): string | undefined {
  if (limits.header !== undefined) return text(headers?.get(limits.header)?.trim());
  if (!body) return undefined;
  const metadata = body.metadata;
  const fromMetadata = metadata !== null && typeof metadata === "object" && !Array.isArray(metadata)
    ? text((metadata as JsonObject).user_id)
    : undefined;
  return text(body.safety_identifier) ?? text(body.user) ?? fromMetadata;
}

/** A user id fit for a counter key: plain short ids as written, anything else as a SHA-256 prefix. */
export function userKeyOf(user: string): string {
  return user.length <= MAX_KEPT_ID && /^[A-Za-z0-9._@+=-]+$/.test(user)
    ? user
    : `#${createHash("sha256").update(user).digest("hex").slice(0, 32)}`;
}

/** The end-user scopes of a request: the alias's block, then the token's, each with its user if named. */
export function endUserScopes(
  token: ResolvedToken,
  model: ResolvedModel | undefined,
  body: JsonObject | undefined,
  headers: Headers | undefined,
): EndUserScope[] {
  const out: EndUserScope[] = [];
  const add = (
    kind: "alias" | "token",
    ownerName: string,
    block: string,
    owner: string,
    limits: EndUserLimitsConfig,
  ) => {
    const user = endUserOf(limits, body, headers);
    if (user !== undefined) {
      out.push({ kind, ownerName, owner, block, limits, user, userKey: userKeyOf(user) });
    }
  };
  if (model?.endUserLimits) {
    const block = `alias:${model.alias}`;
    add("alias", model.alias, block, `${block}:token:${token.id}`, model.endUserLimits);
  }
  if (token.endUserLimits) {
    const block = `token:${token.id}`;
    add("token", token.name, block, block, token.endUserLimits);
  }
  return out;
}

/** The counter keys' common start for one user of one scope. */
export function endUserKeyBase(scope: Pick<EndUserScope, "owner" | "userKey">): string {
  return `end_user:${scope.owner}:${scope.userKey}`;
}

/** Who a user's budget belongs to, for reservations and denials. */
export function endUserBudgetOwner(scope: EndUserScope): BudgetOwner | null {
  const budget = scope.limits.budget;
  if (!budget) return null;
  return {
    scope: "end_user",
    name: endUserLabel(scope),
    keyBase: endUserKeyBase(scope),
    budget,
  };
}

/** "user U of token T" / "user U of model M", with a long or odd user id shortened. */
export function endUserLabel(scope: EndUserScope): string {
  const shown = scope.user.length > MAX_KEPT_ID ? `${scope.user.slice(0, MAX_KEPT_ID)}…` : scope.user;
  return `user ${JSON.stringify(shown)} of ${scope.kind === "token" ? "token" : "model"} ${scope.ownerName}`;
}

/**
 * What `scopes`' users are seen with: each with its own counters among `checks` (and what `companions` says
 * is kept beside each of its budgets), in its block's list. A user is named there by its counters' key base,
 * which tells an alias's users of different tokens apart; the list is the block's, so an alias's `max_users`
 * bounds the users of all its tokens together, and memory stays bounded by the config (aliases and tokens
 * with a block), not by how many tokens use an alias.
 */
export function seenUsers(
  scopes: readonly EndUserScope[],
  checks: readonly Check[],
  companions?: (budget: PeriodCheck) => readonly Check[],
): SeenUser[] {
  return scopes.map((u) => {
    const base = `${endUserKeyBase(u)}:`;
    const own = checks.filter((c) => c.key.startsWith(base));
    return {
      owner: u.block,
      userKey: endUserKeyBase(u),
      maxUsers: u.limits.max_users,
      // A user's period counters are its budgets: what is kept beside them goes with the user too, whatever
      // its key (an alert's claim is not under the user's key base).
      checks: companions ? own.flatMap((c) => c.kind === "period" ? [c, ...companions(c)] : [c]) : own,
    };
  });
}

/**
 * The users seen per block (`alias:<name>`, `token:<id>`), least recently seen first (a Map keeps insertion
 * order; a user seen again is moved to the end). Bounded per block by its `max_users`; blocks are bounded by the
 * config (aliases, tokens).
 * Kept by the holder of the counters (see the module's doc), which forgets on its store what {@linkcode seen}
 * pushes out.
 */
export class EndUserTracker {
  readonly #owners = new Map<string, Map<string, readonly Check[]>>();

  /**
   * Marks `seen`'s user as just seen, remembering its counters (to forget them with the user); returns the
   * counters of the users forgotten to stay within `max_users`.
   */
  touch(seen: SeenUser): Check[] {
    let users = this.#owners.get(seen.owner);
    if (users === undefined) this.#owners.set(seen.owner, users = new Map());
    users.delete(seen.userKey);
    users.set(seen.userKey, seen.checks);
    const dropped: Check[] = [];
    for (const [user, counters] of users) {
      if (users.size <= seen.maxUsers) break;
      users.delete(user);
      dropped.push(...counters);
    }
    return dropped;
  }

  /** Users tracked for `owner` (`alias:<name>` or `token:<id>`), or in total. */
  size(owner?: string): number {
    if (owner !== undefined) return this.#owners.get(owner)?.size ?? 0;
    let n = 0;
    for (const users of this.#owners.values()) n += users.size;
    return n;
  }

  /**
   * Marks `users` seen and forgets, on `store` (the counters this list is kept for), those pushed out; never
   * throws (a store failure goes to `onError`).
   */
  seen(store: CounterStore, users: readonly SeenUser[], onError: (err: unknown) => void): void {
    const dropped = users.flatMap((u) => this.touch(u));
    if (dropped.length === 0 || !store.forget) return;
    store.forget(dropped).catch(onError);
  }
}
