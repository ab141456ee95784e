/**
 * `POST /v1/embeddings`: validate, resolve the alias, call the provider, and answer in OpenAI's shape with
 * the encoding the client asked for. The openai SDKs ask for base64 by default and decode it as
 * little-endian float32, so both encodings are converted here whatever the upstream returned. Vectors a
 * provider says are not unit length (Gemini's cut by `dimensions`) are normalised: OpenAI's are unit vectors.
 *
 * @module
 */
import { decodeFloat32Base64, encodeFloat32Base64 } from "../../encoding/float32_base64.ts";
import { badGateway } from "../../errors.ts";
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { countTokens, requestTexts, roughTokenEstimate, tokenIdCount } from "../../usage/estimate.ts";
import { admit, type Answer, type TokenUsage } from "../../http/accounting.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { parseEmbeddingRequest } from "../../http/request_schemas.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { EmbeddingSpend } from "../../http/embedding_spend.ts";
import { routeRequest } from "../../http/route_request.ts";
import { answeredEmbedding, embeddingServingTargets, noteDropped } from "../../http/tolerance.ts";
import { jsonResponse } from "../../answer/json_response.ts";
import type { ClientRequest } from "../../runtime/types.ts";

/**
 * A base64 vector that does not decode: a provider checks its answer's (the OpenAI-compatible ones), so this is
 * the last guard, the same 502 as theirs.
 */
function notAVector(): never {
  throw badGateway(
    "The upstream returned a base64 embedding that is not a vector.",
    "upstream_invalid_response",
  );
}

/**
 * `vector` scaled to unit length (L2), for a provider's cut vectors (`EmbeddingResult.unnormalized`):
 * OpenAI's clients take a dot product for the cosine. Scaled by its largest value first, so no square overflows
 * (a float32 vector may hold 3e38). A zero vector has no direction and stays zero.
 */
function unitLength(vector: readonly number[]): number[] {
  const largest = vector.reduce((max, v) => Math.max(max, Math.abs(v)), 0);
  if (largest === 0) return [...vector];
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + (v / largest) ** 2, 0));
  return vector.map((v) => v / largest / norm);
}

/** Handles one embeddings request for an authenticated identity. */
export async function handleEmbeddings(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const embed = parseEmbeddingRequest(body);
  // Only the targets that can take the request: one that cannot (token ids on Gemini, `dimensions` Titan does
  // not offer, a field its translation does not read) is left out for the others, and its 400 is the answer
  // only when no target can.
  const model = embeddingServingTargets(resolveAlias(ctx, embed.model, ROUTES.embeddings.modelType), embed);
  await admit(
    ctx,
    ROUTES.embeddings.endpoint,
    roughTokenEstimate(requestTexts(embed)) + tokenIdCount(embed),
    model,
    embed,
  );
  // Calls answered in attempts that then failed were billed: they join the record, answered or not.
  const spend = new EmbeddingSpend();
  const { value: result, headers, target } = await routeRequest(
    ctx,
    model,
    ctx.signal,
    (target, provider) =>
      spend.attempt(
        target,
        (onEmbedded) => provider.embed(embed, { ...upstreamCall(ctx, target), onEmbedded }),
      ),
  ).catch(async (err) => {
    await spend.noteFailure(ctx);
    throw err;
  });
  const base64 = embed.encoding_format === "base64";
  const data = result.data.map((item) => {
    let embedding = item.embedding;
    if (result.unnormalized && typeof embedding !== "string") embedding = unitLength(embedding);
    if (base64 && typeof embedding !== "string") embedding = encodeFloat32Base64(embedding);
    if (!base64 && typeof embedding === "string") embedding = decodeFloat32Base64(embedding) ?? notAVector();
    return { object: "embedding", index: item.index, embedding };
  });
  const usage: TokenUsage = result.usage.prompt_tokens > 0
    ? { prompt: result.usage.prompt_tokens, completion: 0, estimated: false }
    : {
      prompt: (await countTokens(requestTexts(embed), ctx.signal)) + tokenIdCount(embed),
      completion: 0,
      estimated: true,
    };
  // The tokens charged, as the answer shows them: the gateway's count when the upstream reported none.
  const shown = {
    prompt_tokens: usage.prompt,
    total_tokens: usage.estimated ? usage.prompt : result.usage.total_tokens,
  };
  // What a translated target went without (`unsupported_params: drop`), in `x-gateway-dropped` and the record.
  noteDropped(ctx, headers, answeredEmbedding(target, embed));
  const payload = { object: "list", data, model: model.alias, usage: shown };
  return {
    response: jsonResponse(JSON.stringify(payload), headers),
    outcome: { usage, spentBefore: await spend.spent() },
  };
}
