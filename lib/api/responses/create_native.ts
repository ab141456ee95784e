/**
 * `POST /v1/responses` to a target whose provider speaks the Responses API natively (`native_responses:
 * true`): the client's Responses body is passed through (lib/api/responses/native.ts) instead of being
 * translated to chat, so built-in tools and reasoning items keep their fidelity. Policy ran on the request's
 * chat form before routing, exactly as for a translated request; its outcome (the output limit, redactions)
 * is carried into the passed-through body here.
 *
 * `previous_response_id` is passed through (as the upstream's own id) only when the earlier response was
 * served natively by the same provider and the conversation behind it is whole (`Conversation.upstream`: with an
 * earlier response deleted or expired, the upstream's chain would still hold it); otherwise the stored
 * conversation is sent as input items.
 *
 * @module
 */
import { responsesCacheSpec } from "./cache_spec.ts";
import { RESPONSES_FACTS } from "./native_facts.ts";
import type { ResolvedModel, ResolvedTarget } from "../../config/types.ts";
import type { OpenAIBeta } from "../../providers/types.ts";
import { clientResponse, type NativeFrame, nativeRequestBody, nativeUsage, redactNative } from "./native.ts";
import { outputTexts } from "./output_texts.ts";
import { nativeStreamBody, type NativeStreamOutcome } from "./native_stream.ts";
import type { ResponsesRequest } from "./request.ts";
import { isResponseObject, type JsonObject } from "../../openai/types.ts";
import { speaksNatively } from "../../providers/capabilities.ts";
import { type Answer, readsNativeTexts } from "../../http/accounting.ts";
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import type { RoutedAnswer } from "../../http/route_request.ts";
import { answerJson, answerStream, type NativeAnswer, type NativeRoute } from "../../answer/runner.ts";
import { strictRefusal } from "./native_only.ts";
import { newTolerance, servingTargets, type Tolerance } from "../../http/tolerance.ts";
import { unreadableReasoningPaths } from "./gateway_reasoning.ts";
import { RESPONSES_START } from "./native_start.ts";
import type { Conversation } from "../../usage/responses_store.ts";
import type { NativeText } from "../../policy/content_rules.ts";
import { nativeRequestTexts } from "./native_texts.ts";

/** Whether `target` speaks the Responses API itself (the capability table; `native_responses: true`). */
export function isNativeTarget(target: ResolvedTarget): boolean {
  return speaksNatively(target, "responses");
}

/**
 * The alias's targets this request may go to, by the tolerance rule (lib/http/tolerance.ts): its native targets
 * only for a request using what they serve (a built-in tool, a file by id, …), else all of them; the request's
 * 400 (naming the param) when what it uses must be read by the model and the alias has no native target.
 */
export function targetsFor(model: ResolvedModel, parsed: ResponsesRequest): ResolvedModel {
  return servingTargets(model, parsed.tolerance, isNativeTarget, strictRefusal);
}

/**
 * The texts a native target of `model` reads in this request, for the content rules and the input guardrails
 * (native_texts.ts); none when the alias has no native target, whose texts are all in the chat form, or nothing
 * judges them.
 */
export function nativeTexts(
  ctx: ClientContext,
  model: ResolvedModel,
  parsed: ResponsesRequest,
  earlier: Conversation | null,
): NativeText[] | undefined {
  if (!readsNativeTexts(model, ctx.identity, isNativeTarget)) return undefined;
  return nativeRequestTexts(parsed, earlier?.items);
}

/**
 * What a native target went without of the request (lib/http/tolerance.ts): the reasoning items it could not
 * look up (gateway_reasoning.ts: the gateway's own, and under `store: false` any without encrypted content),
 * and the calls of the stored conversation the model never finished (cut_calls.ts).
 */
export function nativeDropped(parsed: ResponsesRequest): Tolerance {
  const reasoning = unreadableReasoningPaths(parsed.input, parsed.params.store);
  return { ...newTolerance(), dropped: [...reasoning, ...parsed.historyDropped ?? []] };
}

/** How an earlier response continues on a native target: its upstream id, or the conversation to resend. */
type Continuation =
  | { upstreamPrevious: string }
  | { history: Conversation; provider: string }
  | Record<never, never>;

/**
 * How routing calls a native target: the client's body passed through (target's model, the policy's output
 * limit, the conversation behind `previous_response_id`, redactions) with its beta opt-in (`openaiBeta`,
 * openai_beta.ts); a whole answer must be a Response. `earlier` is the stored conversation behind
 * `previous_response_id` (null without one), read before routing.
 */
export function nativeRoute(
  ctx: ClientContext,
  parsed: ResponsesRequest,
  client: JsonObject,
  model: ResolvedModel,
  earlier: Conversation | null,
  openaiBeta: OpenAIBeta | null,
): NativeRoute {
  const continuation = (target: ResolvedTarget): Continuation => {
    if (earlier === null) return {};
    const upstream = earlier.upstream;
    if (upstream !== null && upstream.provider === target.provider) return { upstreamPrevious: upstream.id };
    return { history: earlier, provider: target.provider };
  };
  return {
    speaks: isNativeTarget,
    valid: isResponseObject,
    what: "a Response object",
    start: RESPONSES_START,
    cache: () => responsesCacheSpec(client, openaiBeta),
    facts: () => RESPONSES_FACTS,
    async call(target, provider) {
      // The policy may have lowered (or set) the output limit on the chat form; the upstream gets the one that applies.
      const limit = parsed.chat.max_completion_tokens ?? parsed.chat.max_tokens;
      const body = redactNative(
        nativeRequestBody(client, {
          model: target.model,
          maxOutputTokens: typeof limit === "number" ? limit : null,
          input: parsed.input,
          ...continuation(target),
        }),
        model.contentRules,
        ctx.guardrails?.nativeRewrites,
      );
      return await provider.responses?.(body, { ...upstreamCall(ctx, target), openaiBeta });
    },
  };
}

/**
 * The client's answer from a native target: the Response (or stream) with the gateway's id and the alias,
 * usage from the upstream's `usage` (the gateway's count when it gave none), and `store(response, upstreamId)`
 * called with the final Response unless the request said `store: false`.
 */
export async function answerNative(
  ctx: ClientContext,
  parsed: ResponsesRequest,
  routed: RoutedAnswer<NativeAnswer>,
  client: { id: string; alias: string },
  store: (response: JsonObject, upstreamId: string | null) => Promise<void>,
): Promise<Answer> {
  const result = routed.value;
  const scrubber = ctx.state.config.scrubber;
  const frame: NativeFrame = {
    ...client,
    previousResponseId: parsed.params.previous_response_id,
    scrub: (text) => scrubber.scrub(text),
  };
  const request = { chat: parsed.chat, asked: parsed.stream };
  if (result.kind === "native") {
    const upstream = result.body;
    return await answerJson(routed.headers, { ...request, signal: ctx.signal }, {
      reported: nativeUsage(upstream),
      texts: () => outputTexts(upstream),
      render: () => clientResponse(upstream, frame),
      beforeSend: (response) =>
        store(response as JsonObject, typeof upstream.id === "string" ? upstream.id : null),
    });
  }
  return await answerStream<NativeStreamOutcome>(ctx, { ...routed, value: result.stream }, request, {
    body: (ending) => nativeStreamBody(result.stream, { ...ending, frame, onFinal: store }),
    usage: ({ usage }) => usage && { ...usage, estimated: false },
  });
}
