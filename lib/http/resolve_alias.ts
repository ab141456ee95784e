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

/** Where a client API points a client that sent `alias` of `type` to the wrong endpoint (OpenAI's paths by default). */
export type AliasEndpoint = (type: ModelType, alias: string) => string;

/** The OpenAI-style path serving models of `type`: where the `/v1` APIs point a client. */
const openAIEndpoint: AliasEndpoint = (type) => pathFor(type);

/**
 * The alias `name` if the request's token may use it and it serves `type`; throws 404 or 400 otherwise. Once
 * resolved, the alias and whether the client asked for a stream go into the request's record, so a request
 * refused from here on (by a target's capabilities, the policy, or the upstream) is recorded under its alias;
 * the in-flight registry is told too (a worker's tells the primary, which records the request if the worker dies).
 * The 400 for an alias of the wrong kind names the path the client called and, by `endpointFor`, where the
 * alias is served in the client's own API (a Gemini client is pointed at `:embedContent`, not `/v1/embeddings`).
 */
export function resolveAlias(
  ctx: ClientContext,
  name: string,
  type: ModelType,
  stream = false,
  endpointFor: AliasEndpoint = openAIEndpoint,
): ResolvedModel {
  const model = ctx.state.config.models.get(name);
  if (model === undefined || !ctx.identity.aliases.has(name)) throw modelNotFound(name);
  if (model.type !== type) {
    throw new GatewayError(
      400,
      `The model \`${printable(name)}\` is ${withArticle(model.type)} model and cannot be used with ` +
        `${printable(ctx.record.path)}; use ${endpointFor(model.type, printable(name))}.`,
      { type: "invalid_request_error", param: "model", code: "model_not_supported" },
    );
  }
  ctx.record.alias = model.alias;
  ctx.record.stream = stream;
  ctx.described?.(ctx.identity.id);
  return model;
}

/** "a chat", "an embedding", "a moderation". */
function withArticle(type: ModelType): string {
  return `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}
