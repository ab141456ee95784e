/**
 * One rule for OpenAI parameters a vendor cannot honour, known ones and ones the translation does not know: by
 * default the client gets a 400 naming the parameter; a provider configured with `unsupported_params: drop`
 * leaves it out instead, and the client API names it in `x-gateway-dropped`. Never silent. A style hint the
 * vendor has no control for ({@linkcode STYLE_HINTS}) is left out and named in either mode, never refused.
 *
 * The rule is a pure check ({@linkcode unsupportedParams}) as well as the step an adapter runs
 * ({@linkcode applyUnsupportedRules}), so that a client API can ask before routing which of an alias's targets
 * can serve a request, and what each would go without, instead of learning it from the first target's 400.
 *
 * @module
 */
import { type GatewayError, invalidRequest } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";

/**
 * For each parameter name, whether a given (non-null) value is one the vendor cannot honour. The whole request
 * is there for a value the vendor cannot honour beside another parameter (Claude's thinking beside a forced
 * tool): the parameter is still named, refused or dropped alone.
 */
export type UnsupportedRules = Record<string, (value: unknown, request: JsonObject) => boolean>;

/** What a vendor's translation does with a chat (or embeddings) request's parameters. */
export interface ParamRules {
  /** The vendor's name, for the 400 ("… not supported by Gemini models"). */
  readonly vendor: string;
  /** Known parameters the vendor cannot honour, with the values it cannot. */
  readonly unsupported: UnsupportedRules;
  /**
   * The other parameters the translation knows (reads, or leaves out because they change nothing). Any
   * parameter in neither list is unsupported: the translation would lose it without a word.
   */
  readonly known: ReadonlySet<string>;
  /**
   * Style hints the vendor has no control for ({@linkcode STYLE_HINTS}): left out and named whatever the mode.
   * Absent: none (every parameter is in `unsupported` or `known`).
   */
  readonly hints?: ReadonlySet<string>;
  /**
   * Why a parameter is refused in this request, when its value alone does not say (it is fine on its own, but
   * not beside another one): the 400's message adds it. Absent or null: the value is the reason.
   */
  readonly reason?: (param: string, request: JsonObject) => string | null;
}

/** Any value at all is unsupported. */
export const always = (): boolean => true;

/**
 * The chat form's parameters every vendor translation reads (the request itself, its limits, stop, the two
 * sampling ones every vendor has, tools), and `user`, which each leaves out or maps: the start of each
 * vendor's list of known parameters, which adds what only it translates.
 */
export const CORE_CHAT_PARAMS: readonly string[] = [
  "model",
  "messages",
  "stream",
  "max_tokens",
  "max_completion_tokens",
  "stop",
  "temperature",
  "top_p",
  "tools",
  "tool_choice",
  "user",
];

/**
 * The embeddings request's parameters every vendor translation reads or serves itself (`encoding_format`: the
 * gateway encodes the answer) and `user`, which none sends: the start of each vendor's list of known embedding
 * parameters, which adds what only it translates (Cohere's `input_type`).
 */
export const CORE_EMBEDDING_PARAMS: readonly string[] = [
  "model",
  "input",
  "encoding_format",
  "dimensions",
  "user",
];

/**
 * OpenAI parameters that do not change the answer (tags, hints for OpenAI's own serving, the stream usage the
 * gateway asks for itself): a translation leaves them out, and nobody needs to be told.
 */
export const NO_EFFECT_PARAMS: readonly string[] = [
  "stream_options",
  "store",
  "metadata",
  "service_tier",
  "prompt_cache_key",
  "prompt_cache_retention",
  "safety_identifier",
];

/**
 * Style hints: OpenAI parameters that ask for a manner of answer, not for a different answer (`verbosity`: how
 * long and how detailed, `low` to `high`). A vendor with no such control (Anthropic, Gemini, Bedrock) goes
 * without them and they are named in `x-gateway-dropped` and the usage record's `dropped`, whatever its
 * `unsupported_params`: they are what a client sends as a default of its own (Codex sends `text.verbosity` for
 * every GPT-5.5 and later model name it knows, in every request), and refusing one would fail such a client on
 * every translated alias for a hint whose loss changes how the answer is put, not what the client relies on.
 * A `strict` alias refuses the drop, as every drop.
 */
export const STYLE_HINTS: ReadonlySet<string> = new Set(["verbosity"]);

/**
 * `parallel_tool_calls: false` for a vendor with no switch to forbid parallel tool calls: what it cannot honour
 * only when the model may call the client's tools (some tools, and a `tool_choice` other than `"none"`).
 * Without them it changes nothing (a client may send it as a setting of every request, tools or not).
 */
export function parallelCallsOffUnsupported(value: unknown, request: JsonObject): boolean {
  const tools = Array.isArray(request.tools) && request.tools.length > 0;
  return value === false && tools && request.tool_choice !== "none";
}

/**
 * Legacy `functions` / `function_call` (OpenAI's predecessors of `tools` / `tool_choice`), which no vendor
 * translation serves. They are refused, never dropped, even under `unsupported_params: drop`: they are what
 * the model must read, and without them a forced `function_call` would come back as a plain answer. Refused
 * rather than translated to tools: a legacy client expects `message.function_call` and finish reason
 * `function_call` back and sends calls back without ids, which Gemini's thought signatures ride on; an alias
 * with an OpenAI-compatible target serves them as sent.
 */
export const LEGACY_FUNCTION_RULES: UnsupportedRules = { functions: always, function_call: always };

/**
 * The parameters of `request` that `rules` finds unsupported (null and absent ones are fine): first the
 * known ones, in the rules' order, then the unknown ones, in the request's. Null when there are none, the
 * common case, which allocates nothing.
 */
export function unsupportedParams(request: JsonObject, rules: ParamRules): string[] | null {
  let found: string[] | null = null;
  for (const param in rules.unsupported) {
    const value = request[param];
    if (value === undefined || value === null || !rules.unsupported[param](value, request)) continue;
    (found ??= []).push(param);
  }
  for (const param in request) {
    if (rules.known.has(param) || Object.hasOwn(rules.unsupported, param) || rules.hints?.has(param)) {
      continue;
    }
    const value = request[param];
    if (value === undefined || value === null) continue;
    (found ??= []).push(param);
  }
  return found;
}

/** The style hints of `request` that `rules` leaves out ({@linkcode ParamRules.hints}), or null for none. */
function hintsIn(request: JsonObject, rules: ParamRules): string[] | null {
  let found: string[] | null = null;
  for (const param of rules.hints ?? []) {
    if (request[param] != null) (found ??= []).push(param);
  }
  return found;
}

/**
 * The 400 `unsupported_parameter` for `param` on `vendor`'s models; `reason` says why when the value alone does
 * not (see {@linkcode ParamRules.reason}).
 */
export function unsupportedParameter(
  param: string,
  vendor: string,
  reason: string | null = null,
): GatewayError {
  if (Object.hasOwn(LEGACY_FUNCTION_RULES, param)) {
    return invalidRequest(
      `The parameter '${param}' is not supported by ${vendor} models; send the functions as \`tools\` ` +
        "(and `function_call` as `tool_choice`).",
      param,
      "unsupported_parameter",
    );
  }
  const what = reason === null ? "with this value" : reason;
  return invalidRequest(
    `The parameter '${param}' ${what} is not supported by ${vendor} models; remove it, or ask the ` +
      "gateway operator to set `unsupported_params: drop` for this provider.",
    param,
    "unsupported_parameter",
  );
}

/**
 * What a target with `rules` in `mode` does with `request`: null when it serves every parameter; the 400
 * naming the first one it refuses (`mode` error, and legacy functions in any mode); or the parameters it goes
 * without (`mode` drop; and in either mode the style hints it has no control for, after the others).
 */
export function paramVerdict(
  request: JsonObject,
  rules: ParamRules,
  mode: "error" | "drop",
): { refusal: GatewayError } | { dropped: string[] } | null {
  const params = unsupportedParams(request, rules);
  const hints = rules.hints === undefined ? null : hintsIn(request, rules);
  if (params === null) return hints === null ? null : { dropped: hints };
  const refused = mode === "error" ? params[0] : params.find((p) => Object.hasOwn(LEGACY_FUNCTION_RULES, p));
  if (refused !== undefined) {
    return { refusal: unsupportedParameter(refused, rules.vendor, rules.reason?.(refused, request) ?? null) };
  }
  return { dropped: hints === null ? params : [...params, ...hints] };
}

/**
 * Returns `request` without the unsupported parameters it carries (mode `drop`), or throws a 400
 * `unsupported_parameter` naming the first one (mode `error`; legacy functions in any mode).
 * Returns `request` itself when it has none.
 */
export function applyUnsupportedRules<T extends JsonObject>(
  request: T,
  rules: ParamRules,
  mode: "error" | "drop",
): T {
  const verdict = paramVerdict(request, rules, mode);
  if (verdict === null) return request;
  if ("refusal" in verdict) throw verdict.refusal;
  const out = { ...request };
  for (const param of verdict.dropped) delete out[param];
  return out;
}
