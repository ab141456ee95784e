/**
 * `POST /v1/messages` (Anthropic's Messages API), for Claude Code and the Anthropic SDKs. The request is
 * validated and translated to the chat form (this folder's request.ts), on which policy runs as for every
 * endpoint (limits, budgets, content rules, the max_tokens ceiling; endpoint name `messages`). Routing then
 * sends it to each target in its own way: a target that speaks the Messages API itself (Anthropic, Claude on
 * Bedrock) gets the client's body passed through (create_native.ts); every other target gets the chat form,
 * and its answer is translated back to a Message or to Anthropic's event stream. One usage record per request.
 *
 * The tolerance rule (lib/http/tolerance.ts) picks the targets: a request using what only Claude serves
 * (server tools, `container`, …) goes to the alias's native targets when it has some; a translated target
 * goes without what it cannot serve, and the answer lists it in `x-gateway-dropped` (a `strict` alias refuses
 * instead), after the client's `anthropic-beta` names, which no translated target gets (named, never refused).
 * `top_k` goes to native targets and the translated ones that take it (`takesTopK`: vLLM, Ollama and other
 * OpenAI-compatible servers; not Azure or OpenAI's own API). Of the translated targets, one whose parameter
 * rules would refuse the chat form (`disable_parallel_tool_use` on Gemini, `thinking` on a Bedrock model that
 * is not Claude) is left out for the alias's others, and what the answering one's provider drops is named too.
 *
 * @module
 */
import type { ResolvedModel, ResolvedTarget } from "../../config/types.ts";
import { type GatewayError, inClientTerms, invalidRequest } from "../../errors.ts";
import {
  answeredTolerance,
  type ChatForm,
  paramServingTargets,
  servingTargets,
} from "../../http/tolerance.ts";
import { fieldError } from "./validate.ts";
import { effortWithheld } from "./effort_hint.ts";
import { messagesClientTerms, type MessagesRequest, parseMessagesRequest } from "./request.ts";
import { completionToMessage, type MessageFrame, newId } from "./response.ts";
import { messagesStreamBody, type MessagesStreamOutcome } from "./stream.ts";
import { takesTopK } from "../../providers/capabilities.ts";
import { estimateInputTokens, promptTexts, roughTokenEstimate } from "../../usage/estimate.ts";
import { admitChat, type Answer, noteOutcome, readsNativeTexts } from "../../http/accounting.ts";
import { nativeTextsOf } from "../../policy/content_rules.ts";
import { messagesTexts } from "./native_texts.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import {
  answerNativeMessages,
  isNativeMessagesTarget,
  nativeMessagesRoute,
  noteMessagesDropped,
} from "./create_native.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
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
import type { ClientRequest } from "../../runtime/types.ts";

const ROUTE = ROUTES.messages;

/** The 400 of a `strict` alias whose translated target would go without `path`. */
export function strictRefusal(path: string): GatewayError {
  return fieldError(
    path,
    "this alias is strict, and its target cannot take this field; send the request without it.",
  );
}

/**
 * The alias's targets that can serve the request: the tolerance rule's (lib/http/tolerance.ts: Claude targets
 * for what only Claude serves), and of those, for `top_k`, the targets that take it (Claude and
 * OpenAI-compatible ones; a 400 when none does).
 */
export function messagesTargets(model: ResolvedModel, parsed: MessagesRequest): ResolvedModel {
  const serving = servingTargets(model, parsed.tolerance, isNativeMessagesTarget, strictRefusal);
  if (parsed.chat.top_k === undefined) return serving;
  const targets = serving.targets.filter((t) => isNativeMessagesTarget(t) || takesTopK(t));
  if (targets.length === serving.targets.length) return serving;
  if (targets.length === 0) {
    throw invalidRequest(
      "top_k: this alias's target takes no top_k (only Claude and OpenAI-compatible targets do); send the " +
        "request without it.",
      "top_k",
      "unsupported_parameter",
    );
  }
  return { ...serving, targets };
}

/** Handles one Messages request for an authenticated identity. */
export async function handleMessages(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  const parsed = parseMessagesRequest(
    await readJsonBody(request, ctx.state.config.server, ctx.signal),
    request.headers,
  );
  const chat = parsed.chat;
  const form: ChatForm = {
    chat,
    native: isNativeMessagesTarget,
    strictError: strictRefusal,
    clientTerms: messagesClientTerms(parsed),
    // An effort that is a hint is withheld from a target that cannot take it, and named (effort_hint.ts).
    withheld: effortWithheld(parsed),
    // A Claude target its guardrails served the chat form: the texts that form holds nowhere (its documents).
    chatLoses: () => ctx.guardrails?.chatLoses ?? [],
  };
  const model = paramServingTargets(
    messagesTargets(resolveAlias(ctx, chat.model, ROUTE.modelType, parsed.stream), parsed),
    form,
  );
  const stream = parsed.stream;
  // What only a Claude target reads (a document of content blocks) is judged too, when one may get the body.
  const native = nativeTextsOf(
    parsed.body,
    messagesTexts,
    readsNativeTexts(model, ctx.identity, isNativeMessagesTarget),
  );
  await admitChat(ctx, ROUTE.endpoint, model, chat, native);
  // A translated stream's message_start carries the prompt's tokens before the upstream reports them (chat
  // upstreams do at the end): counted while the upstream is asked, so the client's first byte does not wait
  // for a count begun only once the upstream's first content is in (the count worker may be busy or loading).
  // The wait ends with the request (its client gone, shutdown): see below.
  const countPrompt = () =>
    estimateInputTokens(chat, ctx.signal).catch(() => roughTokenEstimate(promptTexts(chat)));
  const promptCount = stream && model.targets.some((t) => !isNativeMessagesTarget(t))
    ? countPrompt()
    : undefined;
  const dropped = (target: ResolvedTarget, headers: Headers) =>
    noteMessagesDropped(ctx, headers, null, parsed, answeredTolerance(target, parsed.tolerance, form));
  const routed = await routeAnswer(
    ctx,
    model,
    {
      chat,
      asked: stream,
      clientTerms: (err) => inClientTerms(err, messagesClientTerms(parsed)),
      form,
      dropped,
    },
    nativeMessagesRoute(ctx, parsed, model),
  );
  const { value: result, target, headers } = routed;
  if (isNativeAnswer(result)) {
    return await answerNativeMessages(ctx, parsed, { ...routed, value: result }, model.alias);
  }
  // Translated: the history's thinking blocks did not reach the target as blocks (their text went as
  // `reasoning_content`, which OpenAI-compatible upstreams read); the answer says how many were left out,
  // and which of the client's betas (all: the chat form has none, whatever the target, a native one sent it by
  // the request's guardrails too) and fields the target went without.
  if (parsed.droppedThinking > 0) headers.set("x-gateway-dropped-thinking", String(parsed.droppedThinking));
  dropped(target, headers);
  const frame: MessageFrame = {
    id: newId("msg_"),
    alias: model.alias,
    stopSequences: parsed.stopSequences,
    provider: target.provider,
  };

  if (result.kind === "json") {
    const completion = result.body;
    return await answerJson(headers, { chat, signal: ctx.signal }, {
      reported: completionReported(completion),
      texts: () => completionTexts(completion),
      render: (usage) => {
        try {
          return completionToMessage(completion, frame, shownUsage(completion, usage));
        } catch (err) {
          // Refused (arguments that are not an object), but the upstream answered: its usage is the request's.
          noteOutcome(ctx, { usage });
          throw err;
        }
      },
    });
  }

  const inputTokens = stream ? await (promptCount ?? countPrompt()) : 0;
  // Ended while the prompt was counted (the tokenizer loading or busy): no body is built. It would be a stream
  // nobody reads, never ended nor reported (shutdown closes the connection); the request ends as its signal says
  // instead (499 for a client gone, 503 server_shutdown), the routed stream cancelled with it (ctx.abandon).
  if (ctx.signal.aborted) throw ctx.signal.reason;
  const final = finalEventUsage(() => Promise.resolve(inputTokens));
  const answered = { chat, asked: stream, countPrompt: () => Promise.resolve(inputTokens) };
  return await answerStream<MessagesStreamOutcome>(ctx, { ...routed, value: result.stream }, answered, {
    body: (ending) =>
      messagesStreamBody(result.stream, {
        ...ending,
        frame,
        inputTokens,
        countUsage: final.count,
      }),
    usage: final.usage,
  });
}
