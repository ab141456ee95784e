/**
 * `POST /v1/messages/count_tokens` (Anthropic's token counting): how many input tokens a Messages request
 * would take, as `{input_tokens}`.
 *
 * The body is validated as `POST /v1/messages` validates it, under the same tolerance rule
 * (lib/http/tolerance.ts), less the parameters of the generation that counting does not take (`max_tokens`,
 * `stream`, sampling, stop sequences, `metadata`, `service_tier`), which are refused as Anthropic refuses them.
 * The alias is resolved under the token's scopes, and the target picked by routing (Claude targets preferred
 * for what only Claude serves, as for a Message). A target whose vendor counts (the capability table's
 * `countTokens`) gives the exact count: an Anthropic target from the client's own body, every field included
 * (model rewritten, redactions applied, the client's `anthropic-version` and `anthropic-beta` forwarded as
 * for `/v1/messages`; the chat form instead when an input guardrail changed a text that body cannot carry, as
 * `/v1/messages` then serves it: lib/answer/token_count.ts), others from the chat form. Otherwise the
 * gateway's tokenizer counts the chat form (`estimateInputTokens`, as for `/v1/responses/input_tokens`) and
 * the answer says so with `estimated: true` (a field Anthropic's answer does not have; clients that read
 * `input_tokens` only are unaffected), as do the access log and usage record. A count not made from the
 * client's own body names what it left out in `x-gateway-dropped` (and `x-gateway-dropped-thinking`), as a
 * Message would: every `anthropic-beta` name, then the fields, with those a translated target's count left
 * out (its vendor body is built in `drop` mode whatever the provider's, since they do not change the input's
 * count: `thinking` on Bedrock's Nova, `tool_choice.disable_parallel_tool_use` on Gemini); one made from it
 * names the beta names a Bedrock target left out, as a Message does. A `strict` alias, which refuses every
 * drop, is held to the targets whose parameter rules serve the chat form, as `/v1/messages` holds it (the 400
 * naming the field when none does).
 *
 * Like every count, it is a request for rate limits, scopes and content rules but consumes no tokens: its one
 * usage record has 0 prompt and 0 completion tokens.
 *
 * @module
 */
import { nativeMessagesBody, redactMessages } from "./native.ts";
import { nativeTextsOf } from "../../policy/content_rules.ts";
import { messagesTexts } from "./native_texts.ts";
import { MESSAGES_GENERATION_PARAMS } from "../../providers/count_tokens_fields.ts";
import { effortWithheld } from "./effort_hint.ts";
import { messagesClientTerms, parseMessagesRequest } from "./request.ts";
import { fieldError } from "./validate.ts";
import { estimateInputTokens } from "../../usage/estimate.ts";
import { admit, type Answer, readsNativeTexts } from "../../http/accounting.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { messagesTargets, strictRefusal } from "./create.ts";
import {
  answeredTolerance,
  type ChatForm,
  chatFormServingTargets,
  paramServingTargets,
} from "../../http/tolerance.ts";
import { forwardedHeaders, isNativeMessagesTarget, noteMessagesDropped } from "./create_native.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { answerTokenCount } from "../../answer/runner.ts";
import type { ClientRequest } from "../../runtime/types.ts";

const ROUTE = ROUTES.messagesCountTokens;

/** Handles one count request for an authenticated identity. */
export async function handleMessagesCountTokens(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const refused = MESSAGES_GENERATION_PARAMS.find((key) => key in body);
  if (refused !== undefined) throw fieldError(refused, "Extra inputs are not permitted");
  // The request parser wants an output limit, which a count does not have.
  const parsed = parseMessagesRequest({ ...body, max_tokens: Number.MAX_SAFE_INTEGER }, request.headers);
  const chat = parsed.chat;
  delete chat.max_completion_tokens;
  const form: ChatForm = {
    chat,
    native: isNativeMessagesTarget,
    strictError: strictRefusal,
    clientTerms: messagesClientTerms(parsed),
    // An effort that is a hint is withheld from a target that cannot take it, and named (effort_hint.ts).
    withheld: effortWithheld(parsed),
    // What the chat form holds nowhere, when a Claude target counted it (the guardrails held the body back).
    chatLoses: () => ctx.guardrails?.chatLoses ?? [],
  };
  const serving = messagesTargets(resolveAlias(ctx, chat.model, ROUTE.modelType), parsed);
  // A count drops what a translated target's count cannot take (its vendor body is built in `drop` mode): it
  // does not change the input's count. A strict alias refuses every drop, so it is held to the targets a
  // Message would go to, as /v1/messages holds it.
  const model = serving.strict ? paramServingTargets(serving, form) : serving;
  const native = nativeTextsOf(
    body,
    messagesTexts,
    readsNativeTexts(model, ctx.identity, isNativeMessagesTarget),
  );
  await admit(ctx, ROUTE.endpoint, 0, model, chat, native);

  const forwarded = forwardedHeaders(parsed.version, parsed.betas);
  // As the Message would go once the guardrails send the chat form (known now, admitted): judged by its rules.
  const counted = serving.strict ? chatFormServingTargets(ctx, model, form) : model;
  const answer = await answerTokenCount(
    ctx,
    counted,
    "messages",
    (target) => {
      if (!isNativeMessagesTarget(target)) return Promise.resolve({ chat });
      const messages = nativeMessagesBody(body, { model: target.model, maxTokens: null });
      return Promise.resolve({
        chat,
        messages: redactMessages(messages, model.contentRules, ctx.guardrails?.nativeRewrites),
        ...forwarded,
      });
    },
    () => estimateInputTokens(chat, ctx.signal),
    (count) => ({ input_tokens: count }),
  );
  // Counted from the chat form (a translated target's count, or the gateway's): what that form left out is named,
  // and what a translated target's count left out of it (its vendor body built in `drop` mode), as a Message
  // names what its target's provider drops.
  const answeredBy = ctx.answeredBy;
  const exact = answeredBy !== undefined && !(await answer.outcome).usage?.estimated;
  if (exact && isNativeMessagesTarget(answeredBy) && ctx.guardrails?.unplaced !== true) {
    noteMessagesDropped(ctx, answer.response.headers, answeredBy, parsed);
    return answer;
  }
  const fields = exact ? answeredTolerance(answeredBy, parsed.tolerance, form, "drop") : parsed.tolerance;
  noteMessagesDropped(ctx, answer.response.headers, null, parsed, fields);
  if (parsed.droppedThinking > 0) {
    answer.response.headers.set("x-gateway-dropped-thinking", String(parsed.droppedThinking));
  }
  return answer;
}
