/**
 * `POST /v1beta/models/{alias}:embedContent` and `:batchEmbedContents` (Google's Gemini API) over any
 * embedding alias: each content's text parts, joined, are one input of the gateway's embeddings request
 * (`outputDimensionality` → `dimensions`; `taskType` and `title` are Google's to apply, dropped and named in
 * `x-gateway-dropped`), routed like `/v1/embeddings`, and answered as `{"embedding": {"values"}}` or
 * `{"embeddings": [{"values"}, …]}`. The call is admitted as an embeddings request (the token's `embeddings`
 * scope, the content rules on its input) and recorded under the endpoint `gemini`. The body is read as Google
 * reads it, proto field names included (normalize.ts).
 *
 * @module
 */
import { GatewayError, invalidRequest } from "../../errors.ts";
import { admit, type Answer, noteOutcome, type TokenUsage } from "../../http/accounting.ts";
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { embeddingServingTargets, noteDropped } from "../../http/tolerance.ts";
import { geminiAlias } from "./alias.ts";
import { normalizeGemini } from "./normalize.ts";
import { routeRequest } from "../../http/route_request.ts";
import { jsonResponse } from "../../answer/json_response.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { countTokens, roughTokenEstimate } from "../../usage/estimate.ts";
import type { ClientRequest } from "../../runtime/types.ts";

/** At most this many contents in one batch (Google's own limit). */
const MAX_BATCH = 100;

/** One embed request's text, and what of it the translation drops. */
function contentText(request: JsonObject, path: string, dropped: string[]): string {
  const content = request.content;
  if (!isObject(content) || !Array.isArray(content.parts)) {
    throw invalidRequest(
      `Invalid value at '${path}.content': expected a content with parts.`,
      `${path}.content`,
    );
  }
  const texts = content.parts.map((part, i) => {
    if (!isObject(part) || typeof part.text !== "string") {
      throw invalidRequest(
        `Invalid value at '${path}.content.parts[${i}]': only text parts can be embedded here.`,
        `${path}.content.parts[${i}]`,
      );
    }
    return part.text;
  });
  for (const key of ["taskType", "title"]) {
    if (request[key] != null) dropped.push(path === "" ? key : `${path}.${key}`);
  }
  return texts.join("\n");
}

/** Handles `:embedContent` (`batch` false) and `:batchEmbedContents` for an authenticated identity. */
export async function geminiEmbed(
  request: ClientRequest,
  ctx: ClientContext,
  alias: string,
  batch: boolean,
): Promise<Answer> {
  const sent = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const body = normalizeGemini(sent, batch ? "BatchEmbedContentsRequest" : "EmbedContentRequest");
  const dropped: string[] = [];
  let requests: JsonObject[];
  if (batch) {
    if (!Array.isArray(body.requests) || body.requests.length === 0 || body.requests.length > MAX_BATCH) {
      throw invalidRequest(`Invalid value at 'requests': expected 1 to ${MAX_BATCH} requests.`, "requests");
    }
    requests = body.requests.map((r, i) => {
      if (!isObject(r)) {
        throw invalidRequest(`Invalid value at 'requests[${i}]': expected an object.`, "requests");
      }
      return r;
    });
  } else requests = [body];
  const input = requests.map((r, i) => contentText(r, batch ? `requests[${i}]` : "", dropped));
  const dimensions = requests[0].outputDimensionality;
  const embed: JsonObject & { model: string; input: string[] } = { model: alias, input };
  if (typeof dimensions === "number") embed.dimensions = dimensions;
  const model = embeddingServingTargets(geminiAlias(ctx, alias, ROUTES.embeddings.modelType), embed);
  await admit(ctx, ROUTES.embeddings.endpoint, roughTokenEstimate(input), model, embed);
  const { value: result, headers } = await routeRequest(
    ctx,
    model,
    ctx.signal,
    (target, provider) => provider.embed(embed, upstreamCall(ctx, target)),
  );
  const usage: TokenUsage = result.usage.prompt_tokens > 0
    ? { prompt: result.usage.prompt_tokens, completion: 0, estimated: false }
    : { prompt: await countTokens(input), completion: 0, estimated: true };
  const vectors = [...result.data].sort((a, b) => a.index - b.index).map((item) => {
    if (typeof item.embedding === "string") {
      // Refused, but the upstream answered: its usage is the request's, recorded and charged.
      noteOutcome(ctx, { usage });
      throw new GatewayError(502, "The upstream answered base64 embeddings.");
    }
    return { values: item.embedding };
  });
  noteDropped(ctx, headers, { refusal: null, native: [], dropped });
  const payload = batch ? { embeddings: vectors } : { embedding: vectors[0] };
  return { response: jsonResponse(JSON.stringify(payload), headers), outcome: { usage } };
}
