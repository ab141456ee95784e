/**
 * A Gemini request's `generationConfig` in the chat form: the sampling settings the chat form carries, the
 * response's type and schema as `response_format`, `thinkingConfig` as `reasoning_effort`; the rest dropped.
 *
 * @module
 */
import type { Tolerance } from "../../http/tolerance.ts";
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { effortForBudget } from "../../openai/effort_for_budget.ts";
import { bad, int, list, num, object, text } from "./fields.ts";
import { jsonSchemaOf } from "./schema.ts";

/** The client's fields that became `reasoning_effort` and `response_format`, when it sent them. */
export interface GenerationParams {
  reasoning?: string;
  format?: string;
}

/** The generation settings the chat form carries. */
const GENERATION = new Set([
  "temperature",
  "topP",
  "topK",
  "maxOutputTokens",
  "stopSequences",
  "candidateCount",
  "seed",
  "presencePenalty",
  "frequencyPenalty",
  "responseMimeType",
  "responseSchema",
  "responseJsonSchema",
  "thinkingConfig",
]);

/**
 * `responseMimeType` and its schema as `response_format`: `application/json` is JSON mode, constrained by the
 * schema when one is given. Any other type but the default `text/plain` (`text/x.enum`, whose answer is the bare
 * enum value, not JSON) has no chat equivalent: only a Gemini target serves it, a translated one goes without
 * it and the schema that goes with it, as it does without a schema under `text/plain`.
 */
function responseFormat(
  config: JsonObject,
  chat: ChatRequest,
  tolerance: Tolerance,
  params: GenerationParams,
): void {
  const mime = config.responseMimeType == null
    ? "text/plain"
    : text(config.responseMimeType, "generationConfig.responseMimeType");
  const schemaKey = config.responseJsonSchema != null ? "responseJsonSchema" : "responseSchema";
  const given = config[schemaKey];
  // A JSON Schema goes as the client wrote it; Google's own Schema is made one (schema.ts).
  const schema = isObject(given) && schemaKey === "responseSchema" ? jsonSchemaOf(given) : given;
  if (mime === "application/json") {
    chat.response_format = isObject(schema)
      ? { type: "json_schema", json_schema: { name: "response", schema } }
      : { type: "json_object" };
    params.format = `generationConfig.${isObject(schema) ? schemaKey : "responseMimeType"}`;
    return;
  }
  const schemas = ["responseSchema", "responseJsonSchema"].filter((key) => config[key] != null)
    .map((key) => `generationConfig.${key}`);
  if (mime === "text/plain") tolerance.dropped.push(...schemas);
  else tolerance.native.push("generationConfig.responseMimeType", ...schemas);
}

/**
 * Google's `ThinkingLevel` values as the chat form's `reasoning_effort`. `THINKING_LEVEL_UNSPECIFIED` leaves
 * the model its default, so no effort; `XHIGH` is `high`, as the Messages API maps its `xhigh`: Claude's and
 * Gemini's targets take no effort above it.
 */
const THINKING_LEVELS: Readonly<Record<string, string | null>> = {
  THINKING_LEVEL_UNSPECIFIED: null,
  MINIMAL: "minimal",
  LOW: "low",
  MEDIUM: "medium",
  HIGH: "high",
  XHIGH: "high",
};

/**
 * `thinkingConfig` as `reasoning_effort`, and the field it came from: `thinkingLevel` (in any case: Google's
 * REST examples write it lower-case) or `thinkingBudget`: a positive one's tokens bucketed as the Messages API
 * buckets Claude Code's budgets. 0 (Google's "thinking off") and -1 (the model's own choice) set no effort:
 * `none` is refused by non-reasoning OpenAI models and by o-series ones, so sending it would fail requests
 * that thinking cannot matter to, while no effort leaves Claude and Gemini translations not thinking.
 */
function applyThinking(value: unknown, chat: ChatRequest, params: GenerationParams): void {
  if (!isObject(value)) return;
  const { thinkingLevel } = value;
  const thinkingBudget = int(value.thinkingBudget, "generationConfig.thinkingConfig.thinkingBudget");
  if (thinkingLevel != null) {
    const path = "generationConfig.thinkingConfig.thinkingLevel";
    const level = typeof thinkingLevel === "string"
      ? THINKING_LEVELS[thinkingLevel.toUpperCase()]
      : undefined;
    if (level === undefined) throw bad(path, `expected one of ${Object.keys(THINKING_LEVELS).join(", ")}.`);
    if (level !== null) {
      chat.reasoning_effort = level;
      params.reasoning = path;
    }
  } else if (thinkingBudget !== undefined && thinkingBudget > 0) {
    chat.reasoning_effort = effortForBudget(thinkingBudget);
    params.reasoning = "generationConfig.thinkingConfig.thinkingBudget";
  }
}

/** Applies `generationConfig` to `chat`, noting in `params` where its effort and format came from. */
export function generation(
  value: unknown,
  chat: ChatRequest,
  tolerance: Tolerance,
  params: GenerationParams,
): void {
  const config = object(value, "generationConfig");
  for (const key of Object.keys(config)) {
    if (!GENERATION.has(key) && config[key] != null) tolerance.dropped.push(`generationConfig.${key}`);
  }
  // Numbers as Google reads them, strings of them too (proto3 JSON): the chat form gets the numbers.
  const set = (key: string, to: keyof ChatRequest, read: typeof num) => {
    const n = read(config[key], `generationConfig.${key}`);
    if (n !== undefined) (chat as Record<string, unknown>)[to] = n;
  };
  set("temperature", "temperature", num);
  set("topP", "top_p", num);
  set("topK", "top_k", int);
  set("maxOutputTokens", "max_completion_tokens", int);
  set("seed", "seed", int);
  set("presencePenalty", "presence_penalty", num);
  set("frequencyPenalty", "frequency_penalty", num);
  const candidates = int(config.candidateCount, "generationConfig.candidateCount");
  if (candidates !== undefined && candidates !== 1) {
    throw bad("generationConfig.candidateCount", "only 1 candidate is supported by this gateway.");
  }
  if (config.stopSequences != null) {
    chat.stop = list(config.stopSequences, "generationConfig.stopSequences")
      .map((s, i) => text(s, `generationConfig.stopSequences[${i}]`));
  }
  responseFormat(config, chat, tolerance, params);
  applyThinking(config.thinkingConfig, chat, params);
}
