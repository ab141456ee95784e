/**
 * The stored-response routes: `GET /v1/responses/{id}` (the Response object as it was answered, or with
 * `stream=true` replayed as its events: replay.ts),
 * `DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items` (OpenAI's list object, paged) and
 * `POST /v1/responses/{id}/cancel`. A response is visible only to the token that created it: another token, an
 * id that never existed, a deleted or pruned response and a `store: false` one all get the same 404, so ids
 * cannot be probed across tokens.
 *
 * @module
 */
import { GatewayError, invalidRequest, printable } from "../../errors.ts";
import { listedItem } from "./listed_items.ts";
import type { Conversation, ItemsPage } from "../../usage/responses_store.ts";
import { UsageQueryError } from "../../usage/query.ts";
import { admit, type Answer } from "../../http/accounting.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import type { ClientRequest } from "../../runtime/types.ts";
import { SSE_HEADERS } from "../../answer/runner.ts";
import { INCLUDABLE } from "./request.ts";
import { replayEvents } from "./replay.ts";
import { encodeEvent } from "./stream_events.ts";
import { badValue, wrongType } from "./validate.ts";

const JSON_TYPE = { "content-type": "application/json" };

/** OpenAI's 404 for a response id it does not know (or that is not the caller's). */
export function responseNotFound(id: string): GatewayError {
  return new GatewayError(404, `Response with id '${printable(id)}' not found.`, {
    type: "invalid_request_error",
  });
}

/** OpenAI's 404 for a `previous_response_id` it does not know (or that is not the caller's). */
export function previousResponseNotFound(id: string): GatewayError {
  return new GatewayError(404, `Previous response with id '${printable(id)}' not found.`, {
    type: "invalid_request_error",
    param: "previous_response_id",
    code: "previous_response_not_found",
  });
}

/** OpenAI's 400 for a context too long, naming `previous_response_id`: the conversation behind it is too big. */
function conversationTooLong(message: string): GatewayError {
  return new GatewayError(400, message, {
    type: "invalid_request_error",
    param: "previous_response_id",
    code: "context_length_exceeded",
  });
}

/**
 * The stored conversation up to response `previous` (the caller's), oldest first, as `previous_response_id`
 * continues it: the 404 when it is not found, the 400 when it is over what the gateway rebuilds (the store's
 * `MAX_CHAIN_BYTES` or `MAX_CHAIN`: a too-long context, named as such, never sent upstream).
 */
export async function previousConversation(ctx: ClientContext, previous: string): Promise<Conversation> {
  const conversation = await ctx.services.responses.chain(previous, ctx.identity.id).catch((err: unknown) => {
    const tooLong = err instanceof UsageQueryError && err.param === "previous_response_id";
    throw tooLong ? conversationTooLong(err.message) : err;
  });
  if (conversation === null) throw previousResponseNotFound(previous);
  return conversation;
}

function json(body: unknown): Answer {
  return { response: new Response(JSON.stringify(body), { headers: JSON_TYPE }), outcome: {} };
}

/** `GET` (the stored Response object) or `DELETE` (OpenAI's deletion object) of one stored response. */
export async function handleStoredResponse(
  request: ClientRequest,
  ctx: ClientContext,
  id: string,
): Promise<Answer> {
  await admit(ctx, ROUTES.response.endpoint, 0);
  const store = ctx.services.responses;
  const owner = ctx.identity.id;
  if (request.method === "DELETE") {
    if (!await store.delete(id, owner)) throw responseNotFound(id);
    return json({ id, object: "response", deleted: true });
  }
  const query = retrieveQuery(new URL(request.url));
  const stored = await store.get(id, owner);
  if (stored === null) throw responseNotFound(id);
  if (!query.stream) return json(stored.response);
  const frames = replayEvents(stored.response, query.startingAfter).map(encodeEvent);
  const body = new Uint8Array(frames.reduce((n, frame) => n + frame.byteLength, 0));
  frames.reduce((at, frame) => (body.set(frame, at), at + frame.byteLength), 0);
  return { response: new Response(body, { headers: SSE_HEADERS }), outcome: {} };
}

/** A query boolean (`true` or `false`, as the `openai` SDKs send it), refused otherwise. */
function queryBoolean(q: URLSearchParams, key: string): boolean | undefined {
  const value = q.get(key);
  if (value === null || value === "") return undefined;
  if (value !== "true" && value !== "false") throw badValue(key, value, ["true", "false"]);
  return value === "true";
}

/**
 * The query of `GET /v1/responses/{id}` (the spec's `stream`, `starting_after`, `include`,
 * `include_obfuscation`), each refused with a 400 naming it when it is not what the spec takes. `include` comes
 * as `include[]=…` from the `openai` SDK, or repeated `include=…`; what a response includes was settled when it
 * was made (a native target's encrypted reasoning is in it, a translated one never had any), so the stored
 * Response is answered as it is.
 */
function retrieveQuery(url: URL): { stream: boolean; startingAfter?: number } {
  const q = url.searchParams;
  const stream = queryBoolean(q, "stream") ?? false;
  // Obfuscation pads deltas against side channels on a live stream; a replay of stored events adds none.
  queryBoolean(q, "include_obfuscation");
  const after = q.get("starting_after");
  let startingAfter: number | undefined;
  if (after !== null && after !== "") {
    if (!/^\d{1,15}$/.test(after)) throw wrongType("starting_after", "an integer", after);
    if (!stream) {
      throw invalidRequest(
        "The 'starting_after' parameter is only allowed when 'stream' is enabled.",
        "starting_after",
        "invalid_value",
      );
    }
    startingAfter = Number(after);
  }
  const include = [...q.entries()].filter(([key]) => /^include(\[\d*\])?$/.test(key)).map(([, v]) => v);
  include.forEach((value, i) => {
    if (!INCLUDABLE.includes(value)) throw badValue(`include[${i}]`, value, INCLUDABLE);
  });
  return { stream, startingAfter };
}

/**
 * `POST /v1/responses/{id}/cancel`: OpenAI cancels a response created with `background: true`. The gateway takes
 * no background request, so every response it stored had finished before the client got its id: the caller's
 * own is OpenAI's 400 for a response that was not created in the background, any other id the 404 of `GET`.
 */
export async function handleCancelResponse(
  _request: ClientRequest,
  ctx: ClientContext,
  id: string,
): Promise<Answer> {
  await admit(ctx, ROUTES.responseCancel.endpoint, 0);
  if (await ctx.services.responses.get(id, ctx.identity.id) === null) throw responseNotFound(id);
  throw invalidRequest("Cannot cancel a synchronous response.");
}

/** The page a query string asks for; `limit` must be an integer (the store checks its range). */
function pageOf(url: URL): ItemsPage {
  const q = url.searchParams;
  const page: ItemsPage = {};
  const after = q.get("after");
  if (after !== null && after !== "") page.after = after;
  const before = q.get("before");
  if (before !== null && before !== "") page.before = before;
  const limit = q.get("limit");
  if (limit !== null && limit !== "") {
    page.limit = /^\d{1,9}$/.test(limit) ? Number(limit) : Number.NaN;
  }
  const order = q.get("order");
  if (order !== null && order !== "") page.order = order as ItemsPage["order"];
  return page;
}

/** One page of a stored response's own input items, as OpenAI's list object. */
export async function handleInputItems(
  request: ClientRequest,
  ctx: ClientContext,
  id: string,
): Promise<Answer> {
  await admit(ctx, ROUTES.responseInputItems.endpoint, 0);
  let list;
  try {
    list = await ctx.services.responses.inputItems(id, ctx.identity.id, pageOf(new URL(request.url)));
  } catch (err) {
    if (err instanceof UsageQueryError) throw invalidRequest(err.message, err.param, "invalid_value");
    throw err;
  }
  if (list === null) throw responseNotFound(id);
  return json({ ...list, data: list.data.map(listedItem) });
}
