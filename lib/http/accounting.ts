/**
 * Policy admission and usage accounting for one request: admit before the upstream call, charge the real
 * usage when it is known, and turn the request into its usage record when it is over.
 *
 * @module
 */
import type { Endpoint } from "../config/schema.ts";
import { isPriced, moneyBudgetRules } from "../config/money_budgets.ts";
import type { ResolvedModel, ResolvedTarget, ResolvedToken, RoutedTarget } from "../config/types.ts";
import { printable } from "../errors.ts";
import { PolicyDenied } from "../policy/denied.ts";
import type { NativeText } from "../policy/content_rules.ts";
import type { TextSlot } from "../policy/text_slots.ts";
import type { ChatRequest, JsonObject } from "../openai/types.ts";
import { promptTexts, roughTokenEstimate } from "../usage/estimate.ts";
import type { UsageRecord } from "../usage/record.ts";
import { addCosts, type CostBreakdown, costOfUsage, type TokenClasses } from "../pricing/cost.ts";
import type { ClientContext, RequestContext } from "./context.ts";
import { checkInput, hasGuardrails, outcomeRules, type RequestGuardrails } from "../guardrails/request.ts";

/**
 * Asks the policy whether this request may go ahead (throws the denial otherwise) and keeps the admission
 * on the context so that it is settled and its `x-ratelimit-*` headers are sent, whatever happens next.
 * `carriedTexts`: what the request carries to its targets beside `body` (`PolicyRequest.carriedTexts`), judged
 * and rewritten in place with the body's texts, by the content rules and the input guardrails alike.
 * `nativeTexts`: the texts of the client's body a native target reads ({@linkcode readsNativeTexts}), judged by
 * both too; the native body is rewritten as they left them when it is built (`redactedBody`, with the
 * guardrails' `nativeRewrites`).
 */
export async function admit(
  ctx: ClientContext,
  endpoint: Endpoint,
  estimatedTokens: number | ((body: JsonObject | undefined) => number),
  model?: ResolvedModel,
  body?: JsonObject,
  nativeTexts?: readonly NativeText[],
  carriedTexts?: readonly TextSlot[],
): Promise<void> {
  if (model !== undefined) refuseUncountedMoney(ctx, model);
  const admission = await ctx.services.policy.admit({
    identity: ctx.identity,
    endpoint,
    model,
    body,
    nativeTexts,
    carriedTexts,
    estimatedTokens,
    headers: ctx.headers,
  });
  ctx.admission = admission;
  ctx.record.outcome = admission.outcome;
  ctx.record.rule = admission.rule;
  if (model?.guardrails || ctx.identity.guardrails) {
    await guardInput(ctx, endpoint, model, body, carriedTexts, nativeTexts);
  }
}

/**
 * Whether the texts a native target of `model` reads in a request are worth reading, for {@linkcode admit}'s
 * `nativeTexts` (each client API's `native_texts.ts`): something judges them (the alias's content rules, an input
 * guardrail of the alias or the token) or may make the request go over the chat form, which then names those it
 * holds nowhere (an output guardrail: `RequestGuardrails.chatLoses`), and a target reads the client's body
 * natively (`isNative`). Otherwise nothing walks the body: a feature that is not configured costs nothing per
 * request.
 */
export function readsNativeTexts<T extends ResolvedTarget>(
  model: Pick<ResolvedModel, "contentRules" | "guardrails"> & { readonly targets: readonly T[] },
  token: Pick<ResolvedToken, "guardrails">,
  isNative: (target: T) => boolean,
): boolean {
  return (model.contentRules.length > 0 || hasGuardrails(model, token)) && model.targets.some(isNative);
}

/**
 * A money budget counts nothing on an alias without a price, so a request it would count there is refused:
 * the last guard under the checks of the file, of the admin API and of a reload (docs/pricing.md), for a budget
 * none of them saw (a token stored by another replica after this one reloaded, a start on an edited config).
 */
function refuseUncountedMoney(ctx: ClientContext, model: ResolvedModel): void {
  if (isPriced(model)) return;
  const rules = moneyBudgetRules(ctx.identity);
  if (rules.length === 0) return;
  throw new PolicyDenied(
    403,
    `The model \`${
      printable(model.alias)
    }\` has no price, and this token's requests are counted by a money ` +
      `budget (${
        rules.join(", ")
      }) that could not count them; the gateway's operator must price it or change ` +
      "the budget.",
    rules[0],
    { type: "permission_error", code: "budget_unpriced" },
  );
}

/**
 * The input guardrails, after the counted limits admitted the request (a denial settles it with nothing used).
 * Their rules are noted even when one stopped the request: a denial's rule is set again by the error boundary
 * (with `deny`), but a `fail_closed` failure is a 503, no denial, and its `guardrail:<name>` would be lost. That
 * failure keeps the outcome it had, as the output phase's does (`noteOutputGuardrails`); only a request that
 * went on with masked or replaced text is `modify`.
 */
async function guardInput(
  ctx: ClientContext,
  endpoint: Endpoint,
  model: ResolvedModel | undefined,
  body: JsonObject | undefined,
  carried: readonly TextSlot[] | undefined,
  native: readonly NativeText[] | undefined,
): Promise<void> {
  let state: RequestGuardrails | undefined;
  let passed = false;
  try {
    await checkInput(
      endpoint,
      model,
      ctx.identity,
      body,
      ctx.signal,
      (s) => ctx.guardrails = state = s,
      carried,
      native,
    );
    passed = true;
  } finally {
    const { modified, rules } = outcomeRules(state?.outcomes ?? []);
    if (rules.length > 0) {
      if (modified && passed) ctx.record.outcome = "modify";
      ctx.record.rule = [ctx.record.rule, ...rules].filter(Boolean).join(",");
    }
  }
}

/**
 * Admits a request that runs on the chat form (chat completions, Responses, Messages, Gemini), its tokens
 * estimated by {@linkcode chatTokenEstimate} on the final body (the policy's max_tokens ceiling may have lowered
 * or set what the client asked for). `nativeTexts`: the client's body's texts as the alias's native targets
 * would read them (`PolicyRequest.nativeTexts`).
 */
export function admitChat(
  ctx: ClientContext,
  endpoint: Endpoint,
  model: ResolvedModel,
  chat: ChatRequest,
  nativeTexts?: readonly NativeText[],
): Promise<void> {
  const prompt = roughTokenEstimate(promptTexts(chat));
  return admit(ctx, endpoint, (final) => chatTokenEstimate(prompt, final), model, chat, nativeTexts);
}

/**
 * A chat-form request's token estimate, which budgets reserve, TPM charges up front and money budgets price:
 * its prompt plus the most it may generate. The output limit is per choice, and chat's `n` asks for that many
 * choices (the other APIs ask for one: Gemini's `candidateCount` above 1 is refused, Responses and Messages
 * have none), so the output part is the limit times `n`; counting one choice would let concurrent requests
 * with `n` overshoot a budget n-fold. Without an output limit only the prompt is counted
 * (docs/spend_control.md: a token's `max_tokens` ceiling sets one on every request).
 */
export function chatTokenEstimate(prompt: number, body: JsonObject | undefined): number {
  const requested = body?.max_completion_tokens ?? body?.max_tokens;
  const perChoice = typeof requested === "number" && requested > 0 ? requested : 0;
  const n = body?.n;
  const choices = typeof n === "number" && Number.isInteger(n) && n > 1 ? n : 1;
  return prompt + perChoice * choices;
}

/**
 * Cost of a request on `target` in the price table's currency (all 0 without a price), class by class when the
 * usage says how its tokens split (cached reads, cache writes, reasoning; lib/pricing/cost.ts).
 */
export function costOf(target: RoutedTarget | undefined, usage: TokenClasses): CostBreakdown {
  return costOfUsage(target?.price, usage);
}

/**
 * A request's token counts, whether the gateway estimated them (the upstream reported none), and the classes
 * the upstream reported within them (cached input, cache writes, reasoning), which are priced apart.
 */
export interface TokenUsage extends TokenClasses {
  prompt: number;
  completion: number;
  estimated: boolean;
}

/**
 * Tokens an attempt that failed had spent all the same, and the target it ran on (whose price they cost): the
 * calls of a split embeddings request that answered before another of its calls failed and routing retried.
 */
export interface SpentAttempt {
  target: RoutedTarget;
  usage: TokenUsage;
}

/** What a handler learnt about its request: the facts of the access and usage records only it knows. */
export interface Outcome {
  /** The answering attempt's tokens; on a failed request, none (zero) when only `spentBefore` spent any. */
  usage?: TokenUsage;
  /**
   * What failed attempts before the end had spent, each priced on its own target: added to `usage` in the
   * request's one record (its tokens, cost and budgets), whether the request then succeeded or failed.
   */
  spentBefore?: readonly SpentAttempt[];
  /** Milliseconds to the first streamed chunk. */
  ttftMs?: number;
  /** Why a stream that had started ended badly (its status was already sent as 200). */
  errorCode?: string;
  /** When a stream's body ended (`performance.now()`), which can be well before its usage was counted. */
  endedAt?: number;
}

/**
 * A client route's answer: the response, and the outcome — known at once for a JSON answer, when the body
 * has ended (or failed, or was cancelled) for a stream.
 */
export interface Answer {
  response: Response;
  outcome: Outcome | Promise<Outcome>;
}

/** Whether the request was answered from the response cache (a hit spends nothing: not tokens, nor budgets). */
export function servedFromCache(record: { cache?: string }): boolean {
  return record.cache === "hit" || record.cache === "hit_semantic";
}

/** What failed attempts of a request spent that no handler's outcome carries ({@linkcode noteSpentAttempt}). */
const spentAttempts = new WeakMap<RequestContext, SpentAttempt[]>();

/**
 * Notes what a failed attempt of `ctx` spent although routing went on from it (retried, fell back) or the request
 * failed with it: a stream that failed before it committed, after its upstream had reported the prompt it counted
 * (Anthropic's `message_start`), and billed. In the record at once, and added to whatever outcome the request
 * ends with, as `Outcome.spentBefore` is.
 */
export function noteSpentAttempt(ctx: RequestContext, spent: SpentAttempt): void {
  const list = spentAttempts.get(ctx);
  if (list === undefined) spentAttempts.set(ctx, [spent]);
  else list.push(spent);
  noteOutcome(ctx, { usage: { prompt: 0, completion: 0, estimated: false } });
}

/** Writes a handler's outcome into the access record: the one writer of these facts, usage cost included. */
export function noteOutcome(ctx: RequestContext, outcome: Outcome): void {
  const record = ctx.record;
  if ("ttftMs" in outcome) record.ttft_ms = outcome.ttftMs;
  if (outcome.endedAt !== undefined) ctx.endedAt = outcome.endedAt;
  if (outcome.errorCode !== undefined) record.error_code = outcome.errorCode;
  const usage = outcome.usage;
  if (usage === undefined) return;
  const failed = spentAttempts.get(ctx);
  const before = failed === undefined ? outcome.spentBefore ?? [] : [...outcome.spentBefore ?? [], ...failed];
  record.tokens_estimated = usage.estimated || before.some((b) => b.usage.estimated);
  const cost = before.reduce(
    (sum, b) => addCosts(sum, costOf(b.target, b.usage)),
    costOf(ctx.answeredBy, usage),
  );
  if (servedFromCache(record)) {
    // A hit spent nothing: its tokens and cost are what it saved, so limits, budgets and spend stay unchanged.
    record.saved_tokens = usage.prompt + usage.completion;
    record.saved_cost = cost.total;
    record.prompt_tokens = record.completion_tokens = record.cost = 0;
    return;
  }
  record.prompt_tokens = before.reduce((n, b) => n + b.usage.prompt, usage.prompt);
  record.completion_tokens = before.reduce((n, b) => n + b.usage.completion, usage.completion);
  record.cost = cost.total;
  ctx.cost = cost;
}

/**
 * Hands a client route's answer on: its outcome goes into the access record now, or, for a stream, when the
 * body ends (`ctx.streamDone`, which the request's ending waits for before reporting).
 */
export function deliver(ctx: RequestContext, answer: Answer): Response {
  const outcome = answer.outcome;
  if (outcome instanceof Promise) ctx.streamDone = outcome.then((o) => noteOutcome(ctx, o));
  else noteOutcome(ctx, outcome);
  return answer.response;
}

/**
 * The answer's guardrail outcomes in the access record: their rules, `deny` when one withheld the answer (a
 * stream already answered 200), `modify` when one masked it. Input outcomes were noted at admission.
 */
export function noteOutputGuardrails(ctx: RequestContext): void {
  const state = ctx.guardrails;
  if (!state) return;
  const output = state.outcomes.filter((o) => o.phase === "output");
  const { modified, rules } = outcomeRules(output);
  if (rules.length === 0) return;
  const r = ctx.record;
  const known = new Set((r.rule ?? "").split(",").filter(Boolean));
  r.rule = [...known, ...rules.filter((rule) => !known.has(rule))].join(",");
  if (output.some((o) => o.action === "deny")) r.outcome = "deny";
  else if (modified && r.outcome !== "deny") r.outcome = "modify";
}

/** The usage record of a finished request. */
export function usageRecordOf(ctx: RequestContext, time: string): UsageRecord {
  const r = ctx.record;
  return {
    time,
    request_id: r.request_id,
    token: r.token ?? null,
    // From the identity, not the access-log line: the log names the token by its name, as people read it.
    token_id: ctx.identity?.id ?? null,
    // The token's team when the request was made: a team's spend is what its members spent while members.
    team: ctx.identity?.team?.name ?? null,
    // And its identity: a deleted team's name can be given to another team, which must not inherit its spend.
    team_id: ctx.identity?.team?.id ?? null,
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
    cost_input: ctx.cost?.input ?? 0,
    cost_cached: ctx.cost?.cached ?? 0,
    cost_cache_write: ctx.cost?.cacheWrite ?? 0,
    cost_output: ctx.cost?.output ?? 0,
    cost_reasoning: ctx.cost?.reasoning ?? 0,
    cost_web_search: ctx.cost?.webSearch ?? 0,
    latency_ms: r.latency_ms ?? 0,
    ttft_ms: r.ttft_ms ?? null,
    attempts: r.attempts ?? 0,
    error_code: r.error_code ?? null,
    dropped: r.dropped ?? null,
    cache: r.cache ?? null,
    saved_tokens: r.saved_tokens ?? 0,
    saved_cost: r.saved_cost ?? 0,
    trace_id: r.trace_id ?? null,
    guardrails: ctx.guardrails ? ctx.guardrails.outcomes.filter((o) => o.action !== "pass") : null,
  };
}
