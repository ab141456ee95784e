/**
 * The tolerance rule every client API follows, so that clients (coding agents above all) that send what their
 * vendor accepted last week keep working through any alias:
 *
 * - a field the gateway interprets is validated strictly (a bad one is the API's own 400);
 * - on a native target (one that speaks the client API itself) every other field passes unchanged;
 * - on a translated target a field is translated, or **dropped** when it cannot be served there (listed in the
 *   `x-gateway-dropped` response header and the usage record), or **refused** with the API's 400 only when
 *   dropping it would silently change what the client relies on.
 *
 * What a native target serves better than a translated one (a built-in tool, a server tool's result in the
 * history) sends the request to the alias's native targets first when it has some, its translated ones
 * following as fallbacks; on a translated target it is dropped like the rest. An alias with `strict: true`
 * refuses every drop instead, so it sends such a request to its native targets only.
 *
 * A client API fills a {@linkcode Tolerance} while it translates a request; {@linkcode servingTargets} picks the
 * targets from it, and {@linkcode noteDropped} tells the client and the record what a translated target did
 * not get.
 *
 * The chat form a translated target gets is judged by that target's own parameter rules too (`chatParamsOn`,
 * the rules its adapter applies): a `reasoning_effort` Claude has no budget for, a `parallel_tool_calls: false`
 * Gemini has no switch for. Every client API that routes a chat form asks them before routing
 * ({@linkcode paramServingTargets}), so a target that would refuse is left out for the alias's others instead of
 * ending the request with its 400 inside routing (which treats a 400 as final), and what the answering target's
 * provider drops (`unsupported_params: drop`) is named like the rest ({@linkcode answeredTolerance}). A native
 * target the request's guardrails send the chat form is judged by the same rules once they decided so
 * ({@linkcode chatFormServingTargets}).
 *
 * @module
 */
import type { ResolvedModel, ResolvedTarget, RoutedTarget } from "../config/types.ts";
import { type ClientTerms, GatewayError, inClientTerms, invalidRequest } from "../errors.ts";
import type { ChatRequest, EmbeddingRequest } from "../openai/types.ts";
import { chatParamsOn, embeddingParamsOn } from "../providers/capabilities.ts";
import type { Answer } from "./accounting.ts";
import type { RequestContext } from "./context.ts";

/** What a request's translation found that a translated target cannot take as sent. */
export interface Tolerance {
  /** The first thing whose loss would silently change the answer: refused on translated targets. */
  refusal: GatewayError | null;
  /** Field paths only a native target serves: native targets are preferred; without one, dropped. */
  native: string[];
  /** Field paths that cannot matter on a translated target (metadata, hints, unknown fields): dropped there. */
  dropped: string[];
}

/** An empty tolerance: nothing found yet. */
export function newTolerance(): Tolerance {
  return { refusal: null, native: [], dropped: [] };
}

/** At most this many paths are listed; a request naming more is summed up as {@linkcode MORE}. */
const MAX_PATHS = 32;
/** The longest path shown whole. */
const MAX_PATH_LENGTH = 96;
/**
 * What stands for the rest of a path or of the list. ASCII: a header value takes bytes up to 0xFF only, and the
 * header is set after routing, when a throw would leave the upstream answer unread and its lease held.
 */
const MORE = "...";

/** A path as the header and the record show it: client text, so only plain characters, and bounded. */
function shown(path: string): string {
  const plain = path.replace(/[^A-Za-z0-9_.\[\]:=-]/g, "?");
  return plain.length <= MAX_PATH_LENGTH ? plain : `${plain.slice(0, MAX_PATH_LENGTH - MORE.length)}${MORE}`;
}

/** Every path a translated target does not get, in the order found. */
export function droppedPaths(tolerance: Tolerance): string[] {
  const all = [...tolerance.native, ...tolerance.dropped];
  const out = all.slice(0, MAX_PATHS).map(shown);
  if (all.length > MAX_PATHS) out.push(MORE);
  return out;
}

/**
 * The alias's targets that may serve the request: only its native ones when the request holds a refusal or
 * would lose a field on a `strict` alias; when it uses what native targets serve better, its native ones first
 * and the others after them, as fallbacks that go without it (marked `fallbackOnly`, which routing tries after
 * every other whatever the strategy, so a healthy native target always answers); all of them otherwise. When
 * the alias has no native target, the refusal (or, for a strict alias, `strictError` of the first dropped path)
 * is thrown.
 */
export function servingTargets(
  model: ResolvedModel,
  tolerance: Tolerance,
  speaks: (target: ResolvedTarget) => boolean,
  strictError: (path: string) => GatewayError,
): ResolvedModel {
  const strictPath = model.strict ? (tolerance.native[0] ?? tolerance.dropped[0]) : undefined;
  const nativeOnly = tolerance.refusal !== null || strictPath !== undefined;
  if (!nativeOnly && tolerance.native.length === 0) return model;
  const targets = model.targets.filter(speaks);
  if (targets.length === model.targets.length) return model;
  if (targets.length === 0) {
    if (tolerance.refusal !== null) throw tolerance.refusal;
    if (strictPath !== undefined) throw strictError(strictPath);
    return model;
  }
  if (nativeOnly) return { ...model, targets };
  // Dropping what native targets serve better is allowed (it is what an alias without one does): the others
  // still answer when every native target fails, and name what they went without (`noteDropped`).
  const fallbacks = model.targets.filter((t) => !speaks(t)).map((t) => ({ ...t, fallbackOnly: true }));
  return { ...model, targets: [...targets, ...fallbacks] };
}

/** No paths: what a request without guardrails' withheld params reads, allocated once. */
const NONE: readonly string[] = [];

/**
 * Tells the client (`x-gateway-dropped`, comma-separated field paths) and the usage record what the translated
 * target that answered did not get. Nothing for a native target, which got the body as sent. `headerNames` are
 * the values of a request header the target went without (`openai-beta:<name>`): named first, so a long list of
 * field paths cut to the header's bound never hides them, and outside the `Tolerance`, so no alias refuses one.
 * What the request's output guardrails kept from every target (`RequestGuardrails.withheld`: log probabilities,
 * which no check reads) is named last, here for every client API, by the chat form's names (chat completions'
 * own: no other API asks for them in that form). Outside the `Tolerance` too: the alias's guardrails keep them,
 * not a target, so a `strict` alias does not refuse them.
 */
export function noteDropped(
  ctx: RequestContext,
  headers: Headers,
  tolerance: Tolerance,
  headerNames: readonly string[] = [],
): void {
  const withheld = ctx.guardrails?.withheld ?? NONE;
  if (
    headerNames.length === 0 && tolerance.native.length === 0 && tolerance.dropped.length === 0 &&
    withheld.length === 0
  ) return;
  const paths = droppedPaths({
    ...tolerance,
    native: [...headerNames, ...tolerance.native],
    dropped: [...tolerance.dropped, ...withheld],
  });
  if (paths.length === 0) return;
  headers.set("x-gateway-dropped", paths.join(","));
  ctx.record.dropped = paths.join(",");
}

/** A request's chat form as a client API routes it, for the parameter rules of the targets that get it. */
export interface ChatForm {
  /** What a translated target gets. */
  chat: ChatRequest;
  /**
   * Whether `target` speaks the client API, so it gets the client's own body instead and its rules do not judge
   * the chat form; none on chat. Unless the request's guardrails send it the chat form after all
   * (`RequestGuardrails.chatOnly`, known once admitted): {@linkcode chatFormServingTargets} judges it then.
   */
  native?: (target: ResolvedTarget) => boolean;
  /** The client API's 400 of a `strict` alias whose target would go without the client's field `path`. */
  strictError: (path: string) => GatewayError;
  /** The client API's names for the chat form's params (errors and dropped params); as they are on chat. */
  clientTerms?: ClientTerms;
  /**
   * The chat form's params the client API withholds from `target`, which cannot take them, rather than judging
   * the target by them: what a client sends in every request as a default of its own (the Gemini API's `top_k`,
   * from Gemini CLI's `topK`) on a target that takes none. The target gets the chat form without them (the
   * runner's `RoutedRequest.withheld` is the same function), and they are named as dropped, in the client's
   * terms, when it answers; a `strict` alias refuses them as every drop. Absent: nothing is withheld.
   */
  withheld?: (target: ResolvedTarget) => readonly string[];
  /**
   * What a native target served over the chat form (the request's guardrails made it go so:
   * `RequestGuardrails.chatOnly`) goes without beside the tolerance's fields: the client's paths that form holds
   * nowhere (`RequestGuardrails.chatLoses`, and what the client API knows it leaves out). Absent: nothing more.
   */
  chatLoses?: () => readonly string[];
}

/**
 * `chat` without `params` (those it has): `chat` itself when it has none of them, which allocates nothing.
 * What a target gets of a chat form its client API withholds params from ({@linkcode ChatForm.withheld}).
 */
export function chatWithout(chat: ChatRequest, params: readonly string[]): ChatRequest {
  if (params.every((param) => chat[param] === undefined)) return chat;
  const out = { ...chat };
  for (const param of params) delete out[param];
  return out;
}

/** The params of `form`'s chat form withheld from `target`: those it has of {@linkcode ChatForm.withheld}'s. */
function withheldOn(form: ChatForm, target: ResolvedTarget): readonly string[] {
  const params = form.withheld?.(target) ?? [];
  return params.length === 0 ? params : params.filter((param) => form.chat[param] != null);
}

/**
 * The client's name for the chat form's `param`: the one its API's terms give an error naming it (the same
 * renaming a target's 400 gets, so a dropped param and a refused one are named alike).
 */
function clientPath(param: string, terms: ClientTerms | undefined): string {
  if (terms === undefined) return param;
  return terms(invalidRequest("", param) as GatewayError & { readonly param: string })?.param ?? param;
}

/** Why `target` cannot serve `form` on `model` (not yet in the client's terms), or null when it can. */
function cannotServe(model: ResolvedModel, target: ResolvedTarget, form: ChatForm): GatewayError | null {
  if (form.native?.(target) === true) return null;
  const withheld = withheldOn(form, target);
  const verdict = chatParamsOn(target, chatWithout(form.chat, withheld));
  if (verdict !== null && "refusal" in verdict) return verdict.refusal;
  const dropped = withheld[0] ?? verdict?.dropped[0];
  return model.strict && dropped !== undefined
    ? form.strictError(clientPath(dropped, form.clientTerms))
    : null;
}

/**
 * `model` with only the targets whose parameter rules serve `form`'s chat form (native targets always do):
 * a target that would refuse a parameter is left out, and on a `strict` alias one that would drop one too.
 * `model` itself when all serve (nothing is allocated then); the first target's refusal, in the client's
 * terms, when none does, so no upstream is called for a request no target can take.
 */
export function paramServingTargets(model: ResolvedModel, form: ChatForm): ResolvedModel {
  const kept = targetsThatCan(model, form, cannotServe);
  if (!(kept instanceof GatewayError)) return kept;
  throw form.clientTerms === undefined ? kept : inClientTerms(kept, form.clientTerms);
}

/**
 * `model` as it is routed once the request is admitted. When the request's guardrails send every target the
 * chat form (`RequestGuardrails.chatOnly`: an output check or a `reverse` mask reads the answer, or an input
 * guardrail changed a text the client's body cannot carry; decided at admission, after
 * {@linkcode paramServingTargets} ran), the targets that speak the client API get that form too, so they are
 * judged by its parameter rules as a translated target is: one that would refuse it is left out for the alias's
 * others, on a `strict` alias one that would drop a param too, and when none is left the first one's refusal is
 * thrown in the client's terms, before any upstream is called. `model` itself for every other request, which
 * pays one property check. One rule for every client API that routes a chat form beside a native body (the
 * answer runner's `routeAnswer`, and Responses compaction, which routes its own).
 */
export function chatFormServingTargets(
  ctx: RequestContext,
  model: ResolvedModel,
  form: ChatForm | undefined,
): ResolvedModel {
  if (ctx.guardrails?.chatOnly !== true || form?.native === undefined) return model;
  return paramServingTargets(model, { ...form, native: undefined });
}

/**
 * `model` with only the targets `cannot` finds no reason against (`model` itself when all pass, so nothing is
 * allocated on the common path), or the first target's reason when none passes. `request` is handed to
 * `cannot` so that callers pass module functions, not a closure made per request.
 */
function targetsThatCan<R>(
  model: ResolvedModel,
  request: R,
  cannot: (model: ResolvedModel, target: ResolvedTarget, request: R) => GatewayError | null,
): ResolvedModel | GatewayError {
  let kept: RoutedTarget[] | null = null;
  let refusal: GatewayError | null = null;
  const targets = model.targets;
  for (let i = 0; i < targets.length; i++) {
    const reason = cannot(model, targets[i], request);
    if (reason === null) {
      kept?.push(targets[i]);
      continue;
    }
    refusal ??= reason;
    kept ??= targets.slice(0, i);
  }
  if (kept === null) return model;
  if (kept.length === 0) return refusal!;
  return { ...model, targets: kept };
}

/**
 * What `target`, the one that answered the chat form, went without: `tolerance` (what the request's translation
 * found), the chat form's params its client API withheld from it ({@linkcode ChatForm.withheld}) and those its
 * provider drops, named as the client sent them; `tolerance` itself when it got every param. A native target
 * answers the chat form only when the request's guardrails made it go so: it went without what only it serves
 * ({@linkcode nativeOverChat}), and, as a translated target, what its client API withheld from that form and
 * what its provider dropped of it ({@linkcode chatFormServingTargets} judged it by the same rules). `mode` is the
 * provider's `unsupported_params` unless given: a token count passes `drop`, the mode its vendor body is built in
 * whatever the provider's.
 */
export function answeredTolerance(
  target: ResolvedTarget,
  tolerance: Tolerance,
  form: ChatForm,
  mode?: "error" | "drop",
): Tolerance {
  const went = form.native?.(target) === true ? nativeOverChat(tolerance, form) : tolerance;
  const withheld = withheldOn(form, target);
  const verdict = chatParamsOn(target, chatWithout(form.chat, withheld), mode);
  const params = verdict !== null && "dropped" in verdict ? [...withheld, ...verdict.dropped] : withheld;
  if (params.length === 0) return went;
  const dropped = params.map((param) => clientPath(param, form.clientTerms));
  return { ...went, dropped: [...went.dropped, ...dropped] };
}

/**
 * What a native target went without of the chat form it was sent instead of the client's body: the tolerance's
 * fields, what the client must have a native target read (the refusal's field, which routing kept the request to
 * native targets for) and {@linkcode ChatForm.chatLoses}, each once, named as what only a native target serves.
 */
function nativeOverChat(tolerance: Tolerance, form: ChatForm): Tolerance {
  const refused = tolerance.refusal?.param;
  const lost = [...(refused == null ? [] : [refused]), ...(form.chatLoses?.() ?? [])];
  const known = new Set([...tolerance.native, ...tolerance.dropped]);
  const added = [...new Set(lost)].filter((path) => !known.has(path));
  return added.length === 0 ? tolerance : { ...tolerance, native: [...tolerance.native, ...added] };
}

/**
 * What the gateway's own count of a chat form (a token count's estimate) left out: what a translated target would
 * go without, and what only a native target serves (the refusal's field: a file by the vendor's id, Gemini's
 * `cachedContent`), when the alias's native targets, the only ones such a request goes to, could not count it.
 */
export function estimatedTolerance(tolerance: Tolerance): Tolerance {
  const refused = tolerance.refusal?.param;
  if (refused == null) return tolerance;
  return { ...tolerance, native: [refused, ...tolerance.native] };
}

/**
 * Names what a token count left out (`x-gateway-dropped`, the record's `dropped`), as a generation's answer
 * would: nothing when a target that speaks the client's API (`native`) counted the client's own body; when
 * another target counted exactly, or that one counted the chat form (the request's input guardrails changed
 * a text the client's body cannot carry: `RequestGuardrails.unplaced`, where `form.chatLoses` names what that
 * form holds nowhere), the chat form's drops and what that target's count body left out (built in drop mode:
 * a count never refuses); when the gateway estimated, the request's own drops
 * ({@linkcode estimatedTolerance}). `headerNames` gives what the counting target (null: the gateway) went
 * without of a request header, named first ({@linkcode noteDropped}). One place for the Responses and Gemini
 * counts.
 */
export async function noteCountDropped(
  ctx: RequestContext,
  answer: Answer,
  tolerance: Tolerance,
  form: ChatForm,
  native: (target: ResolvedTarget) => boolean,
  headerNames: (countedBy: ResolvedTarget | null) => readonly string[] = () => [],
): Promise<void> {
  const answeredBy = ctx.answeredBy;
  const exact = answeredBy !== undefined && !(await answer.outcome).usage?.estimated;
  const headers = answer.response.headers;
  if (exact && native(answeredBy) && ctx.guardrails?.unplaced !== true) {
    return noteDropped(ctx, headers, newTolerance(), headerNames(answeredBy));
  }
  noteDropped(
    ctx,
    headers,
    exact ? answeredTolerance(answeredBy, tolerance, form, "drop") : estimatedTolerance(tolerance),
    headerNames(exact ? answeredBy : null),
  );
}

/** The 400 of a `strict` alias whose target would go without `param` (chat completions' and embeddings'). */
export function strictAliasRefusal(param: string): GatewayError {
  return invalidRequest(
    `The parameter '${param}' is not supported by this alias's target, and the alias is strict; send the ` +
      "request without it.",
    param,
    "unsupported_parameter",
  );
}

/** Why `target` cannot embed `request` on `model`, or null when it can (dropping, unless `model` is strict). */
function cannotEmbed(
  model: ResolvedModel,
  target: ResolvedTarget,
  request: EmbeddingRequest,
): GatewayError | null {
  const verdict = embeddingParamsOn(target, request);
  if (verdict === null) return null;
  if ("refusal" in verdict) return verdict.refusal;
  return model.strict ? strictAliasRefusal(verdict.dropped[0]) : null;
}

/**
 * `model` with only the targets that can embed `request` (`embeddingParamsOn`: token ids on a text-only
 * vendor, `dimensions` a Bedrock family does not offer, a field a translation does not read under
 * `unsupported_params: error`; on a `strict` alias one it would drop), as {@linkcode paramServingTargets} does
 * for a chat form: `model` itself when all can (nothing allocated), the first target's refusal when none can,
 * so routing never ends a request with one target's 400 that another target would serve.
 */
export function embeddingServingTargets(model: ResolvedModel, request: EmbeddingRequest): ResolvedModel {
  const kept = targetsThatCan(model, request, cannotEmbed);
  if (kept instanceof GatewayError) throw kept;
  return kept;
}

/**
 * What `target`, the one that answered an embeddings request, went without (`unsupported_params: drop`), as
 * {@linkcode noteDropped} takes it; nothing for a target that got every field.
 */
export function answeredEmbedding(target: ResolvedTarget, request: EmbeddingRequest): Tolerance {
  const verdict = embeddingParamsOn(target, request);
  const dropped = verdict !== null && "dropped" in verdict ? verdict.dropped : [];
  return { refusal: null, native: [], dropped };
}
