/**
 * A Responses request's input in the client's own terms, where the translation to the chat form would lose
 * them: `item_reference` items resolved from the caller's stored responses.
 *
 * @module
 */
import { GatewayError, printable } from "../../errors.ts";
import { type ParseOptions, parseResponsesRequest, type ResponsesRequest } from "./request.ts";
import type { JsonObject } from "../../openai/types.ts";
import type { ClientContext } from "../../http/context.ts";
import { MAX_CHAIN_BYTES } from "../../usage/responses_store.ts";

/**
 * OpenAI's 404 for an item reference it does not hold for the caller; with `store: false` it adds why
 * (clients that turn storing off yet still send references get told what to change).
 */
export function itemNotFound(id: string, store: boolean): GatewayError {
  const why = store
    ? ""
    : " Items are not persisted when `store` is set to false. Try again with `store` set " +
      "to true, or remove this item from your input.";
  return new GatewayError(404, `Item with id '${printable(id)}' not found.${why}`, {
    type: "invalid_request_error",
    param: "input",
  });
}

/**
 * OpenAI's 400 for a context too long, naming `input`: the items its `item_reference`s bring in (each occurrence
 * counted, as each is sent), with the conversation behind `previous_response_id` when there is one, are over
 * {@linkcode MAX_CHAIN_BYTES}, the most stored text the gateway rebuilds for one request.
 */
export function referencesTooLong(withChain: boolean): GatewayError {
  const what = withChain
    ? "The items 'input' references, with the conversation behind 'previous_response_id', are"
    : "The items 'input' references are";
  return new GatewayError(
    400,
    `${what} over ${MAX_CHAIN_BYTES / 1024 / 1024} MiB, more than the gateway rebuilds for one request. ` +
      "Reference fewer items, or compact the conversation (POST /v1/responses/compact).",
    { type: "invalid_request_error", param: "input", code: "context_length_exceeded" },
  );
}

/**
 * `parsed` with its `item_reference` items (`{type: "item_reference", id}`: an earlier input or output item by
 * its id, as the Vercel AI SDK sends earlier turns while `store` is on) replaced by the items they name, looked
 * up in the caller's own stored responses (one call for all of them) and translated again from `body`. An id
 * none of them holds (never existed, not stored, deleted, pruned, or another token's: one answer for all) is
 * a 404 before anything goes upstream. Each occurrence of a reference is sent (and stored) as the whole item, so
 * their total is held to {@linkcode MAX_CHAIN_BYTES}, the bound of a `previous_response_id` conversation
 * ({@linkcode referencesTooLong}, decided before the request is translated): without it a small body repeating
 * one reference to a large stored item had the gateway build, send upstream and store any size. `options` are
 * those `parsed` was parsed with.
 */
export async function resolveItemReferences(
  body: JsonObject,
  parsed: ResponsesRequest,
  ctx: ClientContext,
  options: ParseOptions = {},
): Promise<ResponsesRequest> {
  if (parsed.references.length === 0) return parsed;
  const ids = [...new Set(parsed.references)];
  const found = await ctx.services.responses.items(ids, ctx.identity.id);
  const items = new Map<string, JsonObject>();
  ids.forEach((id, i) => {
    const item = found[i];
    // Stored inputs hold resolved items only; a reference to a reference would not translate.
    if (item == null || item.type === "item_reference") throw itemNotFound(id, parsed.params.store);
    items.set(id, item);
  });
  const sizes = new Map([...items].map(([id, item]) => [id, JSON.stringify(item).length]));
  let referencedBytes = 0;
  for (const id of parsed.references) {
    referencedBytes += sizes.get(id)!;
    if (referencedBytes > MAX_CHAIN_BYTES) throw referencesTooLong(false);
  }
  return { ...parseResponsesRequest(body, items, options), referencedBytes };
}
