/**
 * A `POST /v1/responses` request (OpenAI Responses API) validated and translated to the gateway's one chat
 * form, so it goes through the same policy, routing and providers as a chat completion. What the Response
 * object echoes back (the request's parameters with OpenAI's defaults) is kept beside the chat request.
 *
 * Validation is by hand rather than by schema: every refusal names the exact `param` OpenAI would name
 * (`input[2].content[0].type`), and OpenAI's own refusals are mirrored (unknown parameters, built-in tools
 * on a translated target, `background`).
 *
 * @module
 */
import { type GatewayError, invalidRequest, printable } from "../../errors.ts";
import type { ChatMessage, ChatRequest, JsonObject } from "../../openai/types.ts";

/** The request parameters a Response object echoes, with OpenAI's defaults for the ones not given. */
export interface ResponseParams extends JsonObject {
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  prompt_cache_key: string | null;
  reasoning: { effort: string | null; summary: string | null };
  safety_identifier: string | null;
  service_tier: string;
  store: boolean;
  temperature: number;
  text: { format: JsonObject };
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
   * Set when the request uses what only an upstream speaking the Responses API natively can serve (a built-in
   * tool, a built-in tool call item, a built-in `tool_choice`): the 400 to give, naming the first such param,
   * when the alias has no native target. `null` when every target can serve it.
   */
  nativeOnly: GatewayError | null;
  /**
   * The ids of the input's `item_reference` items, in order. The handler looks them up in the caller's stored
   * responses and parses the request again with them ({@linkcode parseResponsesRequest}'s `items`).
   */
  references: string[];
  /**
   * The client's own param of each chat message's content, in step with `chat.messages` (`instructions`,
   * `input`, `input[2].content`, `input[3].output`; `input[1]` for a referenced item): errors found in the
   * chat form name it ({@linkcode clientParam}). Whoever inserts chat messages inserts their params here.
   */
  messageParams: string[];
}

/** What translating the request's own input notes beside the chat messages. */
interface InputNotes {
  /** See `ResponsesRequest.messageParams`. */
  paths: string[];
  /** See `ResponsesRequest.references`. */
  references: string[];
}

/**
 * Input item types of built-in tools (OpenAI's `Item` union, beyond messages, function calls and reasoning).
 * They are passed through to a native target; the chat form has no place for them.
 */
const NATIVE_ITEMS = new Set([
  "file_search_call",
  "computer_call",
  "computer_call_output",
  "web_search_call",
  "tool_search_call",
  "tool_search_output",
  "additional_tools",
  "compaction",
  "image_generation_call",
  "code_interpreter_call",
  "local_shell_call",
  "local_shell_call_output",
  "shell_call",
  "shell_call_output",
  "apply_patch_call",
  "apply_patch_call_output",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
  "mcp_call",
  "custom_tool_call",
  "custom_tool_call_output",
]);

/** Collects the first use of something only a native target serves (see `ResponsesRequest.nativeOnly`). */
interface NativeNeeds {
  first: GatewayError | null;
}

function needNative(needs: NativeNeeds, message: string, param: string): void {
  needs.first ??= invalidRequest(
    `${message} needs an upstream that speaks the Responses API natively (a provider with native_responses: ` +
      "true), and no target of this model does.",
    param,
    "unsupported_value",
  );
}

/**
 * Every top-level parameter OpenAI documents for `CreateResponse`. A parameter outside this list is refused
 * as OpenAI refuses it (`unknown_parameter`); one inside it that the gateway cannot honour yet is refused
 * by {@linkcode NOT_YET} rather than silently dropped.
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
]);

/** Known parameters the gateway does not serve yet, with the reason given to the client. */
const NOT_YET: Readonly<Record<string, string>> = {
  conversation: "Conversations are not supported by this gateway; send the whole conversation as 'input'.",
  prompt:
    "Prompt templates are not supported by this gateway; send the prompt as 'instructions' and 'input'.",
  top_logprobs: "'top_logprobs' is not supported by this gateway's Responses endpoint yet.",
  max_tool_calls: "'max_tool_calls' is not supported by this gateway's Responses endpoint yet.",
  context_management: "'context_management' is not supported by this gateway.",
};

const ROLES = ["user", "assistant", "system", "developer"] as const;

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === "object" && !Array.isArray(v);

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a decimal";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

function wrongType(param: string, expected: string, value: unknown) {
  return invalidRequest(
    `Invalid type for '${param}': expected ${expected}, but got ${describe(value)} instead.`,
    param,
    "invalid_type",
  );
}

function missing(param: string) {
  return invalidRequest(`Missing required parameter: '${param}'.`, param, "missing_required_parameter");
}

function badValue(param: string, value: unknown, supported: readonly string[]) {
  const given = typeof value === "string" ? `'${printable(value)}'` : describe(value);
  return invalidRequest(
    `Invalid value: ${given}. Supported values are: ${supported.map((s) => `'${s}'`).join(", ")}.`,
    param,
    "invalid_value",
  );
}

function string(body: JsonObject, key: string, param: string, required = false): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) {
    if (required) throw missing(param);
    return undefined;
  }
  if (typeof v !== "string") throw wrongType(param, "a string", v);
  return v;
}

function boolean(body: JsonObject, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw wrongType(key, "a boolean", v);
  return v;
}

function number(body: JsonObject, key: string, min: number, max: number | null, int: boolean) {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  const kind = int ? "integer" : "decimal";
  if (typeof v !== "number" || !Number.isFinite(v) || (int && !Number.isSafeInteger(v))) {
    throw wrongType(key, `an ${kind === "integer" ? "integer" : "number"}`, v);
  }
  if (v < min) {
    throw invalidRequest(
      `Invalid '${key}': ${kind} below minimum value. Expected a value >= ${min}, but got ${v} instead.`,
      key,
      `${kind}_below_min_value`,
    );
  }
  if (max !== null && v > max) {
    throw invalidRequest(
      `Invalid '${key}': ${kind} above maximum value. Expected a value <= ${max}, but got ${v} instead.`,
      key,
      `${kind}_above_max_value`,
    );
  }
  return v;
}

/** One content part of an input message, in the chat form. */
function contentPart(part: unknown, param: string, role: string): JsonObject {
  if (!isObject(part)) throw wrongType(param, "an object", part);
  const type = part.type;
  if (type === "input_text" || type === "output_text") {
    return { type: "text", text: string(part, "text", `${param}.text`, true)! };
  }
  if (type === "refusal") return { type: "text", text: string(part, "refusal", `${param}.refusal`, true)! };
  if (type === "input_image") {
    if (role !== "user") {
      throw invalidRequest(
        `Images are only allowed in user messages ('${param}').`,
        `${param}.type`,
        "invalid_value",
      );
    }
    const url = string(part, "image_url", `${param}.image_url`);
    if (url === undefined) {
      throw invalidRequest(
        part.file_id != null
          ? "Images by 'file_id' are not supported by this gateway; send 'image_url' (a URL or a data URL)."
          : `Missing required parameter: '${param}.image_url'.`,
        `${param}.image_url`,
        part.file_id != null ? "unsupported_parameter" : "missing_required_parameter",
      );
    }
    const detail = string(part, "detail", `${param}.detail`) ?? "auto";
    if (!["auto", "low", "high"].includes(detail)) {
      throw badValue(`${param}.detail`, detail, ["auto", "low", "high"]);
    }
    return { type: "image_url", image_url: { url, detail } };
  }
  if (type === "input_file" || type === "input_audio") {
    throw invalidRequest(
      `Content of type '${type}' is not supported by this gateway's Responses endpoint yet.`,
      `${param}.type`,
      "unsupported_value",
    );
  }
  if (typeof type !== "string") {
    throw type === undefined ? missing(`${param}.type`) : wrongType(`${param}.type`, "a string", type);
  }
  throw badValue(`${param}.type`, type, ["input_text", "input_image", "output_text", "refusal"]);
}

/** A message's content as the chat form takes it: a string, or parts (text only for non-user roles). */
function messageContent(content: unknown, param: string, role: string): string | JsonObject[] {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) {
    throw content === undefined ? missing(param) : wrongType(param, "a string or an array", content);
  }
  const parts = content.map((p, i) => contentPart(p, `${param}[${i}]`, role));
  if (role === "user") return parts;
  // System, developer and assistant messages take text only in the chat form: join their texts.
  return parts.map((p) => p.text as string).join("");
}

/**
 * Turns the items of `input` into chat messages, merging consecutive function calls into one turn. Built-in
 * tool items have no chat form: noted in `needs` for a request's own input, left out of a rebuilt history
 * (`needs` absent), as reasoning items are.
 */
function inputMessages(items: unknown[], into: ChatMessage[], needs?: NativeNeeds, notes?: InputNotes): void {
  items.forEach((item, i) => {
    const param = `input[${i}]`;
    const push = (message: ChatMessage, path: string) => {
      into.push(message);
      notes?.paths.push(path);
    };
    if (!isObject(item)) throw wrongType(param, "an object", item);
    const type = item.type ?? "message";
    if (type === "message") {
      const role = item.role;
      if (typeof role !== "string" || !(ROLES as readonly string[]).includes(role)) {
        throw role === undefined ? missing(`${param}.role`) : badValue(`${param}.role`, role, ROLES);
      }
      push({ role, content: messageContent(item.content, `${param}.content`, role) }, `${param}.content`);
      return;
    }
    if (type === "function_call") {
      const call = {
        id: string(item, "call_id", `${param}.call_id`, true)!,
        type: "function",
        function: {
          name: string(item, "name", `${param}.name`, true)!,
          arguments: string(item, "arguments", `${param}.arguments`, true)!,
        },
      };
      const last = into.at(-1);
      // An assistant turn that said something and called tools is one chat message with both.
      if (last?.role === "assistant") {
        last.content ??= null;
        ((last.tool_calls ??= []) as unknown[]).push(call);
      } else push({ role: "assistant", content: null, tool_calls: [call] }, param);
      return;
    }
    if (type === "function_call_output") {
      const output = item.output;
      let content: string;
      if (typeof output === "string") content = output;
      else if (Array.isArray(output)) {
        content = output.map((p, j) => contentPart(p, `${param}.output[${j}]`, "tool").text ?? "").join("");
      } else {throw output === undefined
          ? missing(`${param}.output`)
          : wrongType(`${param}.output`, "a string", output);}
      push(
        { role: "tool", tool_call_id: string(item, "call_id", `${param}.call_id`, true)!, content },
        `${param}.output`,
      );
      return;
    }
    // Reasoning items carry the model's own state; a translated target cannot take them back, so they are left out.
    if (type === "reasoning") return;
    if (typeof type === "string" && NATIVE_ITEMS.has(type)) {
      if (needs) needNative(needs, `The input item '${type}'`, `${param}.type`);
      return;
    }
    // An earlier input or output item by id (the Vercel AI SDK's multi-turn form while `store` is on): noted
    // for the handler to look up, then translated as the item itself when the request is parsed again.
    if (type === "item_reference") {
      const id = string(item, "id", `${param}.id`, true)!;
      if (id === "") {
        throw invalidRequest(`Invalid '${param}.id': empty string.`, `${param}.id`, "invalid_value");
      }
      notes?.references.push(id);
      return;
    }
    throw badValue(`${param}.type`, type, ["message", "function_call", "function_call_output", "reasoning"]);
  });
}

/**
 * Function tools in the chat form. A built-in tool has none: it is noted in `needs` (a native target takes it
 * as sent) and echoed as given.
 */
function chatTools(tools: unknown, needs: NativeNeeds): { chat: JsonObject[]; echo: JsonObject[] } {
  if (!Array.isArray(tools)) throw wrongType("tools", "an array", tools);
  const chat: JsonObject[] = [];
  const echo: JsonObject[] = [];
  tools.forEach((tool, i) => {
    const param = `tools[${i}]`;
    if (!isObject(tool)) throw wrongType(param, "an object", tool);
    if (tool.type !== "function") {
      if (typeof tool.type !== "string") {
        throw tool.type == null
          ? missing(`${param}.type`)
          : wrongType(`${param}.type`, "a string", tool.type);
      }
      needNative(needs, `The built-in tool '${printable(tool.type)}'`, `${param}.type`);
      echo.push(tool);
      return;
    }
    const name = string(tool, "name", `${param}.name`, true)!;
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      throw invalidRequest(
        `Invalid '${param}.name': must be 1-64 letters, digits, _ or -.`,
        `${param}.name`,
        "invalid_value",
      );
    }
    const description = string(tool, "description", `${param}.description`);
    const parameters = tool.parameters ?? undefined;
    if (parameters !== undefined && !isObject(parameters)) {
      throw wrongType(`${param}.parameters`, "an object", parameters);
    }
    const strict = tool.strict ?? undefined;
    if (strict !== undefined && typeof strict !== "boolean") {
      throw wrongType(`${param}.strict`, "a boolean", strict);
    }
    const fn: JsonObject = { name };
    if (description !== undefined) fn.description = description;
    if (parameters !== undefined) fn.parameters = parameters;
    if (strict !== undefined) fn.strict = strict;
    chat.push({ type: "function", function: fn });
    echo.push({
      type: "function",
      name,
      description: description ?? null,
      parameters: parameters ?? null,
      // What the target applies: the chat form's default is non-strict, so an omitted `strict` is echoed false.
      strict: strict ?? false,
    });
  });
  return { chat, echo };
}

/** `tool_choice` in the chat form; a built-in tool's choice is noted in `needs` and has none. */
function chatToolChoice(choice: unknown, needs: NativeNeeds): unknown {
  if (typeof choice === "string") {
    if (!["none", "auto", "required"].includes(choice)) {
      throw badValue("tool_choice", choice, ["none", "auto", "required"]);
    }
    return choice;
  }
  if (!isObject(choice)) throw wrongType("tool_choice", "a string or an object", choice);
  if (choice.type === "function") {
    return { type: "function", function: { name: string(choice, "name", "tool_choice.name", true)! } };
  }
  if (typeof choice.type !== "string") {
    throw choice.type == null
      ? missing("tool_choice.type")
      : wrongType("tool_choice.type", "a string", choice.type);
  }
  needNative(needs, `The tool choice '${printable(choice.type)}'`, "tool_choice");
  return undefined;
}

/** `text.format` → the chat `response_format`, and the format the Response echoes. */
function responseFormat(text: unknown): { chat?: JsonObject; echo: JsonObject } {
  if (!isObject(text)) throw wrongType("text", "an object", text);
  const format = text.format ?? undefined;
  if (format === undefined) return { echo: { type: "text" } };
  if (!isObject(format)) throw wrongType("text.format", "an object", format);
  const type = format.type;
  if (type === "text") return { echo: { type: "text" } };
  if (type === "json_object") return { chat: { type: "json_object" }, echo: { type: "json_object" } };
  if (type === "json_schema") {
    const name = string(format, "name", "text.format.name", true)!;
    const schema = format.schema;
    if (!isObject(schema)) {
      throw schema === undefined
        ? missing("text.format.schema")
        : wrongType("text.format.schema", "an object", schema);
    }
    const description = string(format, "description", "text.format.description");
    const strict = format.strict ?? undefined;
    if (strict !== undefined && typeof strict !== "boolean") {
      throw wrongType("text.format.strict", "a boolean", strict);
    }
    const jsonSchema: JsonObject = { name, schema };
    if (description !== undefined) jsonSchema.description = description;
    if (strict !== undefined) jsonSchema.strict = strict;
    const echo: JsonObject = { type: "json_schema", name, schema, strict: strict ?? false };
    if (description !== undefined) echo.description = description;
    return { chat: { type: "json_schema", json_schema: jsonSchema }, echo };
  }
  throw type === undefined
    ? missing("text.format.type")
    : badValue("text.format.type", type, ["text", "json_object", "json_schema"]);
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

/**
 * The chat messages of an earlier conversation (a stored chain's input and output items, oldest first), to
 * go before a request's own input when it names a `previous_response_id`. The items were accepted or
 * produced by the gateway, so they translate as input items do.
 */
export function historyMessages(items: readonly JsonObject[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  inputMessages([...items], messages);
  return messages;
}

/**
 * The client's own name for a param of the chat form its request was translated to, for errors found after
 * translation (a content rule's denial): `messages[0].content` → `instructions`, `messages[3].content[0].text`
 * → `input[2].content[0].text`. A param that names no translated message is returned as it is.
 */
export function clientParam(parsed: ResponsesRequest, param: string): string {
  const match = /^messages\[(\d+)\]\.content(.*)$/.exec(param);
  const path = match === null ? undefined : parsed.messageParams[Number(match[1])];
  if (match === null || path === undefined) return param;
  // A user message's parts are its item's parts one for one; any other content became one string.
  return path.endsWith(".content") ? path + match[2] : path;
}

/** The id of an `item_reference` input item, or undefined for any other item. */
function referenceId(item: unknown): string | undefined {
  return isObject(item) && item.type === "item_reference" && typeof item.id === "string"
    ? item.id
    : undefined;
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
): ResponsesRequest {
  for (const key of Object.keys(body)) {
    if (!KNOWN.has(key)) {
      throw invalidRequest(`Unknown parameter: '${printable(key)}'.`, key, "unknown_parameter");
    }
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
  const needs: NativeNeeds = { first: null };
  const notes: InputNotes = { paths: [], references: [] };
  const instructions = string(body, "instructions", "instructions");
  if (instructions !== undefined) {
    messages.push({ role: "system", content: instructions });
    notes.paths.push("instructions");
  }
  const given = body.input;
  let input: JsonObject[];
  if (typeof given === "string") {
    input = [{ type: "message", role: "user", content: given }];
    messages.push({ role: "user", content: given });
    notes.paths.push("input");
  } else if (Array.isArray(given)) {
    if (given.length === 0) {
      throw invalidRequest(
        "Invalid 'input': empty array. Expected at least one item.",
        "input",
        "empty_array",
      );
    }
    const referenced = new Set<number>();
    input = (given as JsonObject[]).map((item, i) => {
      const id = referenceId(item);
      const found = id === undefined ? undefined : items?.get(id);
      if (found === undefined) return item;
      referenced.add(i);
      return found;
    });
    inputMessages(input, messages, needs, notes);
    // A referenced item's text is not in the client's request: its param is the reference.
    notes.paths = notes.paths.map((path) => {
      const at = /^input\[(\d+)\]/.exec(path);
      return at !== null && referenced.has(Number(at[1])) ? at[0] : path;
    });
  } else throw given == null ? missing("input") : wrongType("input", "a string or an array", given);
  // Built-in tool items alone (an MCP approval, a computer call's output) are a native target's to judge; the
  // referenced items are not known until they are looked up.
  if (
    needs.first === null && notes.references.length === 0 &&
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
  const maxOutput = number(body, "max_output_tokens", 1, null, true);
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
  if (parallel !== undefined && chat.tools !== undefined) chat.parallel_tool_calls = parallel;
  let toolChoice: unknown = "auto";
  if (body.tool_choice != null) {
    const choice = chatToolChoice(body.tool_choice, needs);
    if (choice !== undefined) chat.tool_choice = choice;
    toolChoice = body.tool_choice;
  }
  let format: JsonObject = { type: "text" };
  if (body.text != null) {
    const translated = responseFormat(body.text);
    format = translated.echo;
    if (translated.chat !== undefined) chat.response_format = translated.chat;
  }
  const user = string(body, "user", "user");
  if (user !== undefined) chat.user = user;
  const safety = string(body, "safety_identifier", "safety_identifier");
  if (safety !== undefined) chat.safety_identifier = safety;
  const cacheKey = string(body, "prompt_cache_key", "prompt_cache_key");
  if (cacheKey !== undefined) chat.prompt_cache_key = cacheKey;
  const serviceTier = string(body, "service_tier", "service_tier");
  if (serviceTier !== undefined) chat.service_tier = serviceTier;
  const truncation = string(body, "truncation", "truncation") ?? "disabled";
  if (truncation !== "auto" && truncation !== "disabled") {
    throw badValue("truncation", truncation, ["auto", "disabled"]);
  }
  if (body.include != null) {
    if (!Array.isArray(body.include)) throw wrongType("include", "an array", body.include);
    body.include.forEach((v, i) => {
      if (typeof v !== "string") throw wrongType(`include[${i}]`, "a string", v);
    });
  }
  const reasoning = { effort: null as string | null, summary: null as string | null };
  if (body.reasoning != null) {
    if (!isObject(body.reasoning)) throw wrongType("reasoning", "an object", body.reasoning);
    reasoning.effort = string(body.reasoning, "effort", "reasoning.effort") ?? null;
    reasoning.summary = string(body.reasoning, "summary", "reasoning.summary") ??
      string(body.reasoning, "generate_summary", "reasoning.generate_summary") ?? null;
    if (reasoning.effort !== null) chat.reasoning_effort = reasoning.effort;
  }
  // Metadata is the gateway's to echo (and store); upstreams are not asked to keep anything.
  const meta = metadata(body.metadata);

  const params: ResponseParams = {
    instructions: instructions ?? null,
    max_output_tokens: maxOutput ?? null,
    metadata: meta,
    parallel_tool_calls: parallel ?? true,
    previous_response_id: previous ?? null,
    prompt_cache_key: cacheKey ?? null,
    reasoning,
    safety_identifier: safety ?? null,
    service_tier: serviceTier ?? "default",
    store,
    temperature: temperature ?? 1,
    text: { format },
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
    nativeOnly: needs.first,
    references: notes.references,
    messageParams: notes.paths,
  };
}
