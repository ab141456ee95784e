/**
 * A `POST /v1/responses` request (OpenAI Responses API) validated and translated to the gateway's one chat
 * form, so it goes through the same policy, routing and providers as a chat completion. What the Response
 * object echoes back (the request's parameters with OpenAI's defaults) is kept beside the chat request.
 *
 * Validation is by hand rather than by schema: every refusal names the exact `param` OpenAI would name
 * (`input[2].content[0].type`), and OpenAI's own refusals are mirrored (unknown parameters, built-in tools
 * on a translated target, `background`). This module reads the top-level parameters and builds the echo; the
 * input items (input_items.ts), tools and tool choice (tools.ts) and `text.format` (text_format.ts) translate
 * beside it, with what only a native target serves noted by native_only.ts.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { type ChatMessage, type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { type InputNotes, requestInput } from "./input_items.ts";
import { nativeFields, type NativeNeeds } from "./native_only.ts";
import { newTolerance, type Tolerance } from "../../http/tolerance.ts";
import { responseFormat, textVerbosity } from "./text_format.ts";
import { chatToolChoice, chatTools, checkForcedCall } from "./tools.ts";
import { applyAllowedTools } from "./allowed_tools.ts";
import { addAdditionalTools } from "./additional_tools.ts";
import { badValue, boolean, missing, number, string, wrongType } from "./validate.ts";

/** The request parameters a Response object echoes, with OpenAI's defaults for the ones not given. */
export interface ResponseParams extends JsonObject {
  instructions: string | null;
  max_output_tokens: number | null;
  /** Bounds built-in tool calls only (the spec's words), so a translated target, which has none, honours it. */
  max_tool_calls: number | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  prompt_cache_key: string | null;
  reasoning: { effort: string | null; summary: string | null };
  safety_identifier: string | null;
  service_tier: string;
  store: boolean;
  temperature: number;
  text: { format: JsonObject; verbosity?: string };
  tool_choice: unknown;
  tools: JsonObject[];
  top_p: number;
  truncation: string;
  user: string | null;
}

/** A validated Responses request: the chat request to route, and what the answer echoes. */
export interface ResponsesRequest {
  /** The chat form; `model` is the alias as the client sent it. */
  chat: ChatRequest;
  stream: boolean;
  params: ResponseParams;
  /** The input as items (a string input becomes one user message), for storing with the response. */
  input: JsonObject[];
  /**
   * What a translated target cannot take as sent (lib/http/tolerance.ts): content only a native target reads (a
   * built-in tool's call item, a file by id: refused without one), what native targets serve better (a built-in
   * tool or tool choice: dropped without one), and parameters the gateway does not know (dropped).
   */
  tolerance: Tolerance;
  /**
   * The ids of the input's `item_reference` items, in order. The handler looks them up in the caller's stored
   * responses and parses the request again with them ({@linkcode parseResponsesRequest}'s `items`).
   */
  references: string[];
  /**
   * The JSON length of the items the references brought in, each occurrence counted (item_references.ts): 0
   * until they are resolved. A `previous_response_id` conversation is counted with it against one bound.
   */
  referencedBytes: number;
  /** The stored items `previous_response_id` brought in that went nowhere (cut_calls.ts): every target's. */
  historyDropped?: string[];
  /**
   * The client's own param of each chat message's content, in step with `chat.messages` (`instructions`,
   * `input`, `input[2].content`, `input[3].output`; `input[1]` for a referenced item): errors found in the
   * chat form name it (`clientParam` in client_terms.ts). Whoever inserts chat messages inserts their params here.
   */
  messageParams: string[];
  /**
   * Every tool the model may call, as the client declared it: `params.tools`, then the tools of the input's
   * `additional_tools` items (additional_tools.ts). Its calls are named from these.
   */
  callable: JsonObject[];
}

/**
 * Every top-level parameter OpenAI documents for `CreateResponse`. A parameter outside this list is not the
 * gateway's to judge (clients send what OpenAI took last week, such as Codex's `client_metadata`): a native
 * target gets it as sent, a translated one goes without it (tolerance.ts). One inside it that the gateway
 * cannot honour is refused by {@linkcode NOT_YET} rather than silently dropped.
 */
const KNOWN = new Set([
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "text",
  "max_output_tokens",
  "temperature",
  "top_p",
  "stream",
  "stream_options",
  "store",
  "metadata",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "prompt_cache_retention",
  "background",
  "previous_response_id",
  "reasoning",
  "truncation",
  "include",
  "service_tier",
  "top_logprobs",
  "max_tool_calls",
  "prompt",
  "conversation",
  "context_management",
  "moderation",
  "prompt_cache_options",
]);

/** Known parameters the gateway does not serve yet, with the reason given to the client. */
const NOT_YET: Readonly<Record<string, string>> = {
  // A conversation is state kept upstream under the provider's key, shared by every token that reaches it:
  // passing its id through would let one token read another's. The gateway's own chaining is per token.
  conversation: "Conversations are not supported by this gateway; chain responses with " +
    "'previous_response_id', or send the whole conversation as 'input'.",
};

/** The spec's `ReasoningEffort` values. */
const EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];
/** The spec's `Reasoning.summary` (and deprecated `generate_summary`) values. */
const SUMMARIES = ["auto", "concise", "detailed"];
/** The spec's `ServiceTierResponses` values. */
const SERVICE_TIERS = ["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"];
/** The spec's `prompt_cache_retention` values. */
const CACHE_RETENTIONS = ["in_memory", "24h"];
/** The spec's `IncludeEnum` values. */
export const INCLUDABLE = [
  "file_search_call.results",
  "web_search_call.results",
  "web_search_call.action.sources",
  "message.input_image.image_url",
  "computer_call_output.output.image_url",
  "code_interpreter_call.outputs",
  "reasoning.encrypted_content",
  "message.output_text.logprobs",
];

/** `body[key]` as one of `values` (refused with them listed), or null when absent. */
function oneOf(body: JsonObject, key: string, param: string, values: readonly string[]): string | null {
  const value = string(body, key, param);
  if (value === undefined) return null;
  if (!values.includes(value)) throw badValue(param, value, values);
  return value;
}

function metadata(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw wrongType("metadata", "an object", value);
  const entries = Object.entries(value);
  if (entries.length > 16) {
    throw invalidRequest(
      "Invalid 'metadata': too many keys. Expected at most 16 keys.",
      "metadata",
      "invalid_value",
    );
  }
  for (const [key, v] of entries) {
    if (key.length > 64) {
      throw invalidRequest(
        "Invalid 'metadata': keys must be at most 64 characters.",
        "metadata",
        "invalid_value",
      );
    }
    if (typeof v !== "string") throw wrongType(`metadata.${key}`, "a string", v);
    if (v.length > 512) {
      throw invalidRequest(
        `Invalid 'metadata.${key}': values must be at most 512 characters.`,
        `metadata.${key}`,
        "invalid_value",
      );
    }
  }
  return value as Record<string, string>;
}

/** `conversationAlone`: a `previous_response_id` request may leave out `input` (a compaction, a count). */
export interface ParseOptions {
  conversationAlone?: boolean;
}

/**
 * Validates a Responses request and translates it to the chat form; throws a 400 `GatewayError` naming the
 * first bad `param`. A null optional parameter counts as omitted, as everywhere in OpenAI's API.
 *
 * `items` are the request's `item_reference`s looked up (by id): each reference found there is translated,
 * and kept in `input`, as the item itself. Without them the references are only listed in `references`.
 */
export function parseResponsesRequest(
  body: JsonObject,
  items?: ReadonlyMap<string, JsonObject>,
  options: ParseOptions = {},
): ResponsesRequest {
  const needs: NativeNeeds = { tolerance: newTolerance() };
  for (const key of Object.keys(body)) {
    if (!KNOWN.has(key) && body[key] != null) needs.tolerance.dropped.push(key);
  }
  const model = string(body, "model", "model", true)!;
  if (model === "") throw invalidRequest("Invalid 'model': empty string.", "model", "invalid_value");
  for (const [key, message] of Object.entries(NOT_YET)) {
    if (body[key] != null) throw invalidRequest(message, key, "unsupported_parameter");
  }
  if (boolean(body, "background") === true) {
    throw invalidRequest(
      "Background mode is not supported by this gateway; send the request without 'background'.",
      "background",
      "unsupported_parameter",
    );
  }

  const messages: ChatMessage[] = [];
  const notes: InputNotes = { paths: [], references: [] };
  const instructions = string(body, "instructions", "instructions");
  if (instructions !== undefined) {
    messages.push({ role: "system", content: instructions });
    notes.paths.push("instructions");
  }
  nativeFields(body, needs);
  // A prompt template may hold the whole input (served upstream, so native-only). A create needs one: the stored
  // conversation alone ends with the model's answer, a prefill to an Anthropic target (see ParseOptions).
  const chained = body.previous_response_id != null;
  const alone = chained && options.conversationAlone === true;
  if (body.input == null && body.prompt == null && !alone) throw missing("input");
  const input = body.input == null ? [] : requestInput(body.input, items, messages, needs, notes);
  // Built-in tool items alone (an MCP approval, a computer call's output) are a native target's to judge; the
  // referenced items are not known until they are looked up; the earlier conversation is not read yet.
  if (
    !chained && needs.tolerance.refusal === null && needs.tolerance.native.length === 0 &&
    notes.references.length === 0 &&
    (messages.length === 0 || messages.every((m) => m.role === "system"))
  ) {
    throw invalidRequest(
      "Invalid 'input': it holds no message for the model to answer.",
      "input",
      "invalid_value",
    );
  }

  const chat: ChatRequest = { model, messages };
  const stream = boolean(body, "stream") ?? false;
  if (stream) chat.stream = true;
  if (body.stream_options != null) {
    if (!isObject(body.stream_options)) throw wrongType("stream_options", "an object", body.stream_options);
    if (!stream) {
      throw invalidRequest(
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        "stream_options",
        "invalid_value",
      );
    }
  }
  const store = boolean(body, "store") ?? true;
  const previous = string(body, "previous_response_id", "previous_response_id");
  if (previous === "") {
    throw invalidRequest(
      "Invalid 'previous_response_id': empty string.",
      "previous_response_id",
      "invalid_value",
    );
  }
  // The spec's minimum: OpenAI refuses fewer than 16 output tokens (`integer_below_min_value`).
  const maxOutput = number(body, "max_output_tokens", 16, null, true);
  if (maxOutput !== undefined) chat.max_completion_tokens = maxOutput;
  const temperature = number(body, "temperature", 0, 2, false);
  if (temperature !== undefined) chat.temperature = temperature;
  const topP = number(body, "top_p", 0, 1, false);
  if (topP !== undefined) chat.top_p = topP;
  const parallel = boolean(body, "parallel_tool_calls");
  let tools: JsonObject[] = [];
  if (body.tools != null) {
    const translated = chatTools(body.tools, needs);
    tools = translated.echo;
    if (translated.chat.length > 0) chat.tools = translated.chat;
  }
  // Tools the input adds (Codex's code mode) join them; the model's calls are named from all of them.
  const callable = addAdditionalTools(input, chat, tools, needs);
  let toolChoice: unknown = "auto";
  if (body.tool_choice != null) {
    if (isObject(body.tool_choice) && body.tool_choice.type === "allowed_tools") {
      applyAllowedTools(chat, body.tool_choice, callable, needs);
    } else {
      const choice = chatToolChoice(body.tool_choice, needs);
      if (choice !== undefined) chat.tool_choice = choice;
    }
    toolChoice = body.tool_choice;
    checkForcedCall(body.tool_choice, callable, chat.tools !== undefined, needs);
  }
  if (parallel !== undefined && chat.tools !== undefined) chat.parallel_tool_calls = parallel;
  let format: JsonObject = { type: "text" };
  let verbosity: string | undefined;
  if (body.text != null) {
    const translated = responseFormat(body.text);
    format = translated.echo;
    if (translated.chat !== undefined) chat.response_format = translated.chat;
    verbosity = textVerbosity(body.text);
    if (verbosity !== undefined) chat.verbosity = verbosity;
  }
  const user = string(body, "user", "user");
  if (user !== undefined) chat.user = user;
  const safety = string(body, "safety_identifier", "safety_identifier");
  if (safety !== undefined && safety.length > 64) {
    throw invalidRequest(
      `Invalid 'safety_identifier': string too long. Expected a string with maximum length 64, but got a ` +
        `string with length ${safety.length} instead.`,
      "safety_identifier",
      "string_above_max_length",
    );
  }
  if (safety !== undefined) chat.safety_identifier = safety;
  const cacheKey = string(body, "prompt_cache_key", "prompt_cache_key");
  if (cacheKey !== undefined) chat.prompt_cache_key = cacheKey;
  const serviceTier = string(body, "service_tier", "service_tier");
  if (serviceTier !== undefined && !SERVICE_TIERS.includes(serviceTier)) {
    throw badValue("service_tier", serviceTier, SERVICE_TIERS);
  }
  const retention = string(body, "prompt_cache_retention", "prompt_cache_retention");
  if (retention !== undefined && !CACHE_RETENTIONS.includes(retention)) {
    throw badValue("prompt_cache_retention", retention, CACHE_RETENTIONS);
  }
  // The chat form has the same field (OpenAI's chat API): an OpenAI-compatible target keeps the cache as asked,
  // a vendor target leaves out what does not change the answer.
  if (retention !== undefined) chat.prompt_cache_retention = retention;
  if (serviceTier !== undefined) chat.service_tier = serviceTier;
  const truncation = string(body, "truncation", "truncation") ?? "disabled";
  if (truncation !== "auto" && truncation !== "disabled") {
    throw badValue("truncation", truncation, ["auto", "disabled"]);
  }
  // Dropping input items to fit the context window is the upstream's, by its own window and tokenizer; the chat
  // form has no such switch, so a translated target sends the input whole (and a too-long one fails upstream).
  if (truncation === "auto") needs.tolerance.dropped.push("truncation");
  if (body.include != null) {
    if (!Array.isArray(body.include)) throw wrongType("include", "an array", body.include);
    body.include.forEach((v, i) => {
      if (typeof v !== "string") throw wrongType(`include[${i}]`, "a string", v);
      if (!INCLUDABLE.includes(v)) throw badValue(`include[${i}]`, v, INCLUDABLE);
      // What to include is the upstream's to add (encrypted reasoning, sources, log probabilities): the chat
      // form carries none of it back, so a translated target answers without it.
      needs.tolerance.dropped.push(`include[${i}]`);
    });
  }
  const reasoning = { effort: null as string | null, summary: null as string | null };
  if (body.reasoning != null) {
    if (!isObject(body.reasoning)) throw wrongType("reasoning", "an object", body.reasoning);
    reasoning.effort = oneOf(body.reasoning, "effort", "reasoning.effort", EFFORTS);
    reasoning.summary = oneOf(body.reasoning, "summary", "reasoning.summary", SUMMARIES) ??
      oneOf(body.reasoning, "generate_summary", "reasoning.generate_summary", SUMMARIES);
    if (reasoning.effort !== null) chat.reasoning_effort = reasoning.effort;
  }
  // Metadata is the gateway's to echo (and store); upstreams are not asked to keep anything.
  const meta = metadata(body.metadata);

  const params: ResponseParams = {
    instructions: instructions ?? null,
    max_output_tokens: maxOutput ?? null,
    max_tool_calls: number(body, "max_tool_calls", 0, null, true) ?? null,
    metadata: meta,
    parallel_tool_calls: parallel ?? true,
    previous_response_id: previous ?? null,
    prompt_cache_key: cacheKey ?? null,
    reasoning,
    safety_identifier: safety ?? null,
    service_tier: serviceTier ?? "default",
    store,
    temperature: temperature ?? 1,
    text: verbosity === undefined ? { format } : { format, verbosity },
    tool_choice: toolChoice,
    tools,
    top_p: topP ?? 1,
    truncation,
    user: user ?? null,
  };
  return {
    chat,
    stream,
    params,
    input,
    tolerance: needs.tolerance,
    references: notes.references,
    referencedBytes: 0,
    messageParams: notes.paths,
    callable,
  };
}
