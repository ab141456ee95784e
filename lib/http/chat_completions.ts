/**
 * `POST /v1/chat/completions`: validate, resolve the alias, call the provider, and answer with the
 * completion or its SSE stream, always showing the alias as `model`.
 *
 * @module
 */
import { badGateway, GatewayError } from "../errors.ts";
import type { ChatCompletion, ChatCompletionChunk, JsonObject } from "../openai/types.ts";
import { chatStreamBody, type PeekedStream } from "./chat_stream.ts";
import type { RequestContext } from "./context.ts";
import { admit, chargeUsage } from "./accounting.ts";
import { readJsonBody } from "./read_json_body.ts";
import { countTokens, requestTexts, roughTokenEstimate } from "../usage/estimate.ts";
import { parseChatRequest } from "./request_schemas.ts";
import { resolveAlias } from "./resolve_alias.ts";
import { routeRequest } from "./route_request.ts";

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  // Tells nginx-style proxies in front of the gateway not to buffer the stream.
  "x-accel-buffering": "no",
};

/**
 * Waits for a stream's first chunk. Until the first chunk the attempt may still fail over to another target;
 * after it, the answer belongs to this target.
 */
async function withFirstChunk(
  provider: string,
  chunks: ReadableStream<ChatCompletionChunk>,
): Promise<PeekedStream> {
  const reader = chunks.getReader();
  let first: ReadableStreamReadResult<ChatCompletionChunk>;
  try {
    first = await reader.read();
  } catch (err) {
    await reader.cancel().catch(() => {});
    throw err;
  }
  if (first.done) throw badGateway(`Provider "${provider}" ended the stream without any data.`);
  return { first: first.value, rest: reader };
}

/** A routed chat answer: a whole completion, or a stream whose first chunk is in hand. */
type ChatAnswer =
  | { kind: "json"; body: ChatCompletion }
  | { kind: "stream"; stream: PeekedStream };

/** The texts of a completion's choices (content and tool-call arguments), for counting its tokens. */
function completionTexts(completion: ChatCompletion): string[] {
  const out: string[] = [];
  for (const choice of completion.choices) {
    const message = choice.message as {
      content?: unknown;
      tool_calls?: { function?: { arguments?: unknown } }[];
    };
    if (typeof message?.content === "string") out.push(message.content);
    for (const call of message?.tool_calls ?? []) {
      if (typeof call.function?.arguments === "string") out.push(call.function.arguments);
    }
  }
  return out;
}

/** Handles one chat completion request for an authenticated identity. */
export async function handleChatCompletions(request: Request, ctx: RequestContext): Promise<Response> {
  const identity = ctx.identity!;
  const body = await readJsonBody(request, ctx.state.config.server);
  const chat = parseChatRequest(body);
  const model = resolveAlias(ctx.state, identity, chat.model, "chat");
  const stream = chat.stream === true;
  ctx.record.alias = model.alias;
  ctx.record.stream = stream;
  const prompt = roughTokenEstimate(requestTexts(chat));
  // A function of the final body: the max_tokens ceiling may have lowered what the client asked for.
  const estimate = (final: JsonObject | undefined) => {
    const requested = final?.max_completion_tokens ?? final?.max_tokens;
    return prompt + (typeof requested === "number" ? requested : 0);
  };
  await admit(ctx, "chat", estimate, model, chat);
  const { value: result, target, lease, headers } = await routeRequest(
    ctx,
    model,
    ctx.signal,
    async (target, provider): Promise<ChatAnswer> => {
      const answer = await provider.chat(chat, { target, signal: ctx.signal, requestId: ctx.requestId });
      if (answer.kind === "json") return answer;
      return { kind: "stream", stream: await withFirstChunk(target.provider, answer.chunks) };
    },
  );

  if (result.kind === "json") {
    lease.release();
    const completion: ChatCompletion = result.body;
    completion.model = model.alias;
    if (completion.usage) {
      chargeUsage(ctx, completion.usage.prompt_tokens, completion.usage.completion_tokens, false);
    } else {
      const [prompt, output] = await Promise.all([
        countTokens(requestTexts(chat)),
        countTokens(completionTexts(completion)),
      ]);
      chargeUsage(ctx, prompt, output, true);
    }
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify(completion), { status: 200, headers });
  }

  if (!stream) {
    lease.release();
    await result.stream.rest.cancel();
    throw new GatewayError(502, `Provider "${target.provider}" streamed an answer that was not asked for.`);
  }
  let settle!: () => void;
  ctx.streamDone = new Promise((resolve) => settle = resolve);
  ctx.services.metrics.streamStarted();
  const sse = chatStreamBody(result.stream, {
    alias: model.alias,
    includeUsage: chat.stream_options?.include_usage === true,
    startedAt: ctx.startedAt,
    scrubber: ctx.state.config.scrubber,
    onEnd(outcome) {
      ctx.services.metrics.streamEnded();
      ctx.record.ttft_ms = outcome.firstChunkAt;
      if (outcome.end === "error") {
        ctx.record.error_code = outcome.error?.code ?? "stream_error";
        lease.failed();
      }
      if (outcome.end === "cancelled") ctx.record.error_code = "client_closed_request";
      lease.release();
      if (outcome.usage) {
        chargeUsage(ctx, outcome.usage.prompt_tokens, outcome.usage.completion_tokens, false);
        settle();
        return;
      }
      // No usage from the upstream (or the stream broke before it came): count what was sent and received.
      Promise.all([countTokens(requestTexts(chat)), countTokens(outcome.texts)])
        .then(([prompt, output]) => chargeUsage(ctx, prompt, output, true))
        .catch(() =>
          chargeUsage(ctx, roughTokenEstimate(requestTexts(chat)), roughTokenEstimate(outcome.texts), true)
        )
        .finally(settle);
    },
  });
  for (const [name, value] of Object.entries(SSE_HEADERS)) headers.set(name, value);
  return new Response(sse, { status: 200, headers });
}
