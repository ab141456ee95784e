/**
 * Turns the `model` a client sent into the alias it may use. Unknown and forbidden aliases get the same 404,
 * so a token cannot discover which aliases exist; a known alias of the wrong kind for the endpoint is a 400.
 *
 * @module
 */
import type { ResolvedModel } from "../config/types.ts";
import type { ModelType } from "../config/schema.ts";
import { GatewayError, modelNotFound, printable } from "../errors.ts";
import type { ClientContext } from "./context.ts";
import { pathFor } from "./endpoints.ts";

/**
 * The alias `name` if the request's token may use it and it serves `type`; throws 404 or 400 otherwise. Once
 * resolved, the alias and whether the client asked for a stream go into the request's record, so a request
 * refused from here on (by a target's capabilities, the policy, or the upstream) is recorded under its alias.
 */
export function resolveAlias(
  ctx: ClientContext,
  name: string,
  type: ModelType,
  stream = false,
): ResolvedModel {
  const model = ctx.state.config.models.get(name);
  if (model === undefined || !ctx.identity.aliases.has(name)) throw modelNotFound(name);
  if (model.type !== type) {
    throw new GatewayError(
      400,
      `The model \`${printable(name)}\` is a ${model.type} model and cannot be used with ${pathFor(type)}; ` +
        `use ${pathFor(model.type)}.`,
      { type: "invalid_request_error", param: "model", code: "model_not_supported" },
    );
  }
  ctx.record.alias = model.alias;
  ctx.record.stream = stream;
  return model;
}
