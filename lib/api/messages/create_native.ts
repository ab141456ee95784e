/**
 * `POST /v1/messages` to a target that speaks Anthropic's Messages API itself (an `anthropic` provider, or a
 * Claude model on `bedrock`): the client's body is passed through (lib/api/messages/native.ts) instead of
 * being translated to chat, so thinking signatures, `cache_control`, documents and beta features survive
 * unchanged. Policy ran on the request's chat form before routing, exactly as for a translated request; its
 * outcome (the output limit, redactions) is carried into the passed-through body here. The client's
 * `anthropic-version` and `anthropic-beta` travel with the call; the beta names a Bedrock target leaves out (it
 * takes only those Bedrock accepts) are named in `x-gateway-dropped`, as a translated target's are (all of them:
 * {@linkcode noteMessagesDropped}, which the translated path calls too).
 *
 * @module
 */
import { messagesCacheSpec } from "./cache_spec.ts";
import { MESSAGES_FACTS } from "./native_facts.ts";
import type { ResolvedModel, ResolvedTarget } from "../../config/types.ts";
import {
  clientMessage,
  messageTexts,
  nativeMessagesBody,
  readMessagesUsage,
  redactMessages,
  usageTokens,
} from "./native.ts";
import { nativeMessagesStreamBody, type NativeMessagesStreamOutcome } from "./native_stream.ts";
import { withoutUnsignedThinking } from "./unsigned_thinking.ts";
import type { MessagesRequest } from "./request.ts";
import {
  anthropicBetaPaths,
  anthropicBetasDropped,
  anthropicVersionDropped,
  speaksNatively,
} from "../../providers/capabilities.ts";
import { noteDropped, type Tolerance } from "../../http/tolerance.ts";
import type { Answer } from "../../http/accounting.ts";
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import type { RoutedAnswer } from "../../http/route_request.ts";
import { answerJson, answerStream, type NativeAnswer, type NativeRoute } from "../../answer/runner.ts";
import { MESSAGES_START } from "./native_start.ts";
import { promptClasses } from "../../openai/reported_prompt.ts";

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
 * Names what the request's target went without, in `x-gateway-dropped` and the usage record's `dropped`: the
 * client's betas it left out (`answeredBy`, the target that answered: none on Anthropic, those Bedrock does not
 * take on Claude there, of the header and of the body's `anthropic_beta`, and the body's `anthropic_version` that
 * Bedrock's replaced; every header name on a translated target; all of them when `answeredBy` is null, for what
 * was made from the chat form: a count the gateway made, or an answer any target gave to that form, a native
 * one too when the request's guardrails sent it so), then what a native target went without of the body (the
 * thinking blocks the gateway made, unsigned_thinking.ts), then the body's fields `fields` names (what a translated target or the
 * chat form did not get; none for a native target). The betas come first: Claude Code
 * sends them on every request, and a long list of field paths, cut to the header's bound, must not hide them.
 * Nothing when it went without nothing. The betas are named, never refused: a `strict` alias is held to the
 * body's fields only (lib/http/tolerance.ts `servingTargets`), since a translated target has no beta to serve.
 */
export function noteMessagesDropped(
  ctx: ClientContext,
  headers: Headers,
  answeredBy: ResolvedTarget | null,
  parsed: MessagesRequest,
  fields: Tolerance | null = null,
): void {
  const beta = forwardedHeaders(parsed.version, parsed.betas).anthropicBeta;
  const betas = answeredBy === null ? anthropicBetaPaths(beta) : [
    ...anthropicBetasDropped(answeredBy, beta, parsed.body),
    ...anthropicVersionDropped(answeredBy, parsed.body),
  ];
  // A native target went without the thinking the gateway made itself (and with it, maybe, thinking).
  const unsigned = answeredBy !== null && isNativeMessagesTarget(answeredBy)
    ? withoutUnsignedThinking(parsed.body).dropped
    : [];
  noteDropped(ctx, headers, {
    refusal: null,
    native: [],
    dropped: [...betas, ...unsigned, ...(fields?.native ?? []), ...(fields?.dropped ?? [])],
  });
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
    start: MESSAGES_START,
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
        ctx.guardrails?.nativeRewrites,
      );
      const call = { ...upstreamCall(ctx, target), ...headers };
      return provider.messages?.(body, call) ?? Promise.resolve(undefined);
    },
  };
}

/**
 * The client's answer from a native target: the Message (or stream) with the alias as `model`, and usage from the
 * upstream's `usage` (cache writes and reads counted in the prompt), the gateway's count when it gave none. A
 * stream that broke keeps the upstream's prompt count, with its cache reads and writes (priced apart); its output
 * is what the client received.
 */
export async function answerNativeMessages(
  ctx: ClientContext,
  parsed: MessagesRequest,
  routed: RoutedAnswer<NativeAnswer>,
  alias: string,
): Promise<Answer> {
  const result = routed.value;
  const request = { chat: parsed.chat, asked: parsed.stream };
  noteMessagesDropped(ctx, routed.headers, routed.target, parsed);
  if (result.kind === "native") {
    const upstream = result.body;
    const reported = readMessagesUsage(upstream.usage);
    return await answerJson(routed.headers, { ...request, signal: ctx.signal }, {
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
        : promptClasses(usageTokens(usage)),
  });
}
