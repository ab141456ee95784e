/**
 * `POST /v1/moderations`: validate, resolve the moderation alias, admit (the token's `moderations` scope, rate
 * limits, content rules and input guardrails on the input texts), route to a target whose provider has OpenAI's
 * moderations endpoint, and answer OpenAI's CreateModerationResponse with the upstream's results as sent and
 * the alias as `model`. Upstreams report no usage for a moderation, so the record's input tokens are the
 * gateway's count of the input texts (estimated), and its output tokens 0.
 *
 * @module
 */
import { type ClientContext, upstreamCall } from "../../http/context.ts";
import { ROUTES } from "../../http/endpoints.ts";
import { admit, type Answer } from "../../http/accounting.ts";
import { readJsonBody } from "../../http/read_json_body.ts";
import { resolveAlias } from "../../http/resolve_alias.ts";
import { routeRequest } from "../../http/route_request.ts";
import { jsonResponse } from "../../answer/json_response.ts";
import { countTokens, roughTokenEstimate } from "../../usage/estimate.ts";
import { badGateway, GatewayError } from "../../errors.ts";
import { expectedResults, moderationTexts, parseModerationRequest } from "./request.ts";
import type { ClientRequest } from "../../runtime/types.ts";

const ROUTE = ROUTES.moderations;

/** A `modr-` id for an answer whose upstream sent none. */
function moderationId(): string {
  return `modr-${crypto.randomUUID().replaceAll("-", "")}`;
}

/** Handles one moderation request for an authenticated identity. */
export async function handleModerations(request: ClientRequest, ctx: ClientContext): Promise<Answer> {
  const body = await readJsonBody(request, ctx.state.config.server, ctx.signal);
  const moderation = parseModerationRequest(body);
  const model = resolveAlias(ctx, moderation.model, ROUTE.modelType);
  await admit(ctx, ROUTE.endpoint, roughTokenEstimate(moderationTexts(moderation)), model, moderation);
  const expected = expectedResults(moderation);
  const { value: result, headers } = await routeRequest(ctx, model, ctx.signal, async (target, provider) => {
    const answer = await provider.moderate?.(moderation, upstreamCall(ctx, target));
    // The capability table said this target serves moderations; an adapter without the method disagrees (a bug).
    if (answer === undefined) throw new GatewayError(500, "The provider does not serve moderations.");
    if (expected !== null && answer.results.length !== expected) {
      throw badGateway(
        `Provider "${target.provider}" answered ${answer.results.length} moderation results for ${expected} inputs.`,
        "upstream_invalid_response",
      );
    }
    return answer;
  });
  // After admission: the texts as sent upstream (a content rule or guardrail may have redacted them).
  const prompt = await countTokens(moderationTexts(moderation), ctx.signal);
  const payload = { id: result.id ?? moderationId(), model: model.alias, results: result.results };
  let text = JSON.stringify(payload);
  // The results are the upstream's own JSON: nothing of the config's secrets reaches the client through them.
  const scrubber = ctx.state.config.scrubber;
  if (scrubber.test(text)) text = scrubber.scrub(text);
  return {
    response: jsonResponse(text, headers),
    outcome: { usage: { prompt, completion: 0, estimated: true } },
  };
}
