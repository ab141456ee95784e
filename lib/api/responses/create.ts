/**
 * `POST /v1/responses` (OpenAI Responses API) over the chat form: the request is translated to a chat
 * request (this folder's request.ts) and goes through the same policy, routing and providers as a chat
 * completion; the answer is translated back to a Response object, or to the Responses event stream. One
 * usage record per request, under the endpoint `responses`.
 *
 * Unless `store: false`, the answer is stored (`ctx.services.responses`) under the caller's token: its own
 * input items and the Response object, put before the last byte is sent (the store answers in order, so a
 * `GET` that follows the answer sees it). A `previous_response_id` puts the stored conversation (earlier
 * inputs and outputs) before the new input.
 *
 * @module
 */
import { inClientTerms } from "../../errors.ts";
import { wasNotTried } from "../../timers/store_breaker.ts";
import { responsesClientTerms } from "./client_terms.ts";
import { historyMessages } from "./input_items.ts";
import { encryptedReasoningPaths } from "./reasoning_item.ts";
import { upstreamCompactionPaths } from "./compaction_item.ts";
import { parseResponsesRequest, type ResponsesRequest } from "./request.ts";
import { completionToResponse, newId, type ResponseFrame } from "./response.ts";
import { responsesStreamBody, type ResponsesStreamOutcome } from "./stream.ts";
import type { JsonObject } from "../../openai/types.ts";
import { estimateInputTokens } from "../../usage/estimate.ts";
import {
  answerJson,
  answerStream,
  completionReported,
  completionTexts,
  finalEventUsage,
  isNativeAnswer,
  routeAnswer,
  shownUsage,
} from "../../answer/runner.ts";
import { admitChat, type Answer } from "../../http/accounting.ts";
import type { ClientContext } from "../../http/context.ts";
import { previousConversation } from "./stored.ts";
import { referencesTooLong, resolveItemReferences } from "./item_references.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { answerNative, isNativeTarget, nativeRoute, nativeTexts, targetsFor } from "./create_native.ts";
import { strictRefusal } from "./native_only.ts";
import { type ChatForm, paramServingTargets } from "../../http/tolerance.ts";
import type { ClientRequest } from "../../runtime/types.ts";
import { openAIBetaOf } from "./openai_beta.ts";
import { noteResponsesDropped } from "./dropped.ts";
import { type Conversation, MAX_CHAIN_BYTES } from "../../usage/responses_store.ts";
import { dropOutputsFor, withoutCutCalls } from "./cut_calls.ts";

/**
 * Puts the earlier conversation of `previous_response_id` before the request's own input (after its
 * `instructions`, which are not carried over from earlier responses, as in OpenAI's API). The same 404 for an
 * id that never existed, was not stored, or is another token's; a 400 for a conversation too long to rebuild
 * (`previousConversation`), or for one that, with the items the input references, is over the same bound
 * (`referencesTooLong`, naming `input`). Returns the earlier conversation (null without a `previous_response_id`), which a
 * native target gets as it is, read once, without the calls the model never finished (cut_calls.ts).
 */
export async function withHistory(
  parsed: ResponsesRequest,
  ctx: ClientContext,
): Promise<Conversation | null> {
  const previous = parsed.params.previous_response_id;
  if (previous === null) return null;
  // A call the model never finished cannot be answered: left out, with any output for it, and named.
  const { conversation, callIds, dropped } = withoutCutCalls(await previousConversation(ctx, previous));
  // Counted only when the input references items: the store already held the conversation alone to the bound.
  if (
    parsed.referencedBytes > 0 &&
    parsed.referencedBytes + JSON.stringify(conversation.items).length > MAX_CHAIN_BYTES
  ) throw referencesTooLong(true);
  const messages = parsed.chat.messages;
  const at = parsed.params.instructions === null ? 0 : 1;
  const history = historyMessages(conversation.items);
  messages.splice(at, 0, ...history);
  // An error found in the earlier conversation names the parameter that brought it in.
  parsed.messageParams.splice(at, 0, ...history.map(() => "previous_response_id"));
  // A native target gets the client's input as sent: only the history is its to go without.
  parsed.historyDropped = dropped;
  parsed.tolerance.dropped.push(...dropped, ...(callIds.size > 0 ? dropOutputsFor(parsed, callIds) : []));
  return conversation;
}

/**
 * Stores a finished response unless the request said `store: false`. Awaited before the client gets the answer
 * (or a stream its last event), so the client's next call sees it on any replica sharing the store; a failed
 * put is logged, and the client keeps its answer. A `store: false` response is only remembered where the store
 * keeps such responses for the client's connection (a WebSocket's: its next message may chain from it).
 */
export function storeResponse(
  ctx: ClientContext,
  parsed: ResponsesRequest,
  provider: string,
  response: JsonObject,
  /**
   * When the gateway took the request (Unix seconds): the record's time, which retention counts from. Never the
   * Response's own `created_at`, which a native upstream wrote (missing, a string, or from its own clock).
   */
  createdAt: number,
  /** The upstream's own id of a natively served response; null for a translated one. */
  upstreamId: string | null = null,
): Promise<void> {
  const store = ctx.services.responses;
  const keep = parsed.params.store ? store.put : store.remember;
  if (keep === undefined) return Promise.resolve();
  return keep.call(store, {
    id: String(response.id),
    owner: ctx.identity.id,
    environment: ctx.identity.environment,
    created_at: createdAt,
    alias: String(response.model),
    provider,
    native: upstreamId !== null,
    upstream_id: upstreamId,
    previous_response_id: parsed.params.previous_response_id,
    // An item without a type is a message (OpenAI's default); its list shows it with its type.
    input_items: parsed.input.map((item) => item.type === undefined ? { type: "message", ...item } : item),
    response,
  }).catch((err) => {
    // While the store is down, a put it did not try is no news: the one that failed, and each probe, said so.
    if (wasNotTried(err)) return;
    ctx.logger.error("response_store_failed", {
      request_id: ctx.requestId,
      error: err instanceof Error ? err.message : String(err),
    });
  });
}

/** Handles one Responses request for an authenticated identity. */
export async function handleResponses(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const parsed = await resolveItemReferences(body, parseResponsesRequest(body), ctx);
  const chat = parsed.chat;
  const model = resolveAlias(ctx, chat.model, ROUTES.responses.modelType, parsed.stream);
  const form: ChatForm = {
    chat,
    native: isNativeTarget,
    strictError: strictRefusal,
    clientTerms: responsesClientTerms(parsed),
    // A native target its guardrails served the chat form: the texts that form holds nowhere, the items' state.
    chatLoses: () => [
      ...(ctx.guardrails?.chatLoses ?? []),
      ...encryptedReasoningPaths(parsed.input),
      ...upstreamCompactionPaths(parsed.input),
    ],
  };
  // Built-in tools and their items narrow the targets to native ones (a 400 naming the param when there are
  // none); of the others, those whose parameter rules would refuse the chat form are left out.
  const targets = paramServingTargets(targetsFor(model, parsed), form);
  const earlier = await withHistory(parsed, ctx);
  const stream = parsed.stream;
  const beta = openAIBetaOf(request);
  // What only a native target reads (a reasoning item no assistant turn follows, a plain-text file) is judged too.
  const native = nativeTexts(ctx, targets, parsed, earlier);
  await admitChat(ctx, ROUTES.responses.endpoint, model, chat, native).catch((err) => {
    throw inClientTerms(err, responsesClientTerms(parsed));
  });
  // The policy may have lowered (or set) the output limit: the Response echoes the one that applied.
  const limit = chat.max_completion_tokens ?? chat.max_tokens;
  const frame: ResponseFrame = {
    id: newId("resp_"),
    createdAt: Math.floor(Date.now() / 1000),
    alias: model.alias,
    params: typeof limit === "number" && limit !== parsed.params.max_output_tokens
      ? { ...parsed.params, max_output_tokens: limit }
      : parsed.params,
    callable: parsed.callable,
  };
  const routed = await routeAnswer(
    ctx,
    targets,
    {
      chat,
      asked: stream,
      clientTerms: (err) => inClientTerms(err, responsesClientTerms(parsed)),
      form,
      // Over the chat form (an answer the guardrails withheld was): what it went without.
      dropped: (answeredBy, headers) => noteResponsesDropped(ctx, headers, answeredBy, parsed, beta, form),
    },
    nativeRoute(ctx, parsed, body, model, earlier, beta),
  );
  const { value: result, target } = routed;
  const store = (response: JsonObject, upstreamId: string | null = null) =>
    storeResponse(ctx, parsed, target.provider, response, frame.createdAt, upstreamId);
  if (isNativeAnswer(result)) {
    // A native target that does not take the beta opt-in (Azure) is told of it as a translated one is, and of
    // the gateway's own reasoning items it went without.
    noteResponsesDropped(ctx, routed.headers, target, parsed, beta, null);
    return await answerNative(ctx, parsed, { ...routed, value: result }, frame, store);
  }
  // Over the chat form: the answer says which fields (and beta names: all) the target went without.
  noteResponsesDropped(ctx, routed.headers, target, parsed, beta, form);

  if (result.kind === "json") {
    const completion = result.body;
    return await answerJson(routed.headers, { chat, signal: ctx.signal }, {
      reported: completionReported(completion),
      texts: () => completionTexts(completion),
      render: (usage) =>
        completionToResponse(
          completion,
          frame,
          shownUsage(completion, usage),
        ),
      beforeSend: (response) => store(response as JsonObject),
    });
  }

  // The usage counted for the final event when the upstream sent none, reused for the record.
  const final = finalEventUsage(() => estimateInputTokens(chat));
  return await answerStream<ResponsesStreamOutcome>(ctx, { ...routed, value: result.stream }, {
    chat,
    asked: stream,
  }, {
    body: (ending) =>
      responsesStreamBody(result.stream, {
        ...ending,
        frame,
        countUsage: final.count,
        onFinal: (response) => store(response),
        maxOutput: ctx.state.config.server.upstream_limits.max_body_size,
      }),
    usage: final.usage,
  });
}
