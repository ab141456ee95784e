/**
 * `GET /v1/models` and `GET /v1/models/{alias}`: the aliases the calling token may use, in OpenAI's `Model`
 * shape; or, asked with `anthropic-version` (Anthropic's SDKs, Claude Code), in Anthropic's Models API shape
 * (`anthropic_models.ts`). Aliases the token may not use are absent from the list and 404 on lookup, exactly
 * like unknown ones.
 *
 * @module
 */
import type { ResolvedModel } from "../../config/types.ts";
import { modelNotFound } from "../../errors.ts";
import { admit, type Answer } from "../../http/accounting.ts";
import type { ClientContext } from "../../http/context.ts";
import { routeDialect, ROUTES } from "../../http/endpoints.ts";
import type { ClientRequest } from "../../runtime/types.ts";
import { anthropicModelInfo, anthropicModelPage, isAnthropicListed } from "./anthropic_models.ts";

function toModelObject(model: ResolvedModel) {
  return { id: model.alias, object: "model", created: model.created, owned_by: model.ownedBy };
}

const JSON_TYPE = { "content-type": "application/json" };

function json(body: unknown): Response {
  return new Response(JSON.stringify(body), { headers: JSON_TYPE });
}

/** The query of a request URL (empty when it has none). */
function queryOf(url: string): URLSearchParams {
  const mark = url.indexOf("?");
  return new URLSearchParams(mark < 0 ? "" : url.slice(mark + 1));
}

/** Lists the caller's aliases in config order (a page of its chat aliases, in Anthropic's dialect). */
export async function handleListModels(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  await admit(ctx, ROUTES.models.endpoint, 0);
  const allowed = ctx.identity.aliases;
  const models = [...ctx.state.config.models.values()].filter((m) => allowed.has(m.alias));
  if (routeDialect(ROUTES.models, ctx.headers) === "anthropic") {
    return {
      response: json(anthropicModelPage(models.filter(isAnthropicListed), queryOf(request.url))),
      outcome: {},
    };
  }
  return { response: json({ object: "list", data: models.map(toModelObject) }), outcome: {} };
}

/** Returns one alias, or the same 404 for unknown and forbidden ones. */
export async function handleGetModel(alias: string, ctx: ClientContext): Promise<Answer> {
  await admit(ctx, ROUTES.model.endpoint, 0);
  const model = ctx.state.config.models.get(alias);
  if (model === undefined || !ctx.identity.aliases.has(alias)) throw modelNotFound(alias);
  if (routeDialect(ROUTES.model, ctx.headers) === "anthropic") {
    if (!isAnthropicListed(model)) throw modelNotFound(alias);
    return { response: json(anthropicModelInfo(model)), outcome: {} };
  }
  return { response: json(toModelObject(model)), outcome: {} };
}
