/**
 * An alias as Google's API names its refusal: a model the key may not use, or that does not exist, is a 403
 * `PERMISSION_DENIED` ("Permission denied on resource model …"), as Google answers it, not a 404.
 *
 * @module
 */
import type { ModelType } from "../../config/schema.ts";
import type { ResolvedModel } from "../../config/types.ts";
import { GatewayError } from "../../errors.ts";
import type { ClientContext } from "../../http/context.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";

/** The 403 Google answers for a model the key may not use (or that does not exist: the same answer). */
export function forbidden(alias: string): GatewayError {
  return new GatewayError(403, `Permission denied on resource model '${alias}' (or it may not exist).`, {
    type: "permission_error",
    code: "model_not_allowed",
  });
}

/** `resolveAlias` in Google's terms. */
export function geminiAlias(
  ctx: ClientContext,
  alias: string,
  type: ModelType,
  stream = false,
): ResolvedModel {
  try {
    return resolveAlias(ctx, alias, type, stream);
  } catch (err) {
    if (err instanceof GatewayError && err.status === 404) throw forbidden(alias);
    throw err;
  }
}
