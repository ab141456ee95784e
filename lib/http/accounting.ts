/**
 * Policy admission and usage accounting for one request: admit before the upstream call, charge the real
 * usage when it is known, and turn the request into its usage record when it is over.
 *
 * @module
 */
import type { Endpoint } from "../config/schema.ts";
import type { ResolvedModel, RoutedTarget } from "../config/types.ts";
import type { JsonObject } from "../openai/types.ts";
import type { UsageRecord } from "../usage/record.ts";
import type { RequestContext } from "./context.ts";

/**
 * Asks the policy whether this request may go ahead (throws the denial otherwise) and keeps the admission
 * on the context so that it is settled and its `x-ratelimit-*` headers are sent, whatever happens next.
 */
export async function admit(
  ctx: RequestContext,
  endpoint: Endpoint,
  estimatedTokens: number | ((body: JsonObject | undefined) => number),
  model?: ResolvedModel,
  body?: JsonObject,
): Promise<void> {
  const admission = await ctx.services.policy.admit({
    identity: ctx.identity!,
    endpoint,
    model,
    body,
    estimatedTokens,
  });
  ctx.admission = admission;
  ctx.record.outcome = admission.outcome;
  ctx.record.rule = admission.rule;
}

/** Cost of a request on `target` in the price table's currency (0 without a price). */
export function costOf(target: RoutedTarget | undefined, prompt: number, completion: number): number {
  const price = target?.price;
  if (!price) return 0;
  return (prompt * price.input + completion * price.output) / 1_000_000;
}

/** Notes the request's token usage and its cost on the answering target. */
export function chargeUsage(
  ctx: RequestContext,
  prompt: number,
  completion: number,
  estimated: boolean,
): void {
  ctx.record.prompt_tokens = prompt;
  ctx.record.completion_tokens = completion;
  ctx.record.tokens_estimated = estimated;
  ctx.record.cost = costOf(ctx.answeredBy, prompt, completion);
}

const ENDPOINTS: Record<string, string> = {
  "/v1/chat/completions": "chat",
  "/v1/embeddings": "embeddings",
  "/v1/models": "models",
};

/** The endpoint name of an API path, or null for paths outside the API (health, admin, metrics). */
export function endpointOf(path: string): string | null {
  if (!path.startsWith("/v1/") && path !== "/v1") return null;
  if (path.startsWith("/v1/models/")) return "models";
  return ENDPOINTS[path] ?? "other";
}

/** The usage record of a finished request. */
export function usageRecordOf(ctx: RequestContext, time: string): UsageRecord {
  const r = ctx.record;
  return {
    time,
    request_id: r.request_id,
    token: r.token ?? null,
    environment: r.environment ?? null,
    alias: r.alias ?? null,
    provider: r.provider ?? null,
    upstream_model: r.upstream_model ?? null,
    endpoint: r.endpoint ?? "other",
    stream: r.stream === true,
    status: r.status ?? 0,
    outcome: r.outcome ?? "allow",
    rule: r.rule ?? null,
    prompt_tokens: r.prompt_tokens ?? 0,
    completion_tokens: r.completion_tokens ?? 0,
    tokens_estimated: r.tokens_estimated === true,
    cost: r.cost ?? 0,
    latency_ms: r.latency_ms ?? 0,
    ttft_ms: r.ttft_ms ?? null,
    attempts: r.attempts ?? 0,
    error_code: r.error_code ?? null,
  };
}
