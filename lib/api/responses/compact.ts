/**
 * `POST /v1/responses/compact` (OpenAI's "Compact a conversation"), which Codex calls when a long session
 * nears the context window: the conversation (`input`, or the stored one behind `previous_response_id`) comes
 * back as a `response.compaction` object whose `output` is what to send next time instead of it.
 *
 * A native target (`native_responses: true`) compacts it itself: the body is passed through (the target's
 * model, the stored conversation as items, redactions) and its answer returned with the gateway's id; its
 * `compaction` item holds state only that upstream can read. A translated target is asked, through the alias
 * itself, to summarise the conversation; the answer keeps the conversation's user messages and adds one
 * gateway-made `compaction` item with the summary (compaction_item.ts), which any target reads back later.
 * A native target is asked so too whenever `POST /v1/responses` would serve the request over the chat form
 * (`RequestGuardrails.chatOnly`): when an input guardrail changed a text the client's body cannot carry (that
 * body, which still holds the text as sent, goes nowhere), and when the answer is checked by an output guardrail
 * or gets masked values back (`reverse`), since a native compaction's summary is encrypted, so the gateway could
 * neither read it nor put a value back in it. The client still gets a compaction it can send back (Codex, which
 * compacts when its context fills, would otherwise be stuck), and `x-gateway-dropped` names what the chat form
 * went without. Of that, an earlier compaction's own (encrypted) item is kept in the answer as it was sent, since
 * the client's next history is the answer's `output` and nothing else holds those turns (`keptItems`).
 *
 * The summary is an answer like any other (lib/answer/guarded_answer.ts): output guardrails read it, a denial is
 * the 400 a Responses answer gets (recorded with what the upstream spent), a mask or replacement changes the
 * summary the `compaction` item holds, and `reverse` gives back the values the input guardrails masked. The user
 * messages it keeps are the client's own input as the client sent it (as a stored response's input items are):
 * not checked as an answer (the input guardrails judged them), and never a placeholder the client would send
 * back as its own text. A compaction passed through (no output guardrail, no `reverse`) is returned as the
 * upstream made it: nothing of it is checked, and the user messages it kept are as that upstream was sent them.
 *
 * Policy, limits and budgets apply as to a response (endpoint `responses`); one usage record, with the tokens
 * the compaction took and the guardrails' outcomes. Nothing is stored.
 *
 * @module
 */
import { badGateway, GatewayError, inClientTerms } from "../../errors.ts";
import type { ChatCompletion, ChatRequest, JsonObject } from "../../openai/types.ts";
import { admitChat, type Answer, noteOutcome } from "../../http/accounting.ts";
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { routeRequest } from "../../http/route_request.ts";
import { type ChatForm, chatFormServingTargets, paramServingTargets } from "../../http/tolerance.ts";
import { answerJson, completionReported, completionTexts, usageOf } from "../../answer/runner.ts";
import { responsesClientTerms } from "./client_terms.ts";
import { strictRefusal } from "./native_only.ts";
import { compactionItem, isUpstreamCompaction, upstreamCompactionPaths } from "./compaction_item.ts";
import { encryptedReasoningPaths } from "./reasoning_item.ts";
import { withHistory } from "./create.ts";
import { isNativeTarget, nativeTexts, targetsFor } from "./create_native.ts";
import { resolveItemReferences } from "./item_references.ts";
import { listedItem } from "./listed_items.ts";
import { nativeRequestBody, nativeUsage, redactNative, resentChanges } from "./native.ts";
import { parseResponsesRequest, type ResponsesRequest } from "./request.ts";
import { newId, responseUsage } from "./response.ts";
import type { ClientRequest } from "../../runtime/types.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import { openAIBetaOf } from "./openai_beta.ts";
import { noteResponsesDropped } from "./dropped.ts";
import { withItemIds } from "../../usage/responses_store.ts";
import { guardedAnswer } from "../../answer/guarded_answer.ts";

const ROUTE = ROUTES.responsesCompact;

/** What the alias is asked when it compacts a conversation itself. */
const INSTRUCTION = "Compact the conversation above into a summary that lets you continue the work without " +
  "it: the task and the user's requests, decisions made and why, the current state (files, commands, results), " +
  "open questions and the next steps. Keep names, paths, numbers and identifiers exact. Answer with the " +
  "summary only.";

/**
 * A routed compaction, as the answer runner's shapes (so the output guardrails take it as any answer): the native
 * target's own `response.compaction` object, or the translated target's summary as a completion.
 */
type Compaction = { kind: "native"; body: JsonObject } | { kind: "json"; body: ChatCompletion };

/** The compaction fields of a body as a Responses request (a compaction neither streams nor is stored). */
function requestFields(body: JsonObject): JsonObject {
  const { stream: _stream, store: _store, ...fields } = body;
  return fields;
}

/** The chat request a translated target summarises the conversation with. */
function summaryRequest(chat: ChatRequest): ChatRequest {
  const { tools: _t, tool_choice: _c, parallel_tool_calls: _p, response_format: _f, stream: _s, ...rest } =
    chat;
  return { ...rest, messages: [...chat.messages, { role: "user", content: INSTRUCTION }] };
}

/** Whether `item` is one of the user's messages (a message without a type is one). */
function isUserMessage(item: JsonObject): boolean {
  return item.role === "user" && (item.type === undefined || item.type === "message");
}

/**
 * What the gateway's compaction keeps of the conversation, in the conversation's order, before its own
 * `compaction` item. The user messages, as OpenAI's compaction keeps them: in the shape of the spec's `ItemField`
 * (what `CompactResource.output` holds), each with an id (the stored one, else a fresh `msg_…`), `status` and its
 * content as `input_text` parts, as the client's SDK parses them, not as the client sent them.
 *
 * And, when a native target answered over the chat form (`native`), an upstream's own `compaction` items
 * unchanged: the state of turns that upstream compacted earlier, which the chat form cannot read, so the summary
 * is written without it (`x-gateway-dropped` names it). The client replaces its history with this output (Codex
 * does), so an item left out would be gone for good; kept, the next call a native target is sent as the client's
 * body reads it back. A translated target's compaction keeps none: only a stored conversation brings one to it (a
 * request's own is refused there), and that alias could not read it back either. Reasoning items are not kept
 * (nor does OpenAI's compaction keep them): each belongs to the assistant turn it preceded, which the compaction
 * replaces, an upstream may refuse one sent without that turn, and the compacted conversation would grow by
 * every one of them at each compaction.
 */
function keptItems(parsed: ResponsesRequest, history: readonly JsonObject[], native: boolean): JsonObject[] {
  const kept = [...history, ...parsed.input].filter((item) =>
    isUserMessage(item) || (native && isUpstreamCompaction(item))
  );
  const messages = withItemIds(kept.filter(isUserMessage).map((item) => ({ ...item, type: "message" })))
    .map(listedItem);
  let next = 0;
  return kept.map((item) => isUserMessage(item) ? messages[next++] : item);
}

/** Handles one compaction request for an authenticated identity. */
export async function handleResponsesCompact(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  const body = requestFields(await readJsonBody(request, ctx.state.config.server, ctx.signal));
  // The stored conversation alone may be compacted (`input` is optional here, as in OpenAI's spec).
  const alone = { conversationAlone: true };
  const parsed = await resolveItemReferences(body, parseResponsesRequest(body, undefined, alone), ctx, alone);
  const chat = parsed.chat;
  const form: ChatForm = {
    chat: summaryRequest(chat),
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
  // As for a create: native-only items narrow to native targets, and a target whose parameter rules would refuse
  // the summary request is left for the alias's others.
  const model = paramServingTargets(targetsFor(resolveAlias(ctx, chat.model, ROUTE.modelType), parsed), form);
  const earlier = await withHistory(parsed, ctx);
  const history = earlier?.items ?? [];
  const terms = (err: unknown) => inClientTerms(err, responsesClientTerms(parsed));
  const beta = openAIBetaOf(request);
  await admitChat(ctx, ROUTE.endpoint, model, chat, nativeTexts(ctx, model, parsed, earlier)).catch((err) => {
    throw terms(err);
  });
  // Asked as admitted: with the output limit the policy lowered or set (the token's `max_tokens` ceiling, which
  // its budgets reserved for) and the texts the input guardrails changed.
  form.chat = summaryRequest(chat);
  // Guardrails that send a native target the summary request judge it by that request's rules, as generation does.
  const served = chatFormServingTargets(ctx, model, form);
  const routing = routeRequest(ctx, served, ctx.signal, async (target, provider): Promise<Compaction> => {
    const call = { ...upstreamCall(ctx, target), openaiBeta: beta };
    // The client's body only where it holds every change the input guardrails made, and where nothing of the
    // answer is checked or given masked values back (`chatOnly`: those read the summary, which only the chat form
    // gives as text; a native compaction's summary is encrypted), as a generation is served.
    if (isNativeTarget(target) && ctx.guardrails?.chatOnly !== true) {
      const changes = resentChanges(target, parsed.input, earlier);
      const native = redactNative(
        nativeRequestBody(body, changes),
        model.contentRules,
        ctx.guardrails?.nativeRewrites,
      );
      const answer = await provider.compact?.(native, call);
      // The capability table said this target speaks Responses; an adapter without the method disagrees (a bug).
      if (answer === undefined) throw new GatewayError(500, "The provider does not compact Responses.");
      if (answer.object !== "response.compaction" || !Array.isArray(answer.output)) {
        throw badGateway(
          `Provider "${target.provider}" answered with something other than a compaction.`,
          "upstream_invalid_response",
        );
      }
      return { kind: "native", body: answer };
    }
    const answer = await provider.chat(form.chat, call).catch((err) => {
      throw terms(err);
    });
    if (answer.kind === "stream") {
      await answer.chunks.cancel();
      throw new GatewayError(502, `Provider "${target.provider}" streamed an answer that was not asked for.`);
    }
    return answer;
  });
  // The summary through the output guardrails and given back its masked values, as any answer: a denial is the
  // 400 a Responses answer gets, recorded with what the upstream spent.
  const state = ctx.guardrails;
  // A withheld summary was the chat form's: its 400 names what that form went without.
  const dropped = (target: ResolvedTarget, headers: Headers) =>
    noteResponsesDropped(ctx, headers, target, parsed, beta, form);
  const routed = state ? await guardedAnswer(ctx, state, { chat, dropped }, routing) : await routing;
  // Checked in place: the guardrails give back the kind of answer they were given.
  const result = routed.value as Compaction;
  const id = newId("resp_");
  if (result.kind === "native") {
    const upstream = result.body;
    noteResponsesDropped(ctx, routed.headers, routed.target, parsed, beta, null);
    return await answerJson(routed.headers, { chat, signal: ctx.signal }, {
      reported: nativeUsage(upstream),
      texts: () => [],
      render: () => ({ ...upstream, id }),
    });
  }
  noteResponsesDropped(ctx, routed.headers, routed.target, parsed, beta, form);
  const completion = result.body;
  const message = completion.choices[0]?.message as { content?: unknown } | undefined;
  const summary = typeof message?.content === "string" ? message.content : "";
  if (summary.trim() === "") {
    // Refused, but the upstream answered: what it reports it used is the request's, recorded and charged.
    noteOutcome(ctx, { usage: await usageOf(completionReported(completion), { chat }, []) });
    throw badGateway(`Provider "${routed.target.provider}" answered the compaction with no summary.`);
  }
  return await answerJson(routed.headers, { chat, signal: ctx.signal }, {
    reported: completionReported(completion),
    texts: () => completionTexts(completion),
    render: (usage) => ({
      id,
      object: "response.compaction",
      created_at: Math.floor(Date.now() / 1000),
      output: [
        ...keptItems(parsed, history, isNativeTarget(routed.target)),
        compactionItem(newId("cmp_"), summary),
      ],
      usage: responseUsage(
        completion.usage ?? {
          prompt_tokens: usage.prompt,
          completion_tokens: usage.completion,
          total_tokens: usage.prompt + usage.completion,
        },
      ),
    }),
  });
}
