/**
 * OpenAI chat request → Gemini `GenerateContentRequest`. Pure: no I/O, throws a 400 `GatewayError` naming
 * the parameter for anything Gemini cannot express, so a client never gets a silently different answer.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { type GeminiContent, type GeminiPart, signatureFromToolCallId } from "./types.ts";
import { type ChatMessage, type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import {
  always,
  CORE_CHAT_PARAMS,
  LEGACY_FUNCTION_RULES,
  NO_EFFECT_PARAMS,
  type ParamRules,
  type UnsupportedRules,
} from "../shared/unsupported_params.ts";

/**
 * OpenAI parameters Gemini cannot honour:
 * - `logit_bias`: no Gemini equivalent.
 * - `logprobs` / `top_logprobs`: Gemini's `responseLogprobs` exists on some models, but its result has no
 *   byte offsets and a different shape; not translated.
 * - `n > 1` on streams: Gemini streams interleave candidates, the gateway's stream stage is single-choice.
 * - `parallel_tool_calls: false`: Gemini has no switch to forbid parallel function calls.
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
    parallel_tool_calls: (v) => v === false,
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
 * the answer (`user`: Gemini has no end-user field). Any other (`top_k`, `verbosity`, next month's) is
 * unsupported: 400, or dropped and named with `unsupported_params: drop`.
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
};
const GEMINI_STREAM_RULES: ParamRules = { ...GEMINI_RULES, unsupported: geminiUnsupportedRules(true) };

/** What Gemini's translation does with a chat request's parameters, streamed or not. */
export function geminiParamRules(stream: boolean): ParamRules {
  return stream ? GEMINI_STREAM_RULES : GEMINI_RULES;
}

const IMAGE_EXTENSIONS: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  heic: "image/heic",
  heif: "image/heif",
  pdf: "application/pdf",
};

/**
 * An OpenAI image/file URL as a Gemini part: `data:` URLs (base64) become `inlineData`; http(s) URLs become
 * `fileData{fileUri}` (Gemini fetches public and signed URLs itself), with a MIME type guessed from the
 * extension and left out when unknown. Anything else is a 400 naming `param`.
 */
export function urlPart(url: string, param: string): GeminiPart {
  const data = /^data:([^;,]+)((?:;[^;,]*)*),(.*)$/s.exec(url);
  if (data) {
    if (!data[2].split(";").includes("base64")) {
      throw invalidRequest("Only base64 `data:` URLs are supported for Gemini models.", param);
    }
    return { inlineData: { mimeType: data[1], data: data[3] } };
  }
  if (/^https?:\/\//i.test(url)) {
    let path: string;
    try {
      path = new URL(url).pathname;
    } catch {
      throw invalidRequest("The URL is not valid.", param);
    }
    const ext = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase();
    const mimeType = ext === undefined ? undefined : IMAGE_EXTENSIONS[ext];
    return { fileData: mimeType ? { fileUri: url, mimeType } : { fileUri: url } };
  }
  throw invalidRequest("Gemini models accept only http(s) and base64 `data:` URLs.", param);
}

/**
 * The text of content that must be text only (system, developer, tool): a string, or its text parts one per
 * line (as Anthropic's system prompt has them), so that two parts never run into one word.
 */
function textOf(content: unknown, param: string): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  if (!Array.isArray(content)) throw invalidRequest("Expected a string or an array of text parts.", param);
  return content.map((part, j) => {
    if (isObject(part) && (part.type === "text" || part.type === "refusal")) {
      return String(part.text ?? part.refusal ?? "");
    }
    throw invalidRequest("Only text parts are supported here.", `${param}[${j}].type`);
  }).join("\n");
}

/** User (or assistant) content as Gemini parts: text, images, audio and inline files. */
function contentParts(content: unknown, param: string): GeminiPart[] {
  if (typeof content === "string") return [{ text: content }];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw invalidRequest("Expected a string or an array of content parts.", param);
  return content.map((part, j): GeminiPart => {
    const at = `${param}[${j}]`;
    if (!isObject(part)) throw invalidRequest("Expected a content part object.", at);
    switch (part.type) {
      case "text":
        return { text: String(part.text ?? "") };
      case "refusal":
        return { text: String(part.refusal ?? "") };
      case "image_url": {
        const image = part.image_url;
        const url = typeof image === "string" ? image : isObject(image) ? image.url : undefined;
        if (typeof url !== "string") throw invalidRequest("Missing image URL.", `${at}.image_url.url`);
        return urlPart(url, `${at}.image_url.url`);
      }
      case "input_audio": {
        const audio = isObject(part.input_audio) ? part.input_audio : {};
        if (typeof audio.data !== "string") {
          throw invalidRequest("Missing audio data.", `${at}.input_audio.data`);
        }
        const format = audio.format === "mp3" ? "mp3" : "wav";
        return { inlineData: { mimeType: `audio/${format}`, data: audio.data } };
      }
      case "file": {
        const file = isObject(part.file) ? part.file : {};
        if (typeof file.file_data === "string") return urlPart(file.file_data, `${at}.file.file_data`);
        throw invalidRequest(
          "Gemini models accept files only inline, as `file_data` (a base64 data: URL); `file_id` is not supported.",
          `${at}.file`,
        );
      }
      default:
        throw invalidRequest(
          `Content parts of type '${String(part.type)}' are not supported by Gemini models.`,
          `${at}.type`,
        );
    }
  });
}

/** Parses a tool call's `arguments` JSON into the object Gemini wants as `args`. */
function parseArguments(text: string, param: string): JsonObject {
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidRequest("Tool call arguments must be a JSON object.", param);
  }
  if (!isObject(value)) throw invalidRequest("Tool call arguments must be a JSON object.", param);
  return value;
}

/** Assistant message → `model` parts: text, then one `functionCall` per tool call (signature restored). */
function assistantParts(message: ChatMessage, i: number): GeminiPart[] {
  const parts = contentParts(message.content, `messages[${i}].content`).filter((p) => p.text !== "");
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  calls.forEach((call, j) => {
    if (!isObject(call) || !isObject(call.function)) return;
    const fn = call.function;
    const args = parseArguments(
      String(fn.arguments ?? ""),
      `messages[${i}].tool_calls[${j}].function.arguments`,
    );
    const part: GeminiPart = { functionCall: { name: String(fn.name), args } };
    const signature = typeof call.id === "string" ? signatureFromToolCallId(call.id) : undefined;
    if (signature !== undefined) part.thoughtSignature = signature;
    parts.push(part);
  });
  if (isObject(message.function_call)) {
    const fn = message.function_call;
    const args = parseArguments(String(fn.arguments ?? ""), `messages[${i}].function_call.arguments`);
    parts.push({ functionCall: { name: String(fn.name), args } });
  }
  return parts;
}

/** A tool result as Gemini wants it: a JSON object result as is, anything else as `{content: text}`. */
function functionResponse(name: string, text: string): GeminiPart {
  let response: JsonObject = { content: text };
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObject(parsed)) response = parsed;
  } catch { /* plain text result */ }
  return { functionResponse: { name, response } };
}

/**
 * OpenAI messages → Gemini `contents` and `systemInstruction`. System and developer messages (wherever they
 * are) become the system instruction; assistant → `model`; user and tool → `user`; consecutive turns of the
 * same role are merged, as Gemini expects alternating turns.
 */
export function toGeminiContents(messages: readonly ChatMessage[]): {
  contents: GeminiContent[];
  systemInstruction?: { parts: GeminiPart[] };
} {
  const system: GeminiPart[] = [];
  const contents: GeminiContent[] = [];
  const toolNames = new Map<string, string>();
  const push = (role: GeminiContent["role"], parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  messages.forEach((message, i) => {
    switch (message.role) {
      case "system":
      case "developer":
        system.push({ text: textOf(message.content, `messages[${i}].content`) });
        break;
      case "user":
        push("user", contentParts(message.content, `messages[${i}].content`));
        break;
      case "assistant":
        for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
          if (isObject(call) && isObject(call.function) && typeof call.id === "string") {
            toolNames.set(call.id, String(call.function.name));
          }
        }
        push("model", assistantParts(message, i));
        break;
      case "tool": {
        const id = String(message.tool_call_id);
        const name = toolNames.get(id);
        if (name === undefined) {
          throw invalidRequest(
            `No earlier assistant tool call has the id '${id.slice(0, 64)}'; Gemini needs the function name.`,
            `messages[${i}].tool_call_id`,
          );
        }
        push("user", [functionResponse(name, textOf(message.content, `messages[${i}].content`))]);
        break;
      }
      case "function":
        push("user", [functionResponse(String(message.name), String(message.content ?? ""))]);
        break;
      default:
        throw invalidRequest(
          `Messages with role '${message.role}' are not supported.`,
          `messages[${i}].role`,
        );
    }
  });
  return system.length > 0 ? { contents, systemInstruction: { parts: system } } : { contents };
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
