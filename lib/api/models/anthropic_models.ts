/**
 * Anthropic's Models API on the paths it shares with OpenAI's (`GET /v1/models`, `GET /v1/models/{id}`), for a
 * request carrying `anthropic-version`: the Anthropic SDKs' `client.models.list()` / `retrieve()` and Claude
 * Code's gateway model discovery (`CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY`, `?limit=1000`). A model is
 * `{type: "model", id, display_name, created_at}` (RFC 3339); a list is a page of them with `has_more`,
 * `first_id` and `last_id`, paged by `limit` (1 to 1000, default 20), `after_id` or `before_id` as Anthropic
 * documents. Only chat aliases are listed: they are what the Messages API serves.
 *
 * @module
 */
import type { ResolvedModel } from "../../config/types.ts";
import { GatewayError, printable } from "../../errors.ts";

/** One model in Anthropic's `ModelInfo` shape. */
export interface AnthropicModelInfo {
  type: "model";
  id: string;
  display_name: string;
  created_at: string;
}

/** A page of Anthropic's model list. */
export interface AnthropicModelPage {
  data: AnthropicModelInfo[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1000;

/** Whether an alias belongs in Anthropic's Models API: the chat aliases, which its Messages API serves. */
export function isAnthropicListed(model: ResolvedModel): boolean {
  return model.type === "chat";
}

/** `model` as Anthropic's `ModelInfo`: the alias is its id and display name; `created` as RFC 3339 (UTC). */
export function anthropicModelInfo(model: ResolvedModel): AnthropicModelInfo {
  return {
    type: "model",
    id: model.alias,
    display_name: model.alias,
    created_at: new Date(model.created * 1000).toISOString().replace(/\.000Z$/, "Z"),
  };
}

function badQuery(param: string, message: string): GatewayError {
  return new GatewayError(400, `${param}: ${message}`, { type: "invalid_request_error", param });
}

/** The page size of `query`'s `limit`: 1 to 1000, 20 when absent; else a 400. */
function limitOf(query: URLSearchParams): number {
  const given = query.get("limit");
  if (given === null) return DEFAULT_LIMIT;
  const limit = /^\d{1,4}$/.test(given) ? Number(given) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) {
    throw badQuery("limit", `must be an integer from 1 to ${MAX_LIMIT}, got \`${printable(given)}\`.`);
  }
  return limit;
}

/**
 * The page of `models` (the caller's, in list order) that `query` asks for. `after_id`: the `limit` models after
 * it, `has_more` when others follow; `before_id`: the `limit` models just before it, `has_more` when others
 * precede. A cursor that is not in the caller's list gives an empty page (an alias the token may not use is as
 * unknown as one that does not exist).
 */
export function anthropicModelPage(
  models: readonly ResolvedModel[],
  query: URLSearchParams,
): AnthropicModelPage {
  const limit = limitOf(query);
  const after = query.get("after_id");
  const before = query.get("before_id");
  if (after !== null && before !== null) {
    throw badQuery("before_id", "cannot be given together with after_id.");
  }
  let start = 0;
  let end = models.length;
  if (after !== null) start = models.findIndex((m) => m.alias === after) + 1;
  if (before !== null) end = models.findIndex((m) => m.alias === before);
  if ((after !== null && start === 0) || end < 0) {
    return { data: [], has_more: false, first_id: null, last_id: null };
  }
  // More than a page in the direction asked for: the page is its end nearest the cursor.
  const has_more = end - start > limit;
  if (before !== null) start = Math.max(start, end - limit);
  else end = Math.min(end, start + limit);
  const data = models.slice(start, end).map(anthropicModelInfo);
  return { data, has_more, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
