/**
 * Runs a request through routing and notes the outcome where operators and clients look for it: the access
 * record (every attempt) and the response headers (which target answered, after how many attempts).
 *
 * @module
 */
import type { ResolvedModel, RoutedTarget } from "../config/types.ts";
import { GatewayError } from "../errors.ts";
import type { Provider } from "../providers/types.ts";
import { genAiProviderName } from "../providers/capabilities.ts";
import type { Lease } from "../routing/health.ts";
import { type AttemptRecord, NoUpstreamCall, route } from "../routing/route.ts";
import type { RequestContext } from "./context.ts";
import type { AttemptTarget } from "../telemetry/request_trace.ts";

/** What a trace shows of an attempt's target: its provider (and its vendor), model and the upstream's host. */
function attemptTarget(target: RoutedTarget): AttemptTarget {
  const config = target.providerConfig as { base_url?: unknown };
  let host: string | undefined;
  try {
    host = typeof config.base_url === "string" ? new URL(config.base_url).hostname : undefined;
  } catch { /* no host to show */ }
  return { provider: target.provider, genAiProvider: genAiProviderName(target), model: target.model, host };
}

/** The routed answer with the headers that say who answered. */
export interface RoutedAnswer<T> {
  value: T;
  target: RoutedTarget;
  lease: Lease;
  headers: Headers;
}

/**
 * Routes `attempt` over `model`'s targets for this request. The target's lease is released as soon as the
 * answer is in hand, unless `holdsLease(answer)` says the answer is still running (a stream the client reads):
 * then whoever serves it releases the lease when it ends. The request's GenAI operation (`ctx.operation`, its
 * route's) is the GenAI call its trace shows the attempts under; a request that asks none (a token count: no
 * model is asked to answer) has its attempts under the gateway's span, and no GenAI metric counts it. Never
 * guessed from the alias's type: a moderation alias is no chat. `calls(target)` false says the request
 * asks that target nothing (it cannot count tokens): when routing picks it, routing ends with
 * {@linkcode NoUpstreamCall} before any attempt, so no attempt is recorded or traced and its health is untouched.
 */
export async function routeRequest<T>(
  ctx: RequestContext,
  model: ResolvedModel,
  signal: AbortSignal,
  attempt: (target: RoutedTarget, provider: Provider) => Promise<T>,
  holdsLease: (answer: T) => boolean = () => false,
  calls: (target: RoutedTarget) => boolean = () => true,
): Promise<RoutedAnswer<T>> {
  const attempts: AttemptRecord[] = [];
  ctx.record.attempt_log = attempts;
  const note = (target: { provider: string; model: string } | undefined) => {
    ctx.record.attempts = attempts.length;
    // An attempt's outcome is the error code, which may come from the upstream: it goes to the access log and
    // to metrics labels, so it passes the config's secret scrubber like every other upstream text.
    const scrubber = ctx.state.config.scrubber;
    for (const attempt of attempts) {
      if (scrubber.test(attempt.outcome)) attempt.outcome = scrubber.scrub(attempt.outcome);
    }
    if (target) {
      ctx.record.provider = target.provider;
      ctx.record.upstream_model = target.model;
    }
  };
  const trace = ctx.trace;
  if (ctx.operation) trace?.startCall(ctx.operation, model.alias);
  try {
    const routed = await route(model, ctx.state.config.routing, ctx.routing, signal, attempts, (target) => {
      if (!calls(target)) throw new NoUpstreamCall();
      const provider = ctx.state.providers.get(target.provider);
      if (provider === undefined) {
        throw new GatewayError(500, "The gateway has no provider for this model.", {
          code: "internal_error",
        });
      }
      if (trace === undefined) return attempt(target, provider);
      // Each attempt under its own client span, whose traceparent (and tracestate) the provider sends upstream.
      return trace.attempt(attemptTarget(target), (attemptTrace) => {
        ctx.attemptTrace = attemptTrace;
        return attempt(target, provider);
      });
    });
    note(routed.target);
    ctx.answeredBy = routed.target;
    if (!holdsLease(routed.value)) routed.lease.release();
    const headers = new Headers({
      "x-gateway-provider": routed.target.provider,
      "x-gateway-model": routed.target.model,
      "x-gateway-attempts": String(attempts.length),
    });
    return { ...routed, headers };
  } catch (err) {
    note(attempts.at(-1));
    throw err;
  }
}
