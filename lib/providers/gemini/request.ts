/**
 * OpenAI chat request → Gemini `GenerateContentRequest`. Pure: no I/O, throws a 400 `GatewayError` naming
 * the parameter for anything Gemini cannot express, so a client never gets a silently different answer. The
 * messages are `./contents.ts`.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { toGeminiContents } from "./contents.ts";
import {
  always,
  CORE_CHAT_PARAMS,
  LEGACY_FUNCTION_RULES,
  NO_EFFECT_PARAMS,
  parallelCallsOffUnsupported,
  type ParamRules,
  STYLE_HINTS,
  type UnsupportedRules,
} from "../shared/unsupported_params.ts";

/**
 * OpenAI parameters Gemini cannot honour:
 * - `logit_bias`: no Gemini equivalent.
 * - `logprobs` / `top_logprobs`: Gemini's `responseLogprobs` exists on some models, but its result has no
 *   byte offsets and a different shape; not translated.
 * - `n > 1` on streams: Gemini streams interleave candidates, the gateway's stream stage is single-choice.
 * - `parallel_tool_calls: false` beside tools the model may call: Gemini has no switch to forbid parallel
 *   function calls (without such tools it changes nothing, see `parallelCallsOffUnsupported`).
 * - `reasoning_effort` other than none/low/medium/high (see {@linkcode GEMINI_THINKING_BUDGETS}; Google's own
 *   OpenAI layer refuses `minimal` too).
 * - `audio`, `modalities` other than text, `prediction`, `web_search_options`: not offered by this adapter.
 * - legacy `functions` / `function_call` (see `LEGACY_FUNCTION_RULES`).
 */
function geminiUnsupportedRules(stream: boolean): UnsupportedRules {
  const rules: UnsupportedRules = {
    logit_bias: always,
    logprobs: (v) => v === true,
    top_logprobs: (v) => v !== 0,
    parallel_tool_calls: parallelCallsOffUnsupported,
    reasoning_effort: (v) => !(typeof v === "string" && Object.hasOwn(GEMINI_THINKING_BUDGETS, v)),
    audio: always,
    modalities: (v) => !Array.isArray(v) || v.some((m) => m !== "text"),
    prediction: always,
    web_search_options: always,
    ...LEGACY_FUNCTION_RULES,
  };
  if (stream) rules.n = (v) => v !== 1;
  return rules;
}

/**
 * The parameters the translation reads (`toGeminiRequest`), and those it leaves out because they do not change
 * the answer (`user`: Gemini has no end-user field). The style hint `verbosity`, which Gemini has no control
 * for, is left out and named in either mode (`STYLE_HINTS`). Any other (`top_k`, next month's) is unsupported:
 * 400, or dropped and named with `unsupported_params: drop`.
 */
const GEMINI_KNOWN: ReadonlySet<string> = new Set([
  ...CORE_CHAT_PARAMS,
  "n",
  "presence_penalty",
  "frequency_penalty",
  "seed",
  "reasoning_effort",
  "response_format",
  ...NO_EFFECT_PARAMS,
]);

const GEMINI_RULES: ParamRules = {
  vendor: "Gemini",
  unsupported: geminiUnsupportedRules(false),
  known: GEMINI_KNOWN,
  hints: STYLE_HINTS,
};
const GEMINI_STREAM_RULES: ParamRules = { ...GEMINI_RULES, unsupported: geminiUnsupportedRules(true) };

/** What Gemini's translation does with a chat request's parameters, streamed or not. */
export function geminiParamRules(stream: boolean): ParamRules {
  return stream ? GEMINI_STREAM_RULES : GEMINI_RULES;
}

function num(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

/**
 * `reasoning_effort` → `thinkingConfig.thinkingBudget`, with the budgets Google's own OpenAI-compatible endpoint
 * documents for the same efforts (1K, 8K, 24K; `none` → 0, thinking off). A budget rather than Gemini 3's
 * `thinkingLevel`, because Gemini 2.5 takes only budgets and Gemini 3 still accepts them, so one mapping serves
 * every model without guessing its generation from its name. `maxOutputTokens` already bounds thinking and
 * answer together, as OpenAI's `max_completion_tokens` does, so it is left as the client set it.
 */
export const GEMINI_THINKING_BUDGETS: Readonly<Record<string, number>> = {
  none: 0,
  low: 1024,
  medium: 8192,
  high: 24576,
};

/**
 * The `thinkingConfig` for an effort: the budget, and `includeThoughts` so that thought summaries come back (as
 * `reasoning_content`); `undefined` without an effort.
 */
export function toThinkingConfig(effort: unknown): JsonObject | undefined {
  if (typeof effort !== "string" || !Object.hasOwn(GEMINI_THINKING_BUDGETS, effort)) return undefined;
  const budget = GEMINI_THINKING_BUDGETS[effort];
  return budget === 0 ? { thinkingBudget: 0 } : { thinkingBudget: budget, includeThoughts: true };
}

/** `generationConfig` from the OpenAI sampling, length, stop, response-format and reasoning parameters. */
export function toGenerationConfig(request: ChatRequest): JsonObject {
  const config: JsonObject = {};
  const set = (key: string, value: unknown) => {
    if (value !== undefined) config[key] = value;
  };
  set("temperature", num(request.temperature));
  set("topP", num(request.top_p));
  set("maxOutputTokens", num(request.max_completion_tokens) ?? num(request.max_tokens));
  set("presencePenalty", num(request.presence_penalty));
  set("frequencyPenalty", num(request.frequency_penalty));
  set("seed", num(request.seed));
  const n = num(request.n);
  if (n !== undefined && n !== 1) config.candidateCount = n;
  if (typeof request.stop === "string") config.stopSequences = [request.stop];
  else if (Array.isArray(request.stop)) config.stopSequences = request.stop;
  set("thinkingConfig", toThinkingConfig(request.reasoning_effort));
  const format = request.response_format;
  if (isObject(format)) {
    if (format.type === "json_object") {
      config.responseMimeType = "application/json";
    } else if (format.type === "json_schema") {
      const spec = isObject(format.json_schema) ? format.json_schema : {};
      config.responseMimeType = "application/json";
      // JSON Schema as OpenAI has it; `responseSchema` would need Gemini's OpenAPI subset.
      if (isObject(spec.schema)) config.responseJsonSchema = spec.schema;
    } else if (format.type !== "text") {
      throw invalidRequest(
        `response_format type '${String(format.type)}' is not supported by Gemini models.`,
        "response_format.type",
      );
    }
  }
  return config;
}

/** OpenAI `tools` → one Gemini tool with `functionDeclarations` (parameters as JSON Schema). */
export function toGeminiTools(tools: unknown): JsonObject[] | undefined {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const declarations = tools.map((tool, i) => {
    if (!isObject(tool) || tool.type !== "function" || !isObject(tool.function)) {
      throw invalidRequest(
        "Only tools of type 'function' are supported by Gemini models.",
        `tools[${i}].type`,
      );
    }
    const fn = tool.function;
    const declaration: JsonObject = { name: fn.name };
    if (typeof fn.description === "string") declaration.description = fn.description;
    // `parametersJsonSchema` takes JSON Schema as is (additionalProperties and all), unlike `parameters`.
    if (isObject(fn.parameters)) declaration.parametersJsonSchema = fn.parameters;
    return declaration;
  });
  return [{ functionDeclarations: declarations }];
}

/** OpenAI `tool_choice` → `toolConfig.functionCallingConfig`. */
export function toToolConfig(choice: unknown): JsonObject | undefined {
  if (choice === undefined || choice === null) return undefined;
  const modes: Record<string, string> = { auto: "AUTO", required: "ANY", none: "NONE" };
  if (typeof choice === "string" && modes[choice]) return { functionCallingConfig: { mode: modes[choice] } };
  if (isObject(choice) && choice.type === "function" && isObject(choice.function)) {
    return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [String(choice.function.name)] } };
  }
  throw invalidRequest("This tool_choice is not supported by Gemini models.", "tool_choice");
}

/** The whole `GenerateContentRequest` for an (already unsupported-param-checked) OpenAI chat request. */
export function toGeminiRequest(request: ChatRequest): JsonObject {
  const { contents, systemInstruction } = toGeminiContents(request.messages);
  const body: JsonObject = { contents };
  if (systemInstruction) body.systemInstruction = systemInstruction;
  const generationConfig = toGenerationConfig(request);
  if (Object.keys(generationConfig).length > 0) body.generationConfig = generationConfig;
  const tools = toGeminiTools(request.tools);
  if (tools) body.tools = tools;
  const toolConfig = toToolConfig(request.tool_choice);
  if (toolConfig) body.toolConfig = toolConfig;
  return body;
}
