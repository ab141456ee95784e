/**
 * `POST /v1/messages` to a target that speaks Anthropic's Messages API itself (an `anthropic` provider, or a
 * Claude model on `bedrock`): the client's body is passed through (lib/api/messages/native.ts) instead of
 * being translated to chat, so thinking signatures, `cache_control`, documents and beta features survive
 * unchanged. Policy ran on the request's chat form before routing, exactly as for a translated request; its
 * outcome (the output limit, redactions) is carried into the passed-through body here. The client's
 * `anthropic-version` and `anthropic-beta` travel with the call; the beta names a Bedrock target leaves out (it
 * takes only those Bedrock accepts) are named in `x-gateway-dropped`.
 *
 * @module
 */
import { messagesCacheSpec } from "./cache_spec.ts";
import { MESSAGES_FACTS } from "./native_facts.ts";
import type { ResolvedModel, ResolvedTarget, RoutedTarget } from "../../config/types.ts";
import {
  clientMessage,
  messageTexts,
  nativeMessagesBody,
  readMessagesUsage,
  redactMessages,
  usageTokens,
} from "./native.ts";
import { nativeMessagesStreamBody, type NativeMessagesStreamOutcome } from "./native_stream.ts";
import type { MessagesRequest } from "./request.ts";
import { anthropicBetasDropped, speaksNatively } from "../../providers/capabilities.ts";
import { noteDropped } from "../../http/tolerance.ts";
import type { Answer } from "../../http/accounting.ts";
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import type { RoutedAnswer } from "../../http/route_request.ts";
import { answerJson, answerStream, type NativeAnswer, type NativeRoute } from "../../answer/runner.ts";

/**
 * Whether `target` is served natively (the capability table: an `anthropic` provider, or a Claude model or
 * profile on Bedrock).
 */
export function isNativeMessagesTarget(target: ResolvedTarget): boolean {
  return speaksNatively(target, "messages");
}

/** What a well-formed `anthropic-version` is (a date, or a name): anything else is not sent upstream. */
const VERSION = /^[A-Za-z0-9._-]{1,64}$/;
/** What a well-formed `anthropic-beta` is: comma-separated names. */
const BETAS = /^[A-Za-z0-9._-]+(?:\s*,\s*[A-Za-z0-9._-]+)*\s*,?$/;

/**
 * The client's `anthropic-version` and `anthropic-beta` as forwarded upstream: each only when well-formed (a
 * header value is client text; a malformed one is not passed to the upstream, which then gets the provider's
 * configured version and no betas). Also what a count_tokens handler passes with `TokenCountInput.messages`.
 */
export function forwardedHeaders(
  version: string | null,
  betas: string | null,
): { anthropicVersion: string | null; anthropicBeta: string | null } {
  const beta = betas?.trim() ?? "";
  return {
    anthropicVersion: version !== null && VERSION.test(version.trim()) ? version.trim() : null,
    anthropicBeta: beta !== "" && beta.length <= 2048 && BETAS.test(beta) ? beta : null,
  };
}

/**
 * Names the client's betas `target` (the native target that answered) left out, in `x-gateway-dropped` and the
 * usage record's `dropped`: a Bedrock target forwards only the ones Bedrock takes. Nothing when it got them all.
 */
export function noteDroppedBetas(
  ctx: ClientContext,
  headers: Headers,
  target: RoutedTarget,
  parsed: MessagesRequest,
): void {
  const dropped = anthropicBetasDropped(target, forwardedHeaders(parsed.version, parsed.betas).anthropicBeta);
  noteDropped(ctx, headers, { refusal: null, native: [], dropped });
}

/**
 * How routing calls a native target: the client's body passed through (target's model, the policy's output
 * limit, redactions) with its `anthropic-version` and `anthropic-beta`; a whole answer must be a Message.
 */
export function nativeMessagesRoute(
  ctx: ClientContext,
  parsed: MessagesRequest,
  model: ResolvedModel,
): NativeRoute {
  const headers = forwardedHeaders(parsed.version, parsed.betas);
  return {
    speaks: isNativeMessagesTarget,
    valid: (body) => body.type === "message" && Array.isArray(body.content),
    what: "a Message",
    cache: () => messagesCacheSpec(parsed.body, headers),
    facts: () => MESSAGES_FACTS,
    call(target, provider) {
      // The policy may have lowered the output limit on the chat form; the upstream gets the one that applies.
      const limit = parsed.chat.max_completion_tokens ?? parsed.chat.max_tokens;
      const body = redactMessages(
        nativeMessagesBody(parsed.body, {
          model: target.model,
          maxTokens: typeof limit === "number" ? limit : null,
        }),
        model.contentRules,
      );
      const call = { ...upstreamCall(ctx, target), ...headers };
      return provider.messages?.(body, call) ?? Promise.resolve(undefined);
    },
  };
}

/**
 * The client's answer from a native target: the Message (or stream) with the alias as `model`, and usage from the
 * upstream's `usage` (cache writes and reads counted in the prompt), the gateway's count when it gave none. A
 * stream that broke keeps the upstream's prompt count; its output is what the client received.
 */
export async function answerNativeMessages(
  ctx: ClientContext,
  parsed: MessagesRequest,
  routed: RoutedAnswer<NativeAnswer>,
  alias: string,
): Promise<Answer> {
  const result = routed.value;
  const request = { chat: parsed.chat, asked: parsed.stream };
  noteDroppedBetas(ctx, routed.headers, routed.target, parsed);
  if (result.kind === "native") {
    const upstream = result.body;
    const reported = readMessagesUsage(upstream.usage);
    return await answerJson(routed.headers, request, {
      reported: reported && usageTokens(reported),
      texts: () => messageTexts(upstream),
      render: () => clientMessage(upstream, alias),
    });
  }
  return await answerStream<NativeMessagesStreamOutcome>(ctx, { ...routed, value: result.stream }, request, {
    body: (ending) => nativeMessagesStreamBody(result.stream, { ...ending, alias }),
    usage: ({ usage, end }) =>
      usage === undefined || usage === null
        ? undefined
        : end === "ok"
        ? { ...usageTokens(usage), estimated: false }
        : { prompt: usageTokens(usage).prompt },
  });
}
