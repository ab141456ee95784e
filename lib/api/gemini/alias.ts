/**
 * An alias as Google's API names its refusal: a model that does not exist is Google's 404 `NOT_FOUND`
 * ("models/x is not found for API version v1beta, or is not supported for generateContent. …"), which Gemini CLI
 * takes for a model not found (its model-fallback path); a model the key may not use gets the same answer, so a
 * key cannot tell which aliases exist.
 *
 * @module
 */
import type { ModelType } from "../../config/schema.ts";
import type { ResolvedModel } from "../../config/types.ts";
import { GatewayError, printable } from "../../errors.ts";
import type { ClientContext } from "../../http/context.ts";
import { type AliasEndpoint, resolveAlias } from "../../http/resolve_alias.ts";
import { pathFor } from "../../http/endpoints.ts";

/**
 * The 404 Google answers for a model that does not exist (or, `method` named, does not serve it), in its words;
 * a model the key may not use gets it too. `method` is the one called (`generateContent`), none for a `GET`.
 */
export function modelNotFound(alias: string, method?: string): GatewayError {
  const which = method === undefined ? "" : `, or is not supported for ${method}`;
  return new GatewayError(
    404,
    `models/${
      printable(alias)
    } is not found for API version v1beta${which}. Call ListModels to see the list ` +
      "of available models and their supported methods.",
    { type: "invalid_request_error", code: "model_not_found" },
  );
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

/** `resolveAlias` in Google's terms, for a call of `method` (`generateContent`, `embedContent`, …). */
export function geminiAlias(
  ctx: ClientContext,
  alias: string,
  type: ModelType,
  method: string,
  stream = false,
): ResolvedModel {
  try {
    return resolveAlias(ctx, alias, type, stream, geminiEndpoint);
  } catch (err) {
    if (err instanceof GatewayError && err.status === 404) throw modelNotFound(alias, method);
    throw err;
  }
}
