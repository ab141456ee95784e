/**
 * `GET /admin/audit`: who (which admin token) issued, changed, rotated or revoked which token, and when, from
 * the token store's audit trail. Entries never hold a secret or a hash.
 *
 * @module
 */
import { GatewayError, invalidRequest } from "../../errors.ts";
import { AUDIT_ACTIONS, AuditCursorError, type AuditQuery } from "../../tokens/types.ts";
import { isoParam, textParam } from "./operations.ts";
import { directoryOf, intParam, json, oneOf } from "./tokens.ts";
import type { RequestContext } from "../../http/context.ts";
import type { ClientRequest } from "../../runtime/types.ts";

/** `GET /admin/audit`: newest first, filtered, a page of entries older than `after`. */
export async function handleAudit(request: ClientRequest, ctx: RequestContext): Promise<Response> {
  const directory = directoryOf(ctx);
  const params = new URL(request.url).searchParams;
  const query: AuditQuery = {
    token: textParam(params, "token"),
    actor: textParam(params, "actor"),
    action: oneOf(params, "action", AUDIT_ACTIONS),
    from: isoParam(params, "from"),
    to: isoParam(params, "to"),
    limit: intParam(params, "limit", 1, 1000, 100),
    after: params.get("after") ?? undefined,
  };
  if (query.after !== undefined && !/^aud_[0-9a-f]{24}$/.test(query.after)) {
    throw invalidRequest(`'after' must be an audit entry id (aud_…).`, "after", "invalid_value");
  }
  let page;
  try {
    page = await directory.store.audit(query);
  } catch (err) {
    // A cursor naming no entry is the caller's (as in `GET /admin/tokens`): an empty last page would tell a
    // script paging with a mistyped or another deployment's cursor that the trail had ended.
    if (err instanceof AuditCursorError) {
      throw invalidRequest(`'after' names no audit entry ('${query.after}').`, "after", "invalid_value");
    }
    throw new GatewayError(503, "The token store cannot be reached; the audit trail cannot be read now.", {
      type: "server_error",
      code: "token_store_unavailable",
      cause: err,
    });
  }
  const data = page.entries.map((e) => ({
    object: "gateway.audit_entry",
    id: e.id,
    time: e.time,
    actor: e.actor,
    action: e.action,
    token_id: e.token_id,
    token_name: e.token_name,
    changes: e.changes,
  }));
  return json({
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: page.has_more,
  });
}
