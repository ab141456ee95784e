/**
 * Google's Gemini API (v1beta) for `@google/genai` and Gemini CLI: `GET /v1beta/models/{alias}` (the list is
 * models.ts's), `POST /v1beta/models/{alias}:generateContent`, `:streamGenerateContent` (SSE with
 * `alt=sse`, a streamed JSON array without it) and `:countTokens`. The request is translated to the chat form
 * (request.ts), on which policy runs as for every endpoint (endpoint name `gemini`), and routed over the alias's
 * targets: a `gemini` provider gets the client's body passed through (native.ts: thought signatures, cached
 * content, built-in tools survive), every other target the chat form, its answer translated back to Google's
 * wire format (response.ts), both through the answer runner. Every error is in
 * Google's shape (`{"error":{"code","message","status"}}`), a stream's last chunk too.
 *
 * @module
 */
import { geminiCacheSpec } from "./cache_spec.ts";
import { geminiFacts } from "./native_facts.ts";
import { GatewayError, inClientTerms } from "../../errors.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import { type ChatRequest, isObject } from "../../openai/types.ts";
import type { RoutedAnswer } from "../../http/route_request.ts";
import { speaksNatively, takesTopK } from "../../providers/capabilities.ts";
import { admit, admitChat, type Answer, readsNativeTexts } from "../../http/accounting.ts";
import { nativeTextsOf } from "../../policy/content_rules.ts";
import { geminiTexts } from "./native_texts.ts";
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import { GEMINI_METHODS, ROUTES } from "../../http/endpoints.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import {
  answeredTolerance,
  type ChatForm,
  chatFormServingTargets,
  noteCountDropped,
  noteDropped,
  paramServingTargets,
  servingTargets,
} from "../../http/tolerance.ts";
import {
  answerJson,
  answerStream,
  answerTokenCount,
  completionReported,
  completionTexts,
  finalEventUsage,
  isNativeAnswer,
  type NativeAnswer,
  routeAnswer,
  shownUsage,
} from "../../answer/runner.ts";
import { estimateInputTokens } from "../../usage/estimate.ts";
import { parseGeminiRequest } from "./request.ts";
import { normalizeGemini } from "./normalize.ts";
import { geminiClientTerms } from "./client_terms.ts";
import { geminiAlias, modelNotFound } from "./alias.ts";
import { geminiEmbed } from "./embed.ts";
import { modelObject, servedHere } from "./models.ts";
import { completionToGemini, type GeminiFrame } from "./response.ts";
import {
  type GeminiNativeOutcome,
  geminiNativeStreamBody,
  geminiStreamBody,
  type GeminiStreamOutcome,
} from "./stream.ts";
import { answerTexts, clientAnswer, nativeGeminiBody, nativeUsage } from "./native.ts";
import type { ClientRequest } from "../../runtime/types.ts";
import { promptClasses } from "../../openai/reported_prompt.ts";

const ROUTE = ROUTES.geminiModel;
const JSON_TYPE = { "content-type": "application/json" };

function notFound(path: string): GatewayError {
  return new GatewayError(404, `Method not found: ${path}.`, {
    type: "invalid_request_error",
    code: "not_found",
  });
}

/** Google's 400 of a `strict` model whose target would go without the client's field `path`. */
function strictRefusal(path: string): GatewayError {
  return new GatewayError(
    400,
    `'${path}' cannot be served by this model's target, and the model is strict.`,
    {
      type: "invalid_request_error",
      param: path,
      code: "unsupported_parameter",
    },
  );
}

/** What {@linkcode topKWithheld} withholds. */
const TOP_K: readonly string[] = ["top_k"];
const NOTHING: readonly string[] = [];

/**
 * `generationConfig.topK` (the chat form's `top_k`) is withheld from a translated target that takes no `top_k`
 * (`takesTopK`: Azure, OpenAI's own API, Bedrock models other than Claude), which would refuse it, and named
 * there as dropped: Gemini CLI sends `topK: 64` in every request, its own default, so refusing it, or keeping
 * the request from such a target, would fail the CLI on every such alias for a setting its user never chose.
 * Targets that take it (Claude, OpenAI-compatible servers) get it, but Claude not beside the thinking a
 * `thinkingConfig` asks for (its parameter rules leave it out and name it then: `claude_sampling.ts`); a
 * `strict` alias refuses the drop.
 */
function topKWithheld(chat: ChatRequest): ((target: ResolvedTarget) => readonly string[]) | undefined {
  if (chat.top_k === undefined) return undefined;
  return (target) => (takesTopK(target) ? NOTHING : TOP_K);
}

/** `POST /v1beta/models/{alias}:generateContent` and `:streamGenerateContent`. */
async function generate(
  request: ClientRequest,
  ctx: ClientContext,
  alias: string,
  stream: boolean,
): Promise<Answer> {
  const parsed = parseGeminiRequest(
    await readJsonBody(request, ctx.state.config.server, ctx.signal),
    alias,
    stream,
  );
  const chat = parsed.chat;
  const resolved = geminiAlias(
    ctx,
    alias,
    ROUTE.modelType,
    stream ? "streamGenerateContent" : "generateContent",
    stream,
  );
  // A Gemini target gets the client's body as sent; what only it serves sends the request to one. Of the
  // others, one whose parameter rules would refuse the chat form is left out for the model's others, and one
  // that takes no top_k gets none.
  const isGemini = (target: ResolvedTarget) => speaksNatively(target, "gemini");
  const terms = geminiClientTerms(parsed);
  const form: ChatForm = {
    chat,
    native: isGemini,
    strictError: strictRefusal,
    clientTerms: terms,
    withheld: topKWithheld(chat),
    // A Gemini target its guardrails served the chat form: the texts that form holds nowhere (its thoughts).
    chatLoses: () => ctx.guardrails?.chatLoses ?? [],
  };
  const model = paramServingTargets(
    servingTargets(resolved, parsed.tolerance, isGemini, strictRefusal),
    form,
  );
  // What only a Gemini target reads (a model turn's thoughts, its plain-text files) is judged too.
  await admitChat(
    ctx,
    ROUTE.endpoint,
    model,
    chat,
    nativeTextsOf(parsed.body, geminiTexts, readsNativeTexts(model, ctx.identity, isGemini)),
  );
  const sse = new URL(request.url).searchParams.get("alt") === "sse";
  const clientTerms = (err: unknown) => inClientTerms(err, terms);
  const dropped = (target: ResolvedTarget, headers: Headers) =>
    noteDropped(ctx, headers, answeredTolerance(target, parsed.tolerance, form));
  const routed = await routeAnswer(ctx, model, { chat, asked: stream, clientTerms, form, dropped }, {
    speaks: isGemini,
    valid: (body) => Array.isArray(body.candidates) || isObject(body.promptFeedback),
    what: "a GenerateContentResponse",
    cache: () => geminiCacheSpec(parsed.body),
    facts: geminiFacts,
    call: (target, provider) =>
      provider.gemini?.(
        nativeGeminiBody(parsed.body, chat, model.contentRules, ctx.guardrails?.nativeRewrites),
        stream,
        upstreamCall(ctx, target),
      ) ?? Promise.resolve(undefined),
  });
  const result = routed.value;
  if (isNativeAnswer(result)) return await answerNative(ctx, { ...routed, value: result }, chat, alias, sse);
  dropped(routed.target, routed.headers);
  const frame: GeminiFrame = {
    alias,
    responseId: crypto.randomUUID().replaceAll("-", "").slice(0, 24),
    thoughts: parsed.thoughts,
  };
  if (result.kind === "json") {
    const completion = result.body;
    return await answerJson(routed.headers, { chat, signal: ctx.signal }, {
      reported: completionReported(completion),
      // A refusal is text the model wrote and the client got: counted as its content would be.
      texts: () => completionTexts(completion),
      render: (usage) => completionToGemini(completion, frame, shownUsage(completion, usage)),
    });
  }
  const final = finalEventUsage(() => estimateInputTokens(chat));
  const answer = await answerStream<GeminiStreamOutcome>(ctx, { ...routed, value: result.stream }, {
    chat,
    asked: stream,
  }, {
    body: (ending) =>
      geminiStreamBody(result.stream, {
        ...ending,
        frame,
        sse,
        countUsage: final.count,
      }),
    usage: final.usage,
  });
  // Without `alt=sse` Google streams one JSON array.
  if (!sse) answer.response.headers.set("content-type", "application/json; charset=utf-8");
  return answer;
}

/** The client's answer from a Gemini target: its own answer (or stream), the alias as `modelVersion`. */
async function answerNative(
  ctx: ClientContext,
  routed: RoutedAnswer<NativeAnswer>,
  chat: ChatRequest,
  alias: string,
  sse: boolean,
): Promise<Answer> {
  const result = routed.value;
  if (result.kind === "native") {
    const upstream = result.body;
    return await answerJson(routed.headers, { chat, signal: ctx.signal }, {
      reported: nativeUsage(upstream.usageMetadata),
      texts: () => answerTexts(upstream),
      render: () => clientAnswer(upstream, alias),
    });
  }
  const answer = await answerStream<GeminiNativeOutcome>(ctx, { ...routed, value: result.stream }, {
    chat,
    asked: true,
  }, {
    body: (ending) => geminiNativeStreamBody(result.stream, { ...ending, alias, sse }),
    // Google's chunks carry the usage so far (early ones only the prompt): a stream that did not end keeps the
    // prompt count with its cached content (priced apart), and its output is counted from what the client received.
    usage: ({ usage, end }) =>
      usage === undefined ? undefined : end === "ok" ? { ...usage, estimated: false } : promptClasses(usage),
  });
  if (!sse) answer.response.headers.set("content-type", "application/json; charset=utf-8");
  return answer;
}

/**
 * `POST /v1beta/models/{alias}:countTokens` (`contents`, or a whole `generateContentRequest`), routed as
 * {@linkcode generate} routes the request it counts: what only a Gemini target serves (a file by Google's URI,
 * `cachedContent`, built-in tools) sends it to the alias's Gemini targets, and without one is Google's 400 as
 * `generateContent` answers it; a `strict` alias refuses every drop. A Gemini target counts the body it would
 * get (`nativeGeminiBody`), wrapped as Google's `generateContentRequest`, so those count too: Gemini CLI sizes
 * its context by this count, unless an input guardrail changed a text that body cannot carry: the chat form is
 * counted then, as generate serves it (lib/answer/token_count.ts). Any other count is of the chat form, and
 * names what that form, and the answering target's count, left out in `x-gateway-dropped` and the usage
 * record, as an answer does.
 */
async function countTokensOf(request: ClientRequest, ctx: ClientContext, alias: string): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const outer = normalizeGemini(body, "CountTokensRequest");
  const inner = outer.generateContentRequest ?? outer;
  const parsed = parseGeminiRequest(inner, alias, false);
  const chat = parsed.chat;
  const isGemini = (target: ResolvedTarget) => speaksNatively(target, "gemini");
  const form: ChatForm = {
    chat,
    native: isGemini,
    strictError: strictRefusal,
    clientTerms: geminiClientTerms(parsed),
    withheld: topKWithheld(chat),
    // What the chat form holds nowhere, when a Gemini target counted it (the guardrails held the body back).
    chatLoses: () => ctx.guardrails?.chatLoses ?? [],
  };
  const serving = servingTargets(
    geminiAlias(ctx, alias, ROUTE.modelType, "countTokens"),
    parsed.tolerance,
    isGemini,
    strictRefusal,
  );
  // A translated count drops what its vendor's count cannot take (its body is built in `drop` mode: the input's
  // count does not change); a strict alias refuses every drop, so it is held to the targets generate would use.
  const model = serving.strict ? paramServingTargets(serving, form) : serving;
  await admit(
    ctx,
    ROUTE.endpoint,
    0,
    model,
    chat,
    nativeTextsOf(parsed.body, geminiTexts, readsNativeTexts(model, ctx.identity, isGemini)),
  );
  // A strict alias's count goes only where its request would: once the guardrails send the chat form (known now,
  // admitted), Gemini targets are judged by that form's rules as generate judges them.
  const counted = serving.strict ? chatFormServingTargets(ctx, model, form) : model;
  const answer = await answerTokenCount(
    ctx,
    counted,
    "gemini",
    (target) =>
      Promise.resolve(
        isGemini(target)
          ? {
            chat,
            gemini: nativeGeminiBody(parsed.body, chat, counted.contentRules, ctx.guardrails?.nativeRewrites),
          }
          : { chat },
      ),
    () => estimateInputTokens(chat, ctx.signal),
    (count) => ({ totalTokens: count }),
  );
  await noteCountDropped(ctx, answer, parsed.tolerance, form, isGemini);
  return answer;
}

/** The methods a model answers on `POST /v1beta/models/{alias}:{method}` (the endpoint table's one list). */
const METHODS: ReadonlySet<string> = new Set(Object.keys(GEMINI_METHODS));

/**
 * `{param}` as alias and method. An alias may hold ':' (`llama3:8b`), so a method is split off only at a last
 * ':' followed by one of {@linkcode METHODS}, and a `GET` takes the whole segment as the alias when it is one
 * the key may use (whatever follows its ':'); anything else is the alias, without a method.
 */
function aliasAndMethod(param: string, get: boolean, ctx: ClientContext): { alias: string; method: string } {
  const whole = param.replace(/^models\//, "");
  const colon = whole.lastIndexOf(":");
  const method = colon < 0 ? "" : whole.slice(colon + 1);
  if (!METHODS.has(method) || (get && ctx.identity.aliases.has(whole))) return { alias: whole, method: "" };
  return { alias: whole.slice(0, colon), method };
}

/**
 * `/v1beta/models/{param}`: `GET` of a model, or `POST` of one of its methods (`{alias}:{method}`). A model the
 * key may not use is Google's 404, as one that does not exist, as for a method of it.
 */
export async function handleGeminiModel(
  request: ClientRequest,
  ctx: ClientContext,
  param: string,
): Promise<Answer> {
  // The server routes a HEAD as a GET (and advertises it in `Allow`): it must get the GET's status and headers.
  const get = request.method === "GET" || request.method === "HEAD";
  const { alias, method } = aliasAndMethod(param, get, ctx);
  if (get) {
    if (method !== "") throw notFound(new URL(request.url).pathname);
    await admit(ctx, ROUTE.endpoint, 0);
    const model = ctx.state.config.models.get(alias);
    if (model === undefined || !ctx.identity.aliases.has(alias) || !servedHere(model)) {
      throw modelNotFound(alias);
    }
    return {
      response: new Response(JSON.stringify(modelObject(model)), { headers: JSON_TYPE }),
      outcome: {},
    };
  }
  if (method === "generateContent") return await generate(request, ctx, alias, false);
  if (method === "streamGenerateContent") return await generate(request, ctx, alias, true);
  if (method === "countTokens") return await countTokensOf(request, ctx, alias);
  if (method === "embedContent") return await geminiEmbed(request, ctx, alias, false);
  if (method === "batchEmbedContents") return await geminiEmbed(request, ctx, alias, true);
  throw notFound(new URL(request.url).pathname);
}
