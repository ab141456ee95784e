/**
 * `POST /v1/responses/input_tokens` (OpenAI's "Get input token counts"): how many input tokens a Responses
 * request would take, as `{object: "response.input_tokens", input_tokens}`.
 *
 * The request is validated and translated as `POST /v1/responses` would translate it (`previous_response_id`
 * included: the stored conversation counts), the alias resolved under the token's scopes, and the target
 * picked by routing, so health and fallback apply. Where that target's vendor can count (the capability table's
 * `countTokens`), the count is the upstream's, exact for its model. Otherwise — no counting endpoint, a
 * request the vendor cannot count, or a count that failed — the gateway's tokenizer gives it, and the answer
 * says so with `estimated: true` (a field OpenAI's schema does not have, so clients that read only
 * `input_tokens` are unaffected), as do the access log and the usage record (`tokens_estimated`).
 *
 * A count not made from the client's own body names what it left out in `x-gateway-dropped` and the usage
 * record's `dropped`, as `POST /v1/responses` names what a translated target went without, in the client's
 * terms (`reasoning.effort`, not the chat form's `reasoning_effort`): what the request's translation left out
 * (a built-in tool no target serves), and for an exact count from the chat form what the vendor's count left
 * out of it (its body is built in `drop` mode whatever the provider's, since it does not change the input's
 * count: `reasoning.effort` on Bedrock's Nova, `parallel_tool_calls: false` on Gemini). A `strict` alias, which
 * refuses every drop, is held to the targets whose parameter rules serve the chat form, as `POST /v1/responses`
 * holds it (the 400 naming the field when none does).
 *
 * A count is a request like any other for rate limits (requests per minute, concurrency), endpoint and model
 * scopes and content rules, but it consumes no tokens: it is admitted with no token estimate, and its one usage
 * record has 0 prompt and 0 completion tokens and no cost, so token limits and budgets (whose spend is also
 * re-read from the usage records at start-up) are not charged for counting. Every vendor's counting endpoint is
 * free, too.
 *
 * @module
 */
import { inClientTerms, invalidRequest, printable } from "../../errors.ts";
import { responsesClientTerms } from "./client_terms.ts";
import { parseResponsesRequest, type ResponsesRequest } from "./request.ts";
import type { ResolvedModel, ResolvedTarget } from "../../config/types.ts";
import { nativeRequestBody, redactNative, resentChanges } from "./native.ts";
import { TOKEN_COUNTS_FIELDS } from "../../openai/token_counts.ts";
import type { JsonObject } from "../../openai/types.ts";
import { estimateInputTokens } from "../../usage/estimate.ts";
import { admit, type Answer } from "../../http/accounting.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { withHistory } from "./create.ts";
import { resolveItemReferences } from "./item_references.ts";
import { isNativeTarget, nativeDropped, nativeTexts, targetsFor } from "./create_native.ts";
import { strictRefusal } from "./native_only.ts";
import { type ChatForm, noteCountDropped, paramServingTargets } from "../../http/tolerance.ts";
import { answerTokenCount } from "../../answer/runner.ts";
import type { ClientRequest } from "../../runtime/types.ts";
import type { Conversation } from "../../usage/responses_store.ts";
import { betasDropped, openAIBetaOf } from "./openai_beta.ts";

const ROUTE = ROUTES.responsesInputTokens;

/**
 * The parameters of OpenAI's `TokenCountsBody`. Anything else (a `CreateResponse` field such as `stream` or
 * `max_output_tokens` included) is refused as OpenAI refuses an unknown parameter.
 */
const FIELDS = new Set(TOKEN_COUNTS_FIELDS);

/**
 * Validates a count body with the Responses request's own parser, `item_reference`s resolved as for
 * `POST /v1/responses`. `personality` (a style preset the gateway cannot apply) is refused. A request with a
 * `previous_response_id` and no `input` counts the stored conversation alone (as a compaction; a create
 * needs an input).
 */
async function parseCountRequest(body: JsonObject, ctx: ClientContext): Promise<ResponsesRequest> {
  for (const key of Object.keys(body)) {
    if (!FIELDS.has(key)) {
      throw invalidRequest(`Unknown parameter: '${printable(key)}'.`, key, "unknown_parameter");
    }
  }
  if (body.personality != null) {
    throw invalidRequest(
      "Personality presets are not supported by this gateway; send the request without 'personality'.",
      "personality",
      "unsupported_parameter",
    );
  }
  const fields = countFields(body);
  const alone = { conversationAlone: true };
  return await resolveItemReferences(fields, parseResponsesRequest(fields, undefined, alone), ctx, alone);
}

/** The client's count fields (without `personality`, which was refused if set). */
function countFields(body: JsonObject): JsonObject {
  const { personality: _, ...fields } = body;
  return fields;
}

/**
 * The Responses body an upstream that counts Responses requests gets for `target`, built as
 * `POST /v1/responses` builds a native target's: the client's fields with the target's model, the stored
 * conversation (`earlier`, read before routing) as input items for a `previous_response_id`, and the alias's
 * redactions.
 */
function nativeBody(
  body: JsonObject,
  parsed: ResponsesRequest,
  model: ResolvedModel,
  earlier: Conversation | null,
  guarded: ReadonlyMap<string, string> | undefined,
) {
  return (target: ResolvedTarget): JsonObject => {
    const changes = resentChanges(target, parsed.input, earlier);
    return redactNative(nativeRequestBody(countFields(body), changes), model.contentRules, guarded);
  };
}

/** Handles one count request for an authenticated identity. */
export async function handleResponsesInputTokens(
  request: ClientRequest,
  ctx: ClientContext,
): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const parsed = await parseCountRequest(body, ctx);
  const chat = parsed.chat;
  const form: ChatForm = {
    chat,
    native: isNativeTarget,
    strictError: strictRefusal,
    clientTerms: responsesClientTerms(parsed),
  };
  // Built-in tools narrow the targets to native ones (a 400 naming the param when there are none), as for a response.
  const serving = targetsFor(resolveAlias(ctx, chat.model, ROUTE.modelType), parsed);
  // A translated count drops what its vendor's count cannot take (its body is built in `drop` mode: the input's
  // count does not change), so only a strict alias, which refuses every drop, is held to the targets
  // POST /v1/responses would use.
  const model = serving.strict ? paramServingTargets(serving, form) : serving;
  const earlier = await withHistory(parsed, ctx);
  // Rate limits, scopes and content rules apply; no tokens are charged (see the module's note).
  await admit(ctx, ROUTE.endpoint, 0, model, chat, nativeTexts(ctx, model, parsed, earlier)).catch((err) => {
    throw inClientTerms(err, responsesClientTerms(parsed));
  });

  const responses = nativeBody(body, parsed, model, earlier, ctx.guardrails?.nativeRewrites);
  const openaiBeta = openAIBetaOf(request);
  const answer = await answerTokenCount(
    ctx,
    model,
    "responses",
    (target) =>
      Promise.resolve(isNativeTarget(target) ? { chat, responses: responses(target), openaiBeta } : { chat }),
    () => estimateInputTokens(chat, ctx.signal),
    (count) => ({ object: "response.input_tokens", input_tokens: count }),
  );
  // A native target counted the client's own body: nothing left out. Any other count is of the chat form, which
  // names what it left out, and what the answering target's count left out of it, as a response would.
  await noteCountDropped(
    ctx,
    answer,
    parsed.tolerance,
    form,
    isNativeTarget,
    // A native count went without the gateway's own reasoning items, as a response would.
    (
      by,
    ) => [
      ...betasDropped(by, openaiBeta),
      ...(by !== null && isNativeTarget(by) ? nativeDropped(parsed).dropped : []),
    ],
  );
  return answer;
}
