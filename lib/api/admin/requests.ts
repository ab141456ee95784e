/**
 * `GET /admin/requests`: the request log over the usage records, newest first, filtered and paged. The
 * console's request log and its "most recent denied requests" read it; usage records never hold prompt text,
 * so neither does this.
 *
 * @module
 */
import { GatewayError, invalidRequest } from "../../errors.ts";
import { UsageQueryError } from "../../usage/query.ts";
import {
  GUARDRAIL_LIMITS,
  type RecordListQuery,
  type StatusFilter,
  TRACE_ID_PATTERN,
} from "../../usage/record.ts";
import { decodeCursor, DEFAULT_RECORD_LIMIT, MAX_RECORD_LIMIT } from "../../usage/record_list.ts";
import { badParam, parseUsageFilters, textParam } from "./operations.ts";
import type { RequestContext } from "../../http/context.ts";
import type { ClientRequest } from "../../runtime/types.ts";

const JSON_TYPE = { "content-type": "application/json" };

/** `status`: a code (`429`) or a class (`4xx`, `5xx`; `1xx`-`3xx` too, for completeness). */
function statusParam(value: string): StatusFilter {
  const cls = /^([1-5])xx$/i.exec(value);
  if (cls) return { class: Number(cls[1]) };
  if (/^[1-5][0-9]{2}$/.test(value)) return { code: Number(value) };
  throw badParam("status", "'status' must be a status code like 429 or a class like 4xx or 5xx.");
}

/**
 * Parses `GET /admin/requests`'s query string: the usage filters, `status`, `trace_id`, `guardrail` (the
 * records one guardrail acted on), `limit` and `before`.
 */
export function parseRecordListQuery(url: string): RecordListQuery {
  const params = new URL(url).searchParams;
  const query: RecordListQuery = parseUsageFilters(params);
  const status = params.get("status");
  if (status !== null) query.status = statusParam(status);
  const traceId = params.get("trace_id");
  if (traceId !== null) {
    // As OpenTelemetry writes it (and the access log and `traceparent` carry it): an upper-case copy would
    // match nothing, so it is refused rather than answered with an empty, misleading page.
    if (!TRACE_ID_PATTERN.test(traceId)) {
      throw badParam("trace_id", "'trace_id' must be a trace id: 32 lower-case hex digits.");
    }
    query.trace_id = traceId;
  }
  const guardrail = textParam(params, "guardrail");
  if (guardrail !== undefined) {
    if (guardrail === "" || guardrail.length > GUARDRAIL_LIMITS.chars) {
      throw badParam(
        "guardrail",
        `'guardrail' must name one guardrail (1-${GUARDRAIL_LIMITS.chars} characters).`,
      );
    }
    query.guardrail = guardrail;
  }
  const limit = params.get("limit");
  if (limit !== null) {
    const n = /^[0-9]{1,5}$/.test(limit) ? Number(limit) : Number.NaN;
    if (!(n >= 1 && n <= MAX_RECORD_LIMIT)) {
      throw badParam(
        "limit",
        `'limit' must be an integer from 1 to ${MAX_RECORD_LIMIT} (default ${DEFAULT_RECORD_LIMIT}).`,
      );
    }
    query.limit = n;
  }
  const before = params.get("before");
  if (before !== null) {
    if (cursorHoldsNul(before)) {
      throw badParam("before", "'before' must be the next_cursor of a previous page.");
    }
    query.before = before;
  }
  return query;
}

/**
 * Whether `before` decodes to a position holding NUL: never one of ours, and PostgreSQL's text cannot hold it
 * (the query would fail as if the database were down). A cursor that does not decode is the store's 400.
 */
function cursorHoldsNul(before: string): boolean {
  try {
    const { time, uid } = decodeCursor(before);
    return time.includes("\u0000") || uid.includes("\u0000");
  } catch {
    return false;
  }
}

/**
 * `GET /admin/requests?from=&to=&token=&…&status=4xx&trace_id=&guardrail=&limit=&before=`:
 * `{"object":"list","data":[record…],"has_more","next_cursor"}`. Records still queued are flushed first, so a request finished before the call
 * is in the log.
 */
export async function handleRequests(request: ClientRequest, ctx: RequestContext): Promise<Response> {
  const store = ctx.services.usageStore;
  if (store === null) {
    throw new GatewayError(503, "No usage store is configured (usage.sqlite is none).", {
      type: "server_error",
      code: "usage_store_disabled",
    });
  }
  const query = parseRecordListQuery(request.url);
  await store.flush();
  let page;
  try {
    page = await store.listRecords(query);
  } catch (err) {
    // A cursor that is not one of ours (or a filter the store refuses) is the client's 400.
    if (err instanceof UsageQueryError) throw invalidRequest(err.message, err.param, "invalid_value");
    throw err;
  }
  return new Response(JSON.stringify({ object: "list", ...page }), { headers: JSON_TYPE });
}
