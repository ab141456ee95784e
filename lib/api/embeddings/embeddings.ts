/**
 * `POST /v1/embeddings`: validate, resolve the alias, call the provider, and answer in OpenAI's shape with
 * the encoding the client asked for. The openai SDKs ask for base64 by default and decode it as
 * little-endian float32, so both encodings are converted here whatever the upstream returned.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { countTokens, requestTexts, roughTokenEstimate, tokenIdCount } from "../../usage/estimate.ts";
import { admit, type Answer, type TokenUsage } from "../../http/accounting.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { parseEmbeddingRequest } from "../../http/request_schemas.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { routeRequest } from "../../http/route_request.ts";
import { embeddingServingTargets } from "../../http/tolerance.ts";
import { jsonResponse } from "../../answer/json_response.ts";
import type { ClientRequest } from "../../runtime/types.ts";

/** Little-endian float32 bytes of `vector`, base64-encoded: what OpenAI sends for `encoding_format: base64`. */
export function encodeBase64Embedding(vector: readonly number[]): string {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < vector.length; i++) view.setFloat32(i * 4, vector[i], true);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/** The inverse of {@linkcode encodeBase64Embedding}. */
export function decodeBase64Embedding(text: string): number[] {
  const bytes = Buffer.from(text, "base64");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(Math.floor(bytes.byteLength / 4));
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/** Handles one embeddings request for an authenticated identity. */
export async function handleEmbeddings(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const embed = parseEmbeddingRequest(body);
  // Only the targets that can take the request: one that cannot (token ids on Gemini, `dimensions` Titan does
  // not offer) is left out for the others, and its 400 is the answer only when no target can.
  const model = embeddingServingTargets(resolveAlias(ctx, embed.model, ROUTES.embeddings.modelType), embed);
  await admit(
    ctx,
    ROUTES.embeddings.endpoint,
    roughTokenEstimate(requestTexts(embed)) + tokenIdCount(embed),
    model,
    embed,
  );
  const { value: result, headers } = await routeRequest(
    ctx,
    model,
    ctx.signal,
    (target, provider) => provider.embed(embed, upstreamCall(ctx, target)),
  );
  const base64 = embed.encoding_format === "base64";
  const data = result.data.map((item) => {
    let embedding = item.embedding;
    if (base64 && typeof embedding !== "string") embedding = encodeBase64Embedding(embedding);
    if (!base64 && typeof embedding === "string") embedding = decodeBase64Embedding(embedding);
    return { object: "embedding", index: item.index, embedding };
  });
  const usage: TokenUsage = result.usage.prompt_tokens > 0
    ? { prompt: result.usage.prompt_tokens, completion: 0, estimated: false }
    : {
      prompt: (await countTokens(requestTexts(embed))) + tokenIdCount(embed),
      completion: 0,
      estimated: true,
    };
  // The tokens charged, as the answer shows them: the gateway's count when the upstream reported none.
  const shown = {
    prompt_tokens: usage.prompt,
    total_tokens: usage.estimated ? usage.prompt : result.usage.total_tokens,
  };
  const payload = { object: "list", data, model: model.alias, usage: shown };
  return { response: jsonResponse(JSON.stringify(payload), headers), outcome: { usage } };
}
