/**
 * `/admin/tokens`: issue, list, change, rotate and revoke client tokens at run time (docs/admin_api.md is the
 * contract); every change is written with its entry of the audit trail (`audit.ts` reads it).
 *
 * Only a secret's SHA-256 is stored; the secret itself is in the one answer that makes it (the `201` of an
 * issue, the `200` of a rotation) and nowhere else. Every change is written with its audit entry in one store
 * transaction, then this replica reloads before it answers, so the change holds here at once (the other
 * replicas hear of it through the store). Tokens from the config file are listed read-only, as `cfg_<name>`.
 * A change of a stored token (PATCH, revoke, rotate) is a read-modify-write that never overwrites a change
 * it did not see (`token_writes.ts`): rotations of one token at once take effect one after another.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { hashToken } from "../../auth/authenticate.ts";
import type { ResolvedToken } from "../../config/types.ts";
import { GatewayError, printable } from "../../errors.ts";
import type { TokenDirectory } from "../../tokens/directory.ts";
import { teamOfToken, teamsById } from "../../tokens/team_identity.ts";
import type { StoredToken, TokenSecret } from "../../tokens/types.ts";
import {
  byNameThenId,
  CONFIG_ID_PREFIX,
  configView,
  fieldsOf,
  storedView,
  TOKEN_STATUSES,
  type TokenView,
} from "../../tokens/token_view.ts";
import { type TokenFields, validateNewToken, validatePatch, validateRotate } from "../../tokens/validate.ts";
import { badParam } from "./operations.ts";
import { changeStored, conflict, nameTaken, write, writeTime } from "./token_writes.ts";
import { randomHex } from "../../encoding/random_hex.ts";
import type { RequestContext } from "../../http/context.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import type { ClientRequest } from "../../runtime/types.ts";

const JSON_TYPE = { "content-type": "application/json" };

/** The directory, or the 503 of a gateway without a database to keep issued tokens in. */
export function directoryOf(ctx: RequestContext): TokenDirectory {
  const directory = ctx.services.tokens;
  if (directory === null) {
    throw new GatewayError(
      503,
      "Tokens cannot be issued here: the gateway has no database (usage.sqlite is none and no postgres).",
      { type: "server_error", code: "token_store_disabled" },
    );
  }
  return directory;
}

/** A new secret: `gw-` and 32 random bytes in base64url, as `gateway token new` makes them. */
function newSecret(): string {
  return `gw-${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;
}

/** The config file's tokens (not those issued here), one per name. */
function configTokens(ctx: RequestContext): ResolvedToken[] {
  const byName = new Map<string, ResolvedToken>();
  for (const token of ctx.state.config.tokens.values()) {
    if (token.source !== "api" && !byName.has(token.name)) byName.set(token.name, token);
  }
  return [...byName.values()];
}

/**
 * A stored token's view, marked when a config token has taken its name (it is then not served), with the team
 * it is in by id (`byId`: the request's teams and the directory's stored ones; a list passes it once).
 */
function viewOf(
  ctx: RequestContext,
  token: StoredToken,
  now: number,
  names = configNames(ctx),
  byId = servedTeamsById(ctx),
) {
  return storedView(token, now, names.has(token.name), teamOfToken(token, byId));
}

/** The teams served to this request, by id (shadowed stored teams included: see `teamsById`). */
function servedTeamsById(ctx: RequestContext) {
  return teamsById(ctx.state.config.teams, ctx.services.tokens?.teams() ?? []);
}

function configNames(ctx: RequestContext): Set<string> {
  return new Set(configTokens(ctx).map((t) => t.name));
}

export function json(body: unknown, status = 200, headers: HeadersInit = JSON_TYPE): Response {
  return new Response(JSON.stringify(body), { status, headers });
}

function notFound(id: string): GatewayError {
  return new GatewayError(404, `No token with id '${printable(id)}'.`, {
    type: "invalid_request_error",
    param: "id",
    code: "token_not_found",
  });
}

function readOnly(): GatewayError {
  return conflict(
    "This token comes from the config file and is read-only here; change it in the file.",
    "token_read_only",
  );
}

/** The stored token `id`, as loaded just now (revoked ones too); a `cfg_` id is the config's (read-only). */
async function findStored(ctx: RequestContext, directory: TokenDirectory, id: string): Promise<StoredToken> {
  await directory.refresh();
  const token = directory.tokens().find((t) => t.id === id);
  if (token !== undefined) return token;
  if (
    id.startsWith(CONFIG_ID_PREFIX) &&
    configTokens(ctx).some((t) => t.name === id.slice(CONFIG_ID_PREFIX.length))
  ) {
    throw readOnly();
  }
  throw notFound(id);
}

async function body(
  request: ClientRequest,
  ctx: RequestContext,
  optional = false,
): Promise<Record<string, unknown>> {
  if (optional && (request.body === null || request.headers.get("content-length") === "0")) return {};
  if (!optional || request.headers.get("content-length") !== null) {
    return await readJsonBody(request, ctx.state.config.server, ctx.signal) as Record<string, unknown>;
  }
  // A chunked body may be empty too, which only reading it tells: it is read as any body is (same limits), and
  // one that ended without a byte is no body.
  let bytes = 0;
  let ended = false;
  const counted = request.body!.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.byteLength;
        controller.enqueue(chunk);
      },
      flush() {
        ended = true;
      },
    }),
  );
  const read = new Request(request.url, { method: request.method, headers: request.headers, body: counted });
  try {
    return await readJsonBody(read, ctx.state.config.server, ctx.signal) as Record<string, unknown>;
  } catch (err) {
    if (ended && bytes === 0) return {};
    throw err;
  }
}

export function intParam(
  params: URLSearchParams,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  const text = params.get(name);
  if (text === null) return fallback;
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) {
    throw badParam(name, `'${name}' must be an integer from ${min} to ${max}.`);
  }
  return value;
}

export function oneOf<T extends string>(
  params: URLSearchParams,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const value = params.get(name);
  if (value === null) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw badParam(name, `'${name}' must be one of ${allowed.join(", ")}.`);
  }
  return value as T;
}

/** `GET /admin/tokens`: both sources, filtered, by name then id, a page after `after`. */
function listTokens(request: ClientRequest, ctx: RequestContext, directory: TokenDirectory): Response {
  const params = new URL(request.url).searchParams;
  const environment = params.get("environment");
  const source = oneOf(params, "source", ["api", "config"] as const);
  const status = oneOf(params, "status", TOKEN_STATUSES);
  const q = params.get("q")?.toLowerCase();
  const limit = intParam(params, "limit", 1, 1000, 100);
  const after = params.get("after");
  const now = Date.now();
  const fromConfig = configTokens(ctx);
  const names = new Set(fromConfig.map((t) => t.name));
  const byId = servedTeamsById(ctx);
  const all = [
    ...fromConfig.map((t) => configView(t, now)),
    ...directory.tokens().map((t) => viewOf(ctx, t, now, names, byId)),
  ].sort(byNameThenId);
  let cursor: TokenView | undefined;
  if (after !== null) {
    cursor = all.find((t) => t.id === after);
    if (cursor === undefined) throw badParam("after", `'after' names no token ('${printable(after)}').`);
  }
  const matching = all.filter((t) =>
    (cursor === undefined || byNameThenId(t, cursor) > 0) &&
    (environment === null || t.environment === environment) &&
    (source === undefined || t.source === source) &&
    (status === undefined ? t.status !== "revoked" : t.status === status) &&
    (q === undefined || t.name.toLowerCase().includes(q))
  );
  const data = matching.slice(0, limit);
  return json({
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: matching.length > limit,
  });
}

/** `POST /admin/tokens`: 201 with the token and, this once, its secret. */
async function issueToken(
  request: ClientRequest,
  ctx: RequestContext,
  directory: TokenDirectory,
): Promise<Response> {
  const input = validateNewToken(await body(request, ctx), ctx.state.config);
  if (configTokens(ctx).some((t) => t.name === input.name)) throw nameTaken(input.name);
  const secret = newSecret();
  const now = writeTime(directory).iso;
  const token: StoredToken = {
    id: `tok_${randomHex(12)}`,
    ...input,
    created_at: now,
    updated_at: now,
    created_by: ctx.admin?.name ?? "unknown",
    revoked_at: null,
    rotated_at: null,
    secrets: [{ sha256: hashToken(secret), expires_at: null }],
  };
  const { name, ...fields } = input;
  await write(ctx, directory, token, "create", { name, ...fields });
  return json({ ...viewOf(ctx, token, Date.now()), token: secret }, 201);
}

/**
 * Reads show what the store holds now; while it cannot be read they show, without waiting for its timeout
 * each time, the tokens this replica serves (fail static; `/readyz` says so).
 */
async function freshForReading(directory: TokenDirectory): Promise<void> {
  if (directory.status().ok) await directory.refresh();
}

/** `GET /admin/tokens` (list) and `POST /admin/tokens` (issue). */
export async function handleTokens(request: ClientRequest, ctx: RequestContext): Promise<Response> {
  const directory = directoryOf(ctx);
  if (request.method === "POST") return await issueToken(request, ctx, directory);
  await freshForReading(directory);
  return listTokens(request, ctx, directory);
}

/** `PATCH`: only the fields given; a change that changes nothing writes nothing. */
async function patchToken(
  request: ClientRequest,
  ctx: RequestContext,
  directory: TokenDirectory,
  id: string,
): Promise<Response> {
  await findStored(ctx, directory, id); // an unknown or read-only id is told before a bad body, as ever
  const given = await body(request, ctx);
  return await changeStored(ctx, directory, id, () => findStored(ctx, directory, id), (current) => {
    if (current.revoked_at !== null) {
      throw conflict("This token is revoked and cannot change.", "token_revoked");
    }
    const before = fieldsOf(current);
    const patch = validatePatch(given, before, ctx.state.config);
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const [key, to] of Object.entries(patch) as [keyof TokenFields, unknown][]) {
      // From the fields as validation saw them: a row stored before teams has no `team` (none, i.e. null).
      const from = before[key];
      if (JSON.stringify(from) !== JSON.stringify(to)) changes[key] = { from, to };
    }
    if (Object.keys(changes).length === 0) return { answer: json(viewOf(ctx, current, Date.now())) };
    const token: StoredToken = { ...current, ...patch, updated_at: writeTime(directory, current).iso };
    return { token, action: "update", changes, answer: () => json(viewOf(ctx, token, Date.now())) };
  });
}

/** `DELETE`: revoked for good, its hashes dropped; revoking again answers the first revocation. */
function revokeToken(ctx: RequestContext, directory: TokenDirectory, id: string): Promise<Response> {
  return changeStored(ctx, directory, id, () => findStored(ctx, directory, id), (current) => {
    if (current.revoked_at !== null) return { answer: json(viewOf(ctx, current, Date.now())) };
    const now = writeTime(directory, current).iso;
    const token: StoredToken = { ...current, revoked_at: now, updated_at: now, secrets: [] };
    return { token, action: "revoke", changes: {}, answer: () => json(viewOf(ctx, token, Date.now())) };
  });
}

/** `GET`, `PATCH` and `DELETE /admin/tokens/{id}`. */
export async function handleToken(
  request: ClientRequest,
  ctx: RequestContext,
  id: string,
): Promise<Response> {
  const directory = directoryOf(ctx);
  if (request.method === "GET" || request.method === "HEAD") {
    await freshForReading(directory);
    const now = Date.now();
    const stored = directory.tokens().find((t) => t.id === id);
    if (stored !== undefined) return json(viewOf(ctx, stored, now));
    const config = id.startsWith(CONFIG_ID_PREFIX)
      ? configTokens(ctx).find((t) => t.name === id.slice(CONFIG_ID_PREFIX.length))
      : undefined;
    if (config === undefined) throw notFound(id);
    return json(configView(config, now));
  }
  return request.method === "PATCH"
    ? await patchToken(request, ctx, directory, id)
    : await revokeToken(ctx, directory, id);
}

/**
 * Rotated-out secrets kept in their grace period beside the current one, at most. Each is a hash every replica
 * holds in its token map, so a script that rotates in a loop must not grow it without bound; past this, the
 * secret rotated out longest ago stops first.
 */
export const MAX_SECRETS_IN_GRACE = 4;

/**
 * `POST /admin/tokens/{id}/rotate`: a new current secret; the one it replaces keeps working for `grace`, and
 * secrets rotated out earlier keep their own end (at most {@linkcode MAX_SECRETS_IN_GRACE} of them). Rotations
 * of one token at once take effect one after another, each over the secrets the one before it left.
 */
export async function handleTokenRotate(
  request: ClientRequest,
  ctx: RequestContext,
  id: string,
): Promise<Response> {
  const directory = directoryOf(ctx);
  const given = await body(request, ctx, true);
  const secret = newSecret();
  return await changeStored(ctx, directory, id, () => findStored(ctx, directory, id), (current) => {
    if (current.revoked_at !== null) {
      throw conflict("This token is revoked and cannot be rotated.", "token_revoked");
    }
    const graceMs = validateRotate(given);
    const { ms: nowMs, iso: now } = writeTime(directory, current);
    const previousEnd = new Date(nowMs + graceMs).toISOString();
    const [replaced, ...older] = current.secrets;
    const stillInGrace = older.filter((s) => s.expires_at !== null && Date.parse(s.expires_at) > nowMs);
    const secrets: TokenSecret[] = [
      { sha256: hashToken(secret), expires_at: null },
      ...[
        ...(replaced !== undefined && graceMs > 0
          ? [{ sha256: replaced.sha256, expires_at: previousEnd }]
          : []),
        ...stillInGrace,
      ].slice(0, MAX_SECRETS_IN_GRACE),
    ];
    const token: StoredToken = { ...current, secrets, rotated_at: now, updated_at: now };
    return {
      token,
      action: "rotate",
      changes: { grace_ms: graceMs, previous_expires_at: previousEnd },
      answer: () =>
        json({ ...viewOf(ctx, token, Date.now()), token: secret, previous_expires_at: previousEnd }, 200),
    };
  });
}
