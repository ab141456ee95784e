/**
 * A prewarm (`generate: false` in a WebSocket `response.create`, websocket.ts): the request is taken like any
 * other (its body validated, its alias and endpoint scope, `previous_response_id` and item references
 * resolved, admitted by the policy, which counts it as a request of no tokens) but no upstream is called. It
 * is answered with `response.created` and `response.completed` of an empty Response, which is stored (unless
 * `store: false`) with this request's input, so a later request can chain from it with `previous_response_id`
 * and carry that input (instructions are not carried, as for any stored response).
 *
 * @module
 */
import { inClientTerms } from "../../errors.ts";
import { admitChat, type Answer } from "../../http/accounting.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { responsesClientTerms } from "./client_terms.ts";
import { storeResponse, withHistory } from "./create.ts";
import { resolveItemReferences } from "./item_references.ts";
import { parseResponsesRequest } from "./request.ts";
import { newId, type ResponseFrame, responseObject, responseUsage } from "./response.ts";
import { encodeEvent } from "./stream_events.ts";
import type { ClientRequest } from "../../runtime/types.ts";

/** What a prewarmed Response names as its provider in the store: none was called. */
export const PREWARM_PROVIDER = "";

/** Handles a prewarm for an authenticated identity: the two events of an empty Response, as a stream. */
export async function handleResponsesPrewarm(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  // Its route is a generation's, but a prewarm asks no model to answer: no GenAI operation for `/metrics`.
  ctx.operation = null;
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const parsed = await resolveItemReferences(body, parseResponsesRequest(body), ctx);
  const model = resolveAlias(ctx, parsed.chat.model, ROUTES.responses.modelType, true);
  await withHistory(parsed, ctx);
  await admitChat(ctx, ROUTES.responses.endpoint, model, parsed.chat).catch((err) => {
    throw inClientTerms(err, responsesClientTerms(parsed));
  });
  const frame: ResponseFrame = {
    id: newId("resp_"),
    createdAt: Math.floor(Date.now() / 1000),
    alias: model.alias,
    params: parsed.params,
  };
  const usage = responseUsage({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  const completed = responseObject(frame, { status: "completed", output: [], usage });
  await storeResponse(ctx, parsed, PREWARM_PROVIDER, completed, frame.createdAt);
  const created = responseObject(frame, { status: "in_progress", output: [] });
  const events = [
    encodeEvent({ type: "response.created", response: created, sequence_number: 0 }),
    encodeEvent({ type: "response.completed", response: completed, sequence_number: 1 }),
  ];
  const bytes = new Uint8Array(events[0].byteLength + events[1].byteLength);
  bytes.set(events[0]);
  bytes.set(events[1], events[0].byteLength);
  return {
    response: new Response(bytes, {
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
    }),
    outcome: { usage: { prompt: 0, completion: 0, estimated: false } },
  };
}
