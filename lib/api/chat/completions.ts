/**
 * `POST /v1/chat/completions`: validate, resolve the alias, call the provider, and answer with the
 * completion or its SSE stream, always showing the alias as `model`.
 *
 * @module
 */
import type { ChatCompletion, JsonObject } from "../../openai/types.ts";
import { chatStreamBody } from "./stream.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { admit, type Answer } from "../../http/accounting.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { countTokens, requestTexts, roughTokenEstimate } from "../../usage/estimate.ts";
import { parseChatRequest } from "../../http/request_schemas.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { routeRequest } from "../../http/route_request.ts";
import {
  type ChatAnswer,
  completionUsage,
  refuseUnaskedStream,
  streamedAnswer,
  withFirstChunk,
} from "../../http/routed_chat.ts";
import { settleStream } from "../../http/stream_outcome.ts";
import { streamBudgetGuard } from "../../http/stream_budget.ts";

/** Handles one chat completion request for an authenticated identity. */
export async function handleChatCompletions(request: Request, ctx: ClientContext): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server);
  const chat = parseChatRequest(body);
  const model = resolveAlias(ctx.state, ctx.identity, chat.model, ROUTES.chat.modelType);
  const stream = chat.stream === true;
  ctx.record.alias = model.alias;
  ctx.record.stream = stream;
  const prompt = roughTokenEstimate(requestTexts(chat));
  // A function of the final body: the max_tokens ceiling may have lowered what the client asked for.
  const estimate = (final: JsonObject | undefined) => {
    const requested = final?.max_completion_tokens ?? final?.max_tokens;
    return prompt + (typeof requested === "number" ? requested : 0);
  };
  await admit(ctx, ROUTES.chat.endpoint, estimate, model, chat);
  const { value: result, target, lease, headers } = await routeRequest(
    ctx,
    model,
    ctx.signal,
    async (target, provider): Promise<ChatAnswer> => {
      const answer = await provider.chat(chat, { target, signal: ctx.signal, requestId: ctx.requestId });
      if (answer.kind === "json") return answer;
      return { kind: "stream", stream: await withFirstChunk(target.provider, answer.chunks) };
    },
    // A stream the client reads holds its target until it ends; anything else is over now.
    (answer) => answer.kind === "stream" && stream,
  );

  if (result.kind === "json") {
    const completion: ChatCompletion = result.body;
    completion.model = model.alias;
    const usage = await completionUsage(completion, () => countTokens(requestTexts(chat)));
    headers.set("content-type", "application/json");
    return {
      response: new Response(JSON.stringify(completion), { status: 200, headers }),
      outcome: { usage },
    };
  }

  if (!stream) await refuseUnaskedStream(result.stream, target.provider);
  return streamedAnswer(ctx, headers, (settle) =>
    chatStreamBody(result.stream, {
      alias: model.alias,
      includeUsage: chat.stream_options?.include_usage === true,
      startedAt: ctx.startedAt,
      scrubber: ctx.state.config.scrubber,
      lease,
      budget: streamBudgetGuard(ctx, chat),
      onEnd(end) {
        ctx.services.metrics.streamEnded();
        const upstream = end.usage;
        settleStream(
          end,
          upstream &&
            { prompt: upstream.prompt_tokens, completion: upstream.completion_tokens, estimated: false },
          chat,
          settle,
        );
      },
    }));
}
