/**
 * `POST /v1/messages/count_tokens` (Anthropic's token counting): how many input tokens a Messages request
 * would take, as `{input_tokens}`.
 *
 * The body is validated as `POST /v1/messages` validates it (without `max_tokens`, which counting does not
 * take), the alias resolved under the token's scopes, and the target picked by routing. A target whose vendor
 * counts (the capability table's `countTokens`) gives the exact count: an Anthropic target from the client's own
 * body (model rewritten, redactions applied, the client's `anthropic-version` and `anthropic-beta` forwarded as
 * for `/v1/messages`), others from the chat form. Otherwise the gateway's tokenizer
 * counts the chat form (`estimateInputTokens`, as for `/v1/responses/input_tokens`) and the answer says so with
 * `estimated: true` (a field Anthropic's answer does not have; clients that read `input_tokens` only are
 * unaffected), as do the access log and usage record.
 *
 * Like every count, it is a request for rate limits, scopes and content rules but consumes no tokens: its one
 * usage record has 0 prompt and 0 completion tokens.
 *
 * @module
 */
import { nativeMessagesBody, redactMessages } from "./native.ts";
import { parseMessagesRequest } from "./request.ts";
import { extraField } from "./validate.ts";
import { estimateInputTokens } from "../../usage/estimate.ts";
import { admit, type Answer } from "../../http/accounting.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { messagesTargets } from "./create.ts";
import { forwardedHeaders, isNativeMessagesTarget } from "./create_native.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { answerTokenCount } from "../../answer/runner.ts";
import type { ClientRequest } from "../../runtime/types.ts";

const ROUTE = ROUTES.messagesCountTokens;

/** The parameters Anthropic's counting endpoint takes; anything else is refused as it refuses it. */
const FIELDS = new Set([
  "model",
  "messages",
  "system",
  "tools",
  "tool_choice",
  "thinking",
  "cache_control",
  "output_config",
  "speed",
  "context_management",
  "mcp_servers",
]);

/** Handles one count request for an authenticated identity. */
export async function handleMessagesCountTokens(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const extra = extraField(body, FIELDS, "");
  if (extra !== null) throw extra;
  // The request parser wants the output limit a count does not have: one no thinking budget reaches.
  const parsed = parseMessagesRequest({ ...body, max_tokens: Number.MAX_SAFE_INTEGER }, request.headers);
  const chat = parsed.chat;
  delete chat.max_completion_tokens;
  const model = messagesTargets(resolveAlias(ctx, chat.model, ROUTE.modelType), parsed);
  await admit(ctx, ROUTE.endpoint, 0, model, chat);

  const forwarded = forwardedHeaders(parsed.version, parsed.betas);
  return await answerTokenCount(
    ctx,
    model,
    (target) => {
      if (!isNativeMessagesTarget(target)) return Promise.resolve({ chat });
      const messages = nativeMessagesBody(body, { model: target.model, maxTokens: null });
      return Promise.resolve({ chat, messages: redactMessages(messages, model.contentRules), ...forwarded });
    },
    () => estimateInputTokens(chat),
    (count) => ({ input_tokens: count }),
  );
}
