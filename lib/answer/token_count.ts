/**
 * The answer of the token-counting endpoints (Responses `input_tokens`, Messages `count_tokens`, Gemini
 * `countTokens`): the exact count of a target that counts, else the gateway's. Beside the runner rather than in
 * it: no other answer goes this way.
 *
 * @module
 */
import { ClientGoneError, GatewayError } from "../errors.ts";
import type { JsonObject } from "../openai/types.ts";
import { countsInputTokens } from "../providers/capabilities.ts";
import type { TokenCountInput } from "../providers/types.ts";
import type { ResolvedModel, ResolvedTarget } from "../config/types.ts";
import { routeRequest } from "../http/route_request.ts";
import { jsonResponse } from "./json_response.ts";
import type { Answer } from "../http/accounting.ts";
import { type ClientContext, upstreamCall } from "../http/context.ts";

/**
 * The answer of a token-counting endpoint: routed to a target that counts (the capability table) when the
 * alias has one, its count exact; otherwise, or when every count failed (each attempt is in the access log),
 * the gateway's count (`estimate`), marked `estimated: true`. A count consumes no tokens: its usage is 0.
 */
export async function answerTokenCount(
  ctx: ClientContext,
  model: ResolvedModel,
  input: (target: ResolvedTarget) => Promise<TokenCountInput>,
  estimate: () => Promise<number>,
  render: (count: number) => JsonObject,
): Promise<Answer> {
  let exact: number | null = null;
  let headers = new Headers();
  // Routing only when some target can count: an attempt that counts nothing would tell health a false latency.
  if (model.targets.some(countsInputTokens)) {
    try {
      const routed = await routeRequest(
        ctx,
        model,
        ctx.signal,
        async (target, provider) => {
          if (!countsInputTokens(target)) return null;
          const call = upstreamCall(ctx, target);
          return await provider.countInputTokens?.(await input(target), call) ?? null;
        },
        () => false,
        // Counting asks no model to answer: traced as attempts, not as a GenAI call, and no GenAI metric.
        null,
      );
      exact = routed.value;
      headers = routed.headers;
    } catch (err) {
      if (err instanceof ClientGoneError || !(err instanceof GatewayError) || ctx.signal.aborted) throw err;
    }
  }
  const estimated = exact === null;
  const answer = render(exact ?? await estimate());
  if (estimated) answer.estimated = true;
  return {
    response: jsonResponse(JSON.stringify(answer), headers),
    outcome: { usage: { prompt: 0, completion: 0, estimated } },
  };
}
