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
import { type AliasEndpoint, resolveAlias } from "../../http/resolve_alias.ts";
import { pathFor } from "../../http/endpoints.ts";

/** The 403 Google answers for a model the key may not use (or that does not exist: the same answer). */
export function forbidden(alias: string): GatewayError {
  return new GatewayError(403, `Permission denied on resource model '${alias}' (or it may not exist).`, {
    type: "permission_error",
    code: "model_not_allowed",
  });
}

/**
 * Where Google's API serves an alias of `type`: its method for chat and embedding aliases (a Gemini client is
 * pointed at what its own SDK calls), OpenAI's path for what Google's API has no method for.
 */
const geminiEndpoint: AliasEndpoint = (type, alias) => {
  if (type === "chat") return `models/${alias}:generateContent`;
  if (type === "embedding") return `models/${alias}:embedContent`;
  return pathFor(type);
};

/** `resolveAlias` in Google's terms. */
export function geminiAlias(
  ctx: ClientContext,
  alias: string,
  type: ModelType,
  stream = false,
): ResolvedModel {
  try {
    return resolveAlias(ctx, alias, type, stream, geminiEndpoint);
  } catch (err) {
    if (err instanceof GatewayError && err.status === 404) throw forbidden(alias);
    throw err;
  }
}
