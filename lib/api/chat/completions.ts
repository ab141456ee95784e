/**
 * `POST /v1/chat/completions`: validate, resolve the alias, narrow it to the targets that can serve the
 * request's parameters (`paramServingTargets`: the tolerance rule, lib/http/tolerance.ts), call the provider,
 * and answer with the completion or its SSE stream, always showing the alias as `model` and naming what the
 * target went without.
 *
 * @module
 */
import { chatStreamBody, type ChatStreamOutcome } from "./stream.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { admitChat, type Answer } from "../../http/accounting.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { tokenClassesOf } from "../../pricing/cost.ts";
import { parseChatRequest } from "../../http/request_schemas.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import {
  answerJson,
  answerStream,
  completionReported,
  completionTexts,
  routeAnswer,
} from "../../answer/runner.ts";
import type { ClientRequest } from "../../runtime/types.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import {
  answeredTolerance,
  type ChatForm,
  newTolerance,
  noteDropped,
  paramServingTargets,
  strictAliasRefusal,
} from "../../http/tolerance.ts";

/** What the gateway found of a chat request that a target cannot take as sent: nothing (it is the chat form). */
const CHAT_TOLERANCE = newTolerance();

/** Handles one chat completion request for an authenticated identity. */
export async function handleChatCompletions(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const chat = parseChatRequest(body);
  // The request is the chat form itself: every target gets it, judged by its own parameter rules.
  const form: ChatForm = { chat, strictError: strictAliasRefusal };
  const model = paramServingTargets(
    resolveAlias(ctx, chat.model, ROUTES.chat.modelType, chat.stream === true),
    form,
  );
  const stream = chat.stream === true;
  await admitChat(ctx, ROUTES.chat.endpoint, model, chat);
  const dropped = (target: ResolvedTarget, headers: Headers) =>
    noteDropped(ctx, headers, answeredTolerance(target, CHAT_TOLERANCE, form));
  const routed = await routeAnswer(ctx, model, { chat, asked: stream, dropped });
  dropped(routed.target, routed.headers);
  const result = routed.value;
  if (result.kind === "json") {
    const completion = result.body;
    completion.model = model.alias;
    return await answerJson(routed.headers, { chat, signal: ctx.signal }, {
      reported: completionReported(completion),
      texts: () => completionTexts(completion),
      render: () => completion,
    });
  }
  return await answerStream<ChatStreamOutcome>(ctx, { ...routed, value: result.stream }, {
    chat,
    asked: stream,
  }, {
    body: (ending) =>
      chatStreamBody(result.stream, {
        ...ending,
        alias: model.alias,
        includeUsage: chat.stream_options?.include_usage === true,
      }),
    usage: ({ usage }) =>
      usage && { ...tokenClassesOf(usage.prompt_tokens, usage.completion_tokens, usage), estimated: false },
  });
}
