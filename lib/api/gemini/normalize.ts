/**
 * A Gemini API body in the one spelling the gateway reads. Google parses its JSON by the proto3 JSON mapping,
 * which takes each field by its lowerCamelCase name or by its proto name (`system_instruction`,
 * `generation_config.max_output_tokens`, `inline_data.mime_type`), enum values in any case (`mode: "any"`), and a
 * single value where a list goes (`"contents": {...}`, `"parts": {...}`): Google's own REST examples send all
 * three. The gateway reads, judges (content rules, the max_tokens ceiling) and forwards the body normalised
 * here, once, before anything reads it: every field Google knows by its lowerCamelCase name, enum values in
 * upper case, a single value of a repeated field in a list. So the policy judges exactly what a Gemini target
 * will read, and a translated target is not silently without what the client spelled the other way.
 *
 * Only the fields of Google's messages are renamed ({@linkcode MESSAGES}); what is the client's own JSON (a
 * call's `args`, a function's `response`, a JSON schema, a schema's property names, `enum` values) is never
 * touched, and a field this table does not know is kept as sent. A field given in both spellings is Google's
 * 400: which of the two a target would read cannot be known, and the policy must not judge the other.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { bad } from "./fields.ts";

/**
 * What a field holds: a scalar (or a list of them), an enum value (or a list), the client's own JSON, a
 * message, a list of messages, or a map of messages by the client's keys.
 */
type Kind =
  | "scalar"
  | "scalars"
  | "enum"
  | "enums"
  | "json"
  | { msg: string }
  | { list: string }
  | { map: string };

const msg = (name: string): Kind => ({ msg: name });
const list = (name: string): Kind => ({ list: name });

/** The fields of each message of Google's v1beta API that a request may hold, by their lowerCamelCase names. */
const MESSAGES: Readonly<Record<string, Readonly<Record<string, Kind>>>> = {
  GenerateContentRequest: {
    model: "scalar",
    contents: list("Content"),
    systemInstruction: msg("Content"),
    tools: list("Tool"),
    toolConfig: msg("ToolConfig"),
    safetySettings: list("SafetySetting"),
    generationConfig: msg("GenerationConfig"),
    cachedContent: "scalar",
  },
  CountTokensRequest: { contents: list("Content"), generateContentRequest: msg("GenerateContentRequest") },
  EmbedContentRequest: {
    model: "scalar",
    content: msg("Content"),
    taskType: "enum",
    title: "scalar",
    outputDimensionality: "scalar",
  },
  BatchEmbedContentsRequest: { requests: list("EmbedContentRequest") },
  Content: { role: "scalar", parts: list("Part") },
  Part: {
    text: "scalar",
    thought: "scalar",
    thoughtSignature: "scalar",
    inlineData: msg("Blob"),
    fileData: msg("FileData"),
    functionCall: msg("FunctionCall"),
    functionResponse: msg("FunctionResponse"),
    executableCode: msg("ExecutableCode"),
    codeExecutionResult: msg("CodeExecutionResult"),
    videoMetadata: msg("VideoMetadata"),
    partMetadata: "json",
  },
  Blob: { mimeType: "scalar", data: "scalar" },
  FileData: { mimeType: "scalar", fileUri: "scalar" },
  FunctionCall: { id: "scalar", name: "scalar", args: "json" },
  FunctionResponse: {
    id: "scalar",
    name: "scalar",
    response: "json",
    parts: list("FunctionResponsePart"),
    willContinue: "scalar",
    scheduling: "enum",
  },
  FunctionResponsePart: { inlineData: msg("Blob") },
  ExecutableCode: { language: "enum", code: "scalar" },
  CodeExecutionResult: { outcome: "enum", output: "scalar" },
  VideoMetadata: { startOffset: "scalar", endOffset: "scalar", fps: "scalar" },
  Tool: {
    functionDeclarations: list("FunctionDeclaration"),
    googleSearchRetrieval: msg("GoogleSearchRetrieval"),
    codeExecution: "json",
    googleSearch: "json",
    urlContext: "json",
  },
  GoogleSearchRetrieval: { dynamicRetrievalConfig: msg("DynamicRetrievalConfig") },
  DynamicRetrievalConfig: { mode: "enum", dynamicThreshold: "scalar" },
  FunctionDeclaration: {
    name: "scalar",
    description: "scalar",
    behavior: "enum",
    parameters: msg("Schema"),
    parametersJsonSchema: "json",
    response: msg("Schema"),
    responseJsonSchema: "json",
  },
  Schema: {
    type: "enum",
    format: "scalar",
    title: "scalar",
    description: "scalar",
    nullable: "scalar",
    enum: "scalars",
    maxItems: "scalar",
    minItems: "scalar",
    properties: { map: "Schema" },
    required: "scalars",
    minProperties: "scalar",
    maxProperties: "scalar",
    minLength: "scalar",
    maxLength: "scalar",
    pattern: "scalar",
    example: "json",
    anyOf: list("Schema"),
    propertyOrdering: "scalars",
    default: "json",
    items: msg("Schema"),
    minimum: "scalar",
    maximum: "scalar",
  },
  ToolConfig: { functionCallingConfig: msg("FunctionCallingConfig"), retrievalConfig: "json" },
  FunctionCallingConfig: { mode: "enum", allowedFunctionNames: "scalars" },
  SafetySetting: { category: "enum", threshold: "enum" },
  GenerationConfig: {
    stopSequences: "scalars",
    responseMimeType: "scalar",
    responseSchema: msg("Schema"),
    responseJsonSchema: "json",
    responseModalities: "enums",
    candidateCount: "scalar",
    maxOutputTokens: "scalar",
    temperature: "scalar",
    topP: "scalar",
    topK: "scalar",
    seed: "scalar",
    presencePenalty: "scalar",
    frequencyPenalty: "scalar",
    responseLogprobs: "scalar",
    logprobs: "scalar",
    enableEnhancedCivicAnswers: "scalar",
    speechConfig: "json",
    thinkingConfig: msg("ThinkingConfig"),
    imageConfig: "json",
    mediaResolution: "enum",
  },
  ThinkingConfig: { includeThoughts: "scalar", thinkingBudget: "scalar", thinkingLevel: "enum" },
};

/** A lowerCamelCase field name as its proto name: `maxOutputTokens` → `max_output_tokens`. */
const protoName = (camel: string) => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Per message, each field's proto name that differs from its lowerCamelCase name, to the latter. */
const BY_PROTO_NAME: ReadonlyMap<string, ReadonlyMap<string, string>> = new Map(
  Object.entries(MESSAGES).map(([type, fields]) => [
    type,
    new Map(Object.keys(fields).filter((f) => protoName(f) !== f).map((f) => [protoName(f), f])),
  ]),
);

const upper = (value: unknown) => typeof value === "string" ? value.toUpperCase() : value;

/** `value`, a field of kind `kind` at `path`, normalised. */
function field(value: unknown, kind: Kind, path: string): unknown {
  if (value === null || value === undefined || kind === "json" || kind === "scalar") return value;
  if (kind === "enum") return upper(value);
  if (kind === "scalars" || kind === "enums") {
    const values = Array.isArray(value) ? value : typeof value === "string" ? [value] : value;
    return kind === "enums" && Array.isArray(values) ? values.map(upper) : values;
  }
  if ("msg" in kind) return message(value, kind.msg, path);
  if ("map" in kind) {
    if (!isObject(value)) return value;
    const out: JsonObject = {};
    for (const [key, entry] of Object.entries(value)) out[key] = message(entry, kind.map, `${path}.${key}`);
    return out;
  }
  // A repeated message: Google takes a single one for the list of it.
  const items = Array.isArray(value) ? value : isObject(value) ? [value] : undefined;
  return items === undefined ? value : items.map((item, i) => message(item, kind.list, `${path}[${i}]`));
}

/** `value`, a message of `type` at `path`, with its known fields normalised; anything else as it is. */
function message(value: unknown, type: string, path: string): unknown {
  if (!isObject(value)) return value;
  const fields = MESSAGES[type];
  const renamed = BY_PROTO_NAME.get(type)!;
  const out: JsonObject = {};
  const at = (name: string) => path === "" ? name : `${path}.${name}`;
  for (const [key, entry] of Object.entries(value)) {
    const name = renamed.get(key) ?? key;
    if (name !== key && Object.hasOwn(value, name)) {
      throw bad(at(name), `given twice, as '${name}' and as '${key}'.`);
    }
    const kind = Object.hasOwn(fields, name) ? fields[name] : undefined;
    out[name] = kind === undefined ? entry : field(entry, kind, at(name));
  }
  return out;
}

/** The kinds of body the Gemini API's methods take. */
export type GeminiBodyType =
  | "GenerateContentRequest"
  | "CountTokensRequest"
  | "EmbedContentRequest"
  | "BatchEmbedContentsRequest";

/**
 * A Gemini API body of `type` in the spelling the gateway reads: every known field by its lowerCamelCase name,
 * enum values in upper case, a single value of a repeated field as a list; Google's 400 for a field given in
 * both spellings. A new object: the client's is not changed.
 */
export function normalizeGemini(body: JsonObject, type: GeminiBodyType): JsonObject {
  return message(body, type, "") as JsonObject;
}
