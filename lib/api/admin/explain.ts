/**
 * `GET /admin/explain?token=<name>&model=<alias>[&endpoint=]`: what would happen to a request from that
 * token for that alias now, and why (policy/explain.ts). Reads counters and takes nothing.
 *
 * @module
 */
import { ENDPOINTS } from "../../config/schema.ts";
import type { ResolvedToken } from "../../config/types.ts";
import { GatewayError, printable } from "../../errors.ts";
import { explain } from "../../policy/explain.ts";
import { defaultEndpoint, MODEL_ENDPOINTS, type ModelEndpoint } from "../../policy/explanation.ts";
import { resolveStoredSecret, storedTokenScope } from "../../tokens/resolve_stored.ts";
import type { StoredToken } from "../../tokens/types.ts";
import { badParam } from "./operations.ts";
import type { RequestContext } from "../../http/context.ts";
import type { ClientRequest } from "../../runtime/types.ts";

const JSON_TYPE = { "content-type": "application/json" };

const MODEL_ENDPOINT_NAMES = Object.keys(MODEL_ENDPOINTS) as ModelEndpoint[];

function isModelEndpoint(value: string): value is ModelEndpoint {
  return Object.hasOwn(MODEL_ENDPOINTS, value);
}

function required(params: URLSearchParams, name: string): string {
  const value = params.get(name);
  if (value === null || value === "") throw badParam(name, `'${name}' is required.`);
  return value;
}

function notFound(param: string, message: string, code: string): GatewayError {
  return new GatewayError(404, message, { type: "invalid_request_error", param, code });
}

/**
 * The token named `name` in the live token map (config tokens and those issued through the API). A token
 * in its rotation grace period is in the map once per secret; the entry of its current secret is the one
 * that expires last (a rotated-out secret stops at its grace end, or earlier with the token).
 */
export function tokenByName(tokens: Iterable<ResolvedToken>, name: string): ResolvedToken | undefined {
  let found: ResolvedToken | undefined;
  const lasts = (t: ResolvedToken) => t.expiresAt ?? Infinity;
  for (const token of tokens) {
    if (token.name !== name) continue;
    if (found === undefined || lasts(token) > lasts(found)) found = token;
  }
  return found;
}

/**
 * The token issued through the admin API under `name` that was revoked last, resolved as the request path
 * resolves a stored token: the same function in the same scope (`ctx.state.config` is the served one, stored
 * teams merged), so its team (the team's limits, budget, model scope) and guardrails are enforcement's.
 */
function lastRevoked(ctx: RequestContext, name: string): { token: ResolvedToken; at: string } | undefined {
  const directory = ctx.services.tokens;
  let last: StoredToken | undefined;
  for (const stored of directory?.tokens() ?? []) {
    if (stored.name !== name || stored.revoked_at === null) continue;
    if (last === undefined || stored.revoked_at > (last.revoked_at ?? "")) last = stored;
  }
  if (last === undefined || last.revoked_at === null) return undefined;
  // Its secrets are gone (revoking empties them); the identity is what explaining needs.
  const secret = { sha256: "", expires_at: null };
  const scope = storedTokenScope(ctx.state.config, directory?.teams() ?? []);
  return { token: resolveStoredSecret(last, secret, scope), at: last.revoked_at };
}

/** `GET /admin/explain`: 400 without `token` or `model`, 404 for an unknown one, else the explanation. */
export async function handleExplain(request: ClientRequest, ctx: RequestContext): Promise<Response> {
  const params = new URL(request.url).searchParams;
  const name = required(params, "token");
  const alias = required(params, "model");
  const endpointParam = params.get("endpoint");
  if (endpointParam !== null && !isModelEndpoint(endpointParam)) {
    const known = (ENDPOINTS as readonly string[]).includes(endpointParam);
    throw badParam(
      "endpoint",
      `'endpoint' must be one of ${MODEL_ENDPOINT_NAMES.join(", ")}` +
        (known ? ` (the ${endpointParam} endpoint does not call a model).` : "."),
    );
  }
  const config = ctx.state.config;
  // The request's served map (server.ts merges the directory's stored tokens into it), so a live token is the
  // very identity the request path authenticates, resolved by the same function, team included.
  const live = tokenByName(config.tokens.values(), name);
  // A revoked token is in no token map, but "why does my token not work" is exactly when it is asked about.
  const revoked = live === undefined ? lastRevoked(ctx, name) : undefined;
  const token = live ?? revoked?.token;
  if (token === undefined) {
    throw notFound("token", `No token is named '${printable(name)}'.`, "token_not_found");
  }
  const model = config.models.get(alias);
  if (model === undefined) {
    throw notFound("model", `No model alias is named '${printable(alias)}'.`, "model_not_found");
  }
  const policy = ctx.services.policy;
  const explanation = await explain({
    token,
    alias,
    endpoint: endpointParam ?? defaultEndpoint(model.type),
    config,
    counters: policy.counters,
    health: ctx.routing.health,
    now: (policy.now ?? Date.now)(),
    revokedAt: revoked?.at,
  });
  // The alias was found above and the config is this request's snapshot, so an explanation is certain.
  return new Response(JSON.stringify(explanation), { headers: JSON_TYPE });
}
