/**
 * Google's `Model` resource on the Gemini API: `GET /v1beta/models`, the chat and embedding aliases the key may
 * use, paged as Google's `ListModels` pages (`pageSize`, 50 by default and at most 1000 however many are asked
 * for; `pageToken`, the `nextPageToken` of the page before, given while more follow), and the shape of one
 * alias, which `GET /v1beta/models/{alias}` answers too (generate.ts).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type { ResolvedModel } from "../../config/types.ts";
import { invalidRequest, printable } from "../../errors.ts";
import { admit, type Answer } from "../../http/accounting.ts";
import type { ClientContext } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import type { JsonObject } from "../../openai/types.ts";
import type { ClientRequest } from "../../runtime/types.ts";

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;

/** Whether the Gemini API shows `model`: a chat or an embedding alias (it has no method for a moderation one). */
export function servedHere(model: ResolvedModel): boolean {
  return model.type === "chat" || model.type === "embedding";
}

/** An alias in Google's `Model` shape. */
export function modelObject(model: ResolvedModel): JsonObject {
  return {
    name: `models/${model.alias}`,
    version: "gateway",
    displayName: model.alias,
    description: `An alias of the gateway, served by ${model.targets.map((t) => t.provider).join(", ")}.`,
    supportedGenerationMethods: model.type === "chat"
      ? ["generateContent", "streamGenerateContent", "countTokens"]
      : ["embedContent", "batchEmbedContents"],
  };
}

/**
 * `pageSize` as Google reads it: absent or 0 (proto3's unset) is the default, more than the maximum is the
 * maximum (Google documents it so), and anything but a non-negative integer is its 400.
 */
function pageSizeOf(query: URLSearchParams): number {
  const given = query.get("pageSize") ?? query.get("page_size");
  if (given === null || given === "") return DEFAULT_PAGE_SIZE;
  if (!/^\d{1,10}$/.test(given)) {
    throw invalidRequest(
      `Invalid value at 'page_size' (TYPE_INT32), "${
        printable(given)
      }": expected an integer from 1 to ${MAX_PAGE_SIZE}.`,
      "pageSize",
    );
  }
  const size = Number(given);
  return size === 0 ? DEFAULT_PAGE_SIZE : Math.min(size, MAX_PAGE_SIZE);
}

/** The opaque `nextPageToken` after `alias`: the alias in base64url, which the client only passes back. */
function tokenAfter(alias: string): string {
  return Buffer.from(alias, "utf8").toString("base64url");
}

/**
 * The page of `models` (the caller's, in list order) that `query` asks for, and the token of the next one when
 * more follow. A `pageToken` that names no alias in the caller's list (made up, or of an alias the key may no
 * longer use) answers an empty page: an alias the key may not use is as unknown as one that does not exist.
 */
export function geminiModelPage(
  models: readonly ResolvedModel[],
  query: URLSearchParams,
): { models: JsonObject[]; nextPageToken?: string } {
  const size = pageSizeOf(query);
  const token = query.get("pageToken") ?? query.get("page_token") ?? "";
  let start = 0;
  if (token !== "") {
    start = models.findIndex((m) => tokenAfter(m.alias) === token) + 1;
    if (start === 0) return { models: [] };
  }
  const page = models.slice(start, start + size);
  const more = start + size < models.length;
  return more ? { models: page.map(modelObject), nextPageToken: tokenAfter(page.at(-1)!.alias) } : {
    models: page.map(modelObject),
  };
}

/** `GET /v1beta/models`: a page of the chat and embedding aliases the key may use, each with its methods. */
export async function handleGeminiModels(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  await admit(ctx, ROUTES.geminiModels.endpoint, 0);
  const allowed = ctx.identity.aliases;
  const models = [...ctx.state.config.models.values()].filter((m) => allowed.has(m.alias) && servedHere(m));
  const page = geminiModelPage(models, new URL(request.url).searchParams);
  return {
    response: new Response(JSON.stringify(page), { headers: { "content-type": "application/json" } }),
    outcome: {},
  };
}
