/**
 * `GET /v1/models` and `GET /v1/models/{alias}`: the aliases the calling token may use, in OpenAI's `Model`
 * shape. Aliases the token may not use are absent from the list and 404 on lookup, exactly like unknown ones.
 *
 * @module
 */
import type { ResolvedModel } from "../../config/types.ts";
import { modelNotFound } from "../../errors.ts";
import { admit, type Answer } from "../../http/accounting.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import type { ClientRequest } from "../../runtime/types.ts";

function toModelObject(model: ResolvedModel) {
  return { id: model.alias, object: "model", created: model.created, owned_by: model.ownedBy };
}

const JSON_TYPE = { "content-type": "application/json" };

/** Lists the caller's aliases in config order. */
export async function handleListModels(_request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  await admit(ctx, ROUTES.models.endpoint, 0);
  const allowed = ctx.identity.aliases;
  const data = [...ctx.state.config.models.values()].filter((m) => allowed.has(m.alias)).map(toModelObject);
  return {
    response: new Response(JSON.stringify({ object: "list", data }), { headers: JSON_TYPE }),
    outcome: {},
  };
}

/** Returns one alias, or the same 404 for unknown and forbidden ones. */
export async function handleGetModel(alias: string, ctx: ClientContext): Promise<Answer> {
  await admit(ctx, ROUTES.model.endpoint, 0);
  const model = ctx.state.config.models.get(alias);
  if (model === undefined || !ctx.identity.aliases.has(alias)) throw modelNotFound(alias);
  return {
    response: new Response(JSON.stringify(toModelObject(model)), { headers: JSON_TYPE }),
    outcome: {},
  };
}
