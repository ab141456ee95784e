/**
 * Turns the `model` a client sent into the alias it may use. Unknown and forbidden aliases get the same 404,
 * so a token cannot discover which aliases exist; a known alias of the wrong kind for the endpoint is a 400.
 *
 * @module
 */
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import type { ModelType } from "../config/schema.ts";
import { GatewayError, modelNotFound, printable } from "../errors.ts";
import type { GatewayState } from "./context.ts";
import { pathFor } from "./endpoints.ts";

/** The alias `name` if `identity` may use it and it serves `type`; throws 404 or 400 otherwise. */
export function resolveAlias(
  state: GatewayState,
  identity: ResolvedToken,
  name: string,
  type: ModelType,
): ResolvedModel {
  const model = state.config.models.get(name);
  if (model === undefined || !identity.aliases.has(name)) throw modelNotFound(name);
  if (model.type !== type) {
    throw new GatewayError(
      400,
      `The model \`${printable(name)}\` is a ${model.type} model and cannot be used with ${pathFor(type)}; ` +
        `use ${pathFor(model.type)}.`,
      { type: "invalid_request_error", param: "model", code: "model_not_supported" },
    );
  }
  return model;
}
