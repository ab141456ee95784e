/**
 * The answer of the token-counting endpoints (Responses `input_tokens`, Messages `count_tokens`, Gemini
 * `countTokens`): the exact count of a target that counts, else the gateway's. Beside the runner rather than in
 * it: no other answer goes this way.
 *
 * @module
 */
import { ClientGoneError, GatewayError } from "../errors.ts";
import type { JsonObject } from "../openai/types.ts";
import { type CountingApi, countsInputTokens } from "../providers/capabilities.ts";
import type { TokenCountInput } from "../providers/types.ts";
import type { ResolvedModel, ResolvedTarget } from "../config/types.ts";
import { routeRequest } from "../http/route_request.ts";
import { jsonResponse } from "./json_response.ts";
import type { Answer } from "../http/accounting.ts";
import { type ClientContext, upstreamCall } from "../http/context.ts";
import { NoUpstreamCall } from "../routing/route.ts";

/**
 * The answer of a token-counting endpoint: routed when the alias has a target that counts (the capability
 * table), exact when the target routing picks counts; otherwise, or when every count failed (each attempt is in
 * the access log), the gateway's count (`estimate`), marked `estimated: true`. A target that cannot count a
 * request of the client's `api` is not called, and is no attempt: no `x-gateway-provider`, nothing for its
 * health, no attempt span. A count consumes no tokens. `input` gives the client's own body for a target that
 * speaks its API; when the request's input guardrails changed a text that body cannot carry
 * (`RequestGuardrails.unplaced`), only its chat form is sent, so no vendor counts a text a guardrail masked.
 */
export async function answerTokenCount(
  ctx: ClientContext,
  model: ResolvedModel,
  api: CountingApi,
  input: (target: ResolvedTarget) => Promise<TokenCountInput>,
  estimate: () => Promise<number>,
  render: (count: number) => JsonObject,
): Promise<Answer> {
  let exact: number | null = null;
  let headers = new Headers();
  // An input guardrail changed a text the client's body cannot carry: that body goes to no vendor, which
  // counts the chat form instead, as the request itself would be served over it (and the Responses API's
  // own counting endpoint, which counts only a Responses body, leaves the count to the gateway).
  const chatFormOnly = ctx.guardrails?.unplaced === true;
  // Routing only when some target can count. The target routing picks decides: one that cannot count is asked
  // nothing (`NoUpstreamCall`), and the gateway counts. That is no attempt on it: a count made here must not
  // pass for its upstream's health (end its ejection, clear its failure streak, give it a ~0 ms latency).
  const counts = (target: ResolvedTarget) => countsInputTokens(target, api, chatFormOnly);
  if (model.targets.some(counts)) {
    try {
      const routed = await routeRequest(
        ctx,
        model,
        ctx.signal,
        async (target, provider) => {
          const sent = await input(target);
          const count = await provider.countInputTokens?.(
            chatFormOnly ? { chat: sent.chat } : sent,
            upstreamCall(ctx, target),
          );
          // An adapter with nothing to send for this request (the capability table said it would have): its
          // request was never sent. Not expected: `counts` leaves such a target to the gateway before routing.
          if (count === undefined || count === null) throw new NoUpstreamCall();
          return count;
        },
        () => false,
        counts,
      );
      exact = routed.value;
      headers = routed.headers;
    } catch (err) {
      // Left to the gateway (no call made), or every count failed: the estimate. A client gone, or a bug, is not.
      const estimates = err instanceof NoUpstreamCall ||
        (err instanceof GatewayError && !(err instanceof ClientGoneError));
      if (!estimates || ctx.signal.aborted) throw err;
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
