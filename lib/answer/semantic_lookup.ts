/**
 * The semantic cache's lookup (docs/caching.md#semantic-cache), after an exact miss: the request's last user
 * turn is embedded through the alias's embedding alias, and the most similar turn this replica answered under
 * the same context (everything else of the request, keyed exactly) is a hit when it is similar enough.
 *
 * The embedding call is the gateway's own: the text passes the embedding alias's content rules and input
 * guardrails first (a redaction applies, a refusal means no lookup), as a `/v1/embeddings` request's does; it
 * goes through routing like any embeddings request (retries, fallback, health) within the lookup's own deadline
 * (`semantic.timeout`), and leaves a usage record of its own (request id `<id>.semantic`, no token, so no
 * client's budget or limits pay for it). A refused, failed or late call only means no semantic hit, and is
 * logged (`semantic_lookup_failed`).
 *
 * @module
 */
import type { ResolvedAliasCache, ResolvedModel, ResolvedToken } from "../config/types.ts";
import { GatewayError } from "../errors.ts";
import { applyContentRules } from "../policy/content_rules.ts";
import { PolicyDenied } from "../policy/denied.ts";
import { checkInput, outcomeRules, type RequestGuardrails } from "../guardrails/request.ts";
import type { ChatRequest } from "../openai/types.ts";
import { noteOutcome, usageRecordOf } from "../http/accounting.ts";
import type { ClientContext, RequestContext } from "../http/context.ts";
import { routeRequest } from "../http/route_request.ts";
import { decodeVector } from "../cache/vector.ts";
import { type KeyScope, semanticParts } from "../cache/key.ts";
import type { Admits, ResponseCache } from "../cache/response_cache.ts";
import type { CacheControl } from "../cache/control.ts";
import { unitVector } from "../cache/semantic_index.ts";
import type { CachedAnswer } from "../cache/types.ts";

/** What the semantic lookup found: a hit, or how to index this request's answer once it is stored. */
export type SemanticOutcome =
  | { kind: "hit"; answer: CachedAnswer; similarity: number }
  | { kind: "miss"; remember: (key: string) => void }
  | { kind: "none" };

/** The threshold of this request: the alias's, raised (never lowered) by `x-cache-semantic-threshold`. */
export function semanticThreshold(configured: number, header: string | null): number {
  if (header === null || !/^\s*(0(\.\d+)?|1(\.0+)?)\s*$/.test(header)) return configured;
  return Math.max(configured, Number(header));
}

/** The code a lookup past its deadline is recorded under (its usage record, the log). */
const TIMED_OUT = "semantic_lookup_timeout";

/**
 * What the embedding alias's own admission makes of the text, as `/v1/embeddings` would: its content rules (a
 * deny throws, a redaction changes the text) and its input guardrails (the token's ran on the client's request,
 * where the text came from). The outcome and rules go on the lookup's record. The alias's limits and budgets are
 * not taken: the lookup has no token and counts against no one's (docs/caching.md#semantic-cache).
 */
async function admittedText(
  own: RequestContext,
  identity: ResolvedToken,
  model: ResolvedModel,
  text: string,
  signal: AbortSignal,
): Promise<string> {
  const body = { model: model.alias, input: text };
  const rules: string[] = [];
  const decision = applyContentRules("embeddings", body, model.contentRules);
  if (decision.outcome === "modify") rules.push(...decision.rules);
  if (model.guardrails) {
    let state: RequestGuardrails | undefined;
    try {
      // Kept on the lookup's context, so its record lists what each guardrail did, as a request's does.
      await checkInput("embeddings", model, { ...identity, guardrails: undefined }, body, signal, (s) => {
        own.guardrails = state = s;
      });
    } finally {
      const outcome = outcomeRules(state?.outcomes ?? []);
      rules.push(...outcome.rules);
    }
  }
  if (rules.length > 0) {
    own.record.outcome = "modify";
    own.record.rule = rules.join(",");
  }
  return body.input;
}

/**
 * Embeds `text` through `model` as the gateway's own request, recorded under `<request id>.semantic`, within
 * `timeoutMs` (checks included): past it the call is aborted and there is no vector, so a slow embedding
 * upstream (or its retries and fallbacks, which a target's own timeouts would allow minutes) never holds the
 * client's request, nor the identical requests waiting on its fill, for longer.
 */
async function embedOwn(
  ctx: ClientContext,
  model: ResolvedModel,
  text: string,
  timeoutMs: number,
): Promise<number[] | undefined> {
  const arrived = new Date().toISOString();
  const requestId = `${ctx.requestId}.semantic`;
  const own: RequestContext = {
    ...ctx,
    requestId,
    startedAt: performance.now(),
    record: { request_id: requestId, method: "POST", path: "/v1/embeddings", endpoint: "embeddings" },
    identity: undefined,
    // The lookup is not the client's request: the in-flight registry knows that one by the client's alias.
    described: undefined,
    admission: undefined,
    answeredBy: undefined,
    streamDone: undefined,
    guardrails: undefined,
    // The lookup is the gateway's own call, not the client's: in the request's trace it would take the
    // request's GenAI span (one per request: `embeddings <alias>` in place of `chat <alias>`) and its attempts.
    trace: undefined,
    attemptTrace: undefined,
  };
  own.record.alias = model.alias;
  own.record.stream = false;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = AbortSignal.any([ctx.signal, deadline]);
  let vector: number[] | undefined;
  try {
    const input = await admittedText(own, ctx.identity, model, text, signal);
    const routed = await routeRequest(own, model, signal, (target, provider) =>
      provider.embed(
        { model: model.alias, input },
        { target, signal, requestId },
      ));
    const item = routed.value.data[0];
    vector = item === undefined ? undefined : decodeVector(item.embedding);
    own.record.status = 200;
    noteOutcome(own, {
      usage: { prompt: routed.value.usage.prompt_tokens, completion: 0, estimated: false },
    });
  } catch (err) {
    const late = deadline.aborted && !ctx.signal.aborted;
    own.record.status = late ? 504 : err instanceof GatewayError ? err.status : 500;
    own.record.error_code = late
      ? TIMED_OUT
      : err instanceof GatewayError
      ? err.code ?? err.type
      : "internal_error";
    if (err instanceof PolicyDenied && !late) {
      own.record.outcome = "deny";
      own.record.rule = [own.record.rule, err.rule].filter(Boolean).join(",");
    }
    // No semantic lookup, so an exact miss: the client's request goes on; the operator learns why here.
    if (!ctx.signal.aborted) {
      ctx.logger.warn("semantic_lookup_failed", {
        request_id: requestId,
        alias: model.alias,
        status: own.record.status,
        error_code: own.record.error_code,
        rule: own.record.rule ?? null,
      });
    }
  }
  own.record.latency_ms = Math.round((performance.now() - own.startedAt) * 100) / 100;
  const record = usageRecordOf(own, arrived);
  ctx.services.usage?.write(record);
  ctx.services.metrics.recordRequest(record);
  return vector;
}

/** The semantic lookup of a request whose exact lookup missed (see the module doc). */
export async function semanticLookup(
  ctx: ClientContext,
  settings: ResolvedAliasCache,
  cache: ResponseCache,
  scope: KeyScope,
  chat: ChatRequest,
  control: CacheControl,
  admits: Admits,
): Promise<SemanticOutcome> {
  const semantic = settings.semantic;
  if (semantic === null) return { kind: "none" };
  const parts = semanticParts(scope, chat);
  const model = ctx.state.config.models.get(semantic.embeddings);
  if (parts === undefined || model === undefined || model.type !== "embedding") return { kind: "none" };
  const embedded = await embedOwn(ctx, model, parts.text, semantic.timeoutMs);
  const vector = embedded === undefined ? undefined : unitVector(embedded);
  if (vector === undefined) return { kind: "none" };
  const index = cache.semanticIndex(scope.alias, semantic.maxEntries);
  const threshold = semanticThreshold(semantic.threshold, ctx.headers.get("x-cache-semantic-threshold"));
  const match = index.find(parts.context, vector, threshold);
  if (match !== undefined) {
    // Held to the alias's TTL and settings now, as an exact hit is (a reload may have changed them).
    const answer = await cache.read(match.key, control, settings.ttlMs, admits);
    if (answer !== undefined) return { kind: "hit", answer, similarity: match.similarity };
    // Gone, or no longer served under the alias's settings, or older than this request accepts (then kept for
    // others: only its own max-age refused it).
    if (control.maxAgeMs === null) index.forget(match.key);
  }
  return { kind: "miss", remember: (key) => index.add(parts.context, vector, key, settings.ttlMs) };
}
