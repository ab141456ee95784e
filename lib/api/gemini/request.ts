/**
 * A Gemini API `generateContent` request (v1beta, what `@google/genai` and Gemini CLI send) validated and
 * translated to the gateway's chat form, under the tolerance rule (lib/http/tolerance.ts). The body is first
 * normalised (normalize.ts: Google's proto names, enum values in any case, a single value for a list), and that
 * body is the one a Gemini target gets, so what is read below is what Google reads.
 *
 * - `contents` (roles `user` and `model`): `text` parts; `inlineData` images as data URLs and other inline
 *   files as `file` parts; `fileData` images by URL; `functionCall` parts as tool calls (their `id`, else one
 *   made from the turn and part); `functionResponse` parts as tool messages, each answering a call of the model
 *   turn before it ({@linkcode OpenCalls}: by `id`, else by name), the media of their `parts` after them in a
 *   user message; a model turn's thought parts (`thought: true`, `thoughtSignature`) are its own state, left
 *   out; a user turn's text is text, whatever its `thought` flag. Any other part (a model turn's images, files
 *   and code execution too) is served by a Gemini target only, refused elsewhere.
 * - `systemInstruction` → a system message; `tools[].functionDeclarations` → function tools (`parameters`,
 *   Google's Schema, as JSON Schema: schema.ts; or `parametersJsonSchema` as written); built-in tools
 *   (`googleSearch`, `codeExecution`, `urlContext`, …) are served by a Gemini target, dropped for another;
 *   `toolConfig.functionCallingConfig` → `tool_choice` (a mode Google does not know is its 400).
 * - `generationConfig`: temperature, topP, topK, maxOutputTokens, stopSequences, candidateCount (1 only),
 *   seed, presence/frequency penalties (numbers, or strings of them as proto3 JSON writes them),
 *   `responseMimeType: application/json` with `responseSchema` or `responseJsonSchema` → `response_format`,
 *   `thinkingConfig` (`thinkingBudget`, `thinkingLevel` of Google's enum) → `reasoning_effort`
 *   (generation_config.ts). What a chat target cannot take (`safetySettings`, `responseModalities`, a
 *   `text/x.enum` response, non-text system parts, …) is dropped.
 * - `cachedContent` names content cached at Google: only a Gemini target can read it (refused elsewhere).
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { newTolerance, type Tolerance } from "../../http/tolerance.ts";
import { type ChatMessage, type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { placeholderNamed } from "../../openai/placeholder_filenames.ts";
import { bad, list, object, text } from "./fields.ts";
import { generation, type GenerationParams } from "./generation_config.ts";
import { normalizeGemini } from "./normalize.ts";
import { jsonSchemaOf } from "./schema.ts";

/** A validated Gemini request. */
export interface GeminiRequest {
  /** The chat form; `model` is the alias. */
  chat: ChatRequest;
  /** The client's body in the spelling the gateway reads (normalize.ts), for a Gemini target. */
  body: JsonObject;
  tolerance: Tolerance;
  /** Where each of the chat form's messages, and of its tools, came from in the client's body. */
  params: GeminiParams;
  /** `generationConfig.thinkingConfig.includeThoughts`: whether the answer shows the model's thoughts. */
  thoughts: boolean;
}

/** The client's paths of what the chat form holds, for errors in the client's terms (client_terms.ts). */
export interface GeminiParams extends GenerationParams {
  /** Per chat message: `systemInstruction`, `contents[i]`, or a function response's part. */
  messages: string[];
  /** Per chat tool: its `tools[i].functionDeclarations[j]`. */
  tools: string[];
}

const IMAGE = /^image\//;

/**
 * Notes a part only a Gemini target serves: the request goes to the alias's Gemini targets, or is refused
 * without one, since a translated target would answer without what the part holds.
 */
function geminiOnly(tolerance: Tolerance, path: string): null {
  tolerance.refusal ??= invalidRequest(
    `'${path}' is a part only Gemini targets serve, and this model's target is not one.`,
    path,
    "unsupported_value",
  );
  return null;
}

/**
 * A part's media (`inlineData`, `fileData`) as a chat content part: what a user turn and a function response's
 * `parts` hold. Anything else, or a file a chat target cannot read, is Gemini's alone ({@linkcode geminiOnly}).
 */
function mediaPart(part: JsonObject, path: string, tolerance: Tolerance): JsonObject | null {
  if (isObject(part.inlineData)) {
    const mime = text(part.inlineData.mimeType, `${path}.inlineData.mimeType`);
    const data = text(part.inlineData.data, `${path}.inlineData.data`);
    const url = `data:${mime};base64,${data}`;
    return IMAGE.test(mime)
      ? { type: "image_url", image_url: { url } }
      // Gemini's API names no file: the chat form's name is the gateway's, no text a rule judges.
      : { type: "file", file: placeholderNamed({ filename: "file", file_data: url }) };
  }
  if (isObject(part.fileData)) {
    const uri = text(part.fileData.fileUri, `${path}.fileData.fileUri`);
    const mime = typeof part.fileData.mimeType === "string" ? part.fileData.mimeType : "";
    // A file the model must read: by URL only an image reaches a chat target; Google's own files are Gemini's.
    if (IMAGE.test(mime) && /^https?:\/\//.test(uri)) return { type: "image_url", image_url: { url: uri } };
    tolerance.refusal ??= invalidRequest(
      `'${path}.fileData' is served only by Gemini targets, and this model's target is not one.`,
      `${path}.fileData`,
      "unsupported_value",
    );
    return null;
  }
  return geminiOnly(tolerance, path);
}

/** One part of a user turn as a chat content part, or null for a part the translation leaves out. */
function userPart(part: JsonObject, path: string, tolerance: Tolerance): JsonObject | null {
  // A user's text flagged as a thought is still text the client sends: a Gemini target gets it, so the policy
  // reads it, and a translated target too.
  if (typeof part.text === "string") return { type: "text", text: part.text };
  return mediaPart(part, path, tolerance);
}

/**
 * What a model turn's part holds besides its text and calls that the model must read in its history: its own
 * images and files, and the code the `codeExecution` tool ran with its result. A chat assistant message holds
 * text and calls only, so only a Gemini target serves these (text made of them would be words the model never
 * wrote); a thought part (an interim image too) is the model's own state, left out as its thought text is.
 */
const MODEL_MEDIA = ["inlineData", "fileData", "executableCode", "codeExecutionResult"];

/**
 * The calls of the latest model turn that made some, not answered yet: each name's in the order they were made,
 * with its id (its own, or the one the translation made). A function response answers the call its `id` names;
 * one without an `id`, or with an id of no call, answers the oldest open call of its name. That pairs Google's
 * documented loop (the model's turn sent back with its call ids, the responses without), parallel calls of one
 * name answered in order, and Gemini CLI's responses, whose ids the CLI made itself and the model's calls never
 * carried. The tool message gets the call's id, which the chat form's targets require it to answer.
 */
class OpenCalls {
  #byName = new Map<string, string[]>();

  /** A model turn's calls, `[name, id]` in order: they replace the previous turn's. */
  turn(calls: readonly (readonly [string, string])[]): void {
    this.#byName.clear();
    for (const [name, id] of calls) this.#byName.set(name, [...this.#byName.get(name) ?? [], id]);
  }

  /** The id of the call a response of `name` (with its own `id`, if any) answers; that call is answered. */
  answer(name: string, id: string | undefined): string {
    if (id !== undefined) {
      for (const ids of this.#byName.values()) {
        const at = ids.indexOf(id);
        if (at >= 0) return ids.splice(at, 1)[0];
      }
    }
    // The oldest open call of its name; with none, the response answers nothing the chat form holds and keeps
    // its own id (or one made from its name).
    return this.#byName.get(name)?.shift() ?? id ?? `call_${name}`;
  }
}

/** The chat messages of the `contents`; `paths` gets where each came from. */
function messagesOf(contents: unknown[], tolerance: Tolerance, paths: string[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const open = new OpenCalls();
  contents.forEach((value, i) => {
    const path = `contents[${i}]`;
    const content = object(value, path);
    const role = content.role ?? "user";
    if (role !== "user" && role !== "model" && role !== "function") {
      throw bad(`${path}.role`, "must be 'user' or 'model'.");
    }
    const parts = list(content.parts ?? [], `${path}.parts`);
    if (role === "model") {
      const texts: string[] = [];
      const calls: JsonObject[] = [];
      const named: [string, string][] = [];
      parts.forEach((p, j) => {
        const part = object(p, `${path}.parts[${j}]`);
        if (typeof part.text === "string" && part.thought !== true) texts.push(part.text);
        else if (part.thought !== true && MODEL_MEDIA.some((key) => part[key] != null)) {
          geminiOnly(tolerance, `${path}.parts[${j}]`);
        } else if (isObject(part.functionCall)) {
          const call = part.functionCall;
          const name = text(call.name, `${path}.parts[${j}].functionCall.name`);
          const id = typeof call.id === "string" ? call.id : `call_${i}_${j}`;
          named.push([name, id]);
          calls.push({
            id,
            type: "function",
            function: { name, arguments: JSON.stringify(call.args ?? {}) },
          });
        }
      });
      if (named.length > 0) open.turn(named);
      if (texts.length === 0 && calls.length === 0) return;
      const message: ChatMessage = { role: "assistant", content: texts.length > 0 ? texts.join("") : null };
      if (calls.length > 0) message.tool_calls = calls;
      out.push(message);
      paths.push(path);
      return;
    }
    const userParts: JsonObject[] = [];
    const returned: JsonObject[] = [];
    parts.forEach((p, j) => {
      const at = `${path}.parts[${j}]`;
      const part = object(p, at);
      if (isObject(part.functionResponse)) {
        const response = part.functionResponse;
        const name = text(response.name, `${at}.functionResponse.name`);
        const id = open.answer(name, typeof response.id === "string" ? response.id : undefined);
        out.push({ role: "tool", tool_call_id: id, content: JSON.stringify(response.response ?? {}) });
        paths.push(`${at}.functionResponse`);
        // A multimodal response's media (Gemini CLI's `read_file` of an image): a chat tool message carries
        // text only, so they follow the results in a user message, as the Messages API sends a tool result's.
        const media = list(response.parts ?? [], `${at}.functionResponse.parts`);
        media.forEach((m, k) => {
          const where = `${at}.functionResponse.parts[${k}]`;
          const translated = mediaPart(object(m, where), where, tolerance);
          if (translated !== null) returned.push(translated);
        });
        return;
      }
      const translated = userPart(part, at, tolerance);
      if (translated !== null) userParts.push(translated);
    });
    if (returned.length > 0) {
      out.push({ role: "user", content: [{ type: "text", text: "(returned by the tool)" }, ...returned] });
      paths.push(path);
    }
    if (userParts.length === 0) return;
    const onlyText = userParts.every((p) => p.type === "text");
    out.push({
      role: "user",
      content: onlyText ? userParts.map((p) => p.text as string).join("") : userParts,
    });
    paths.push(path);
  });
  return out;
}

/** The chat tools of the `tools`, each with its path; built-in tools are noted for a Gemini target. */
function toolsOf(tools: unknown[], tolerance: Tolerance, paths: Map<JsonObject, string>): JsonObject[] {
  const out: JsonObject[] = [];
  tools.forEach((value, i) => {
    const tool = object(value, `tools[${i}]`);
    for (const key of Object.keys(tool)) {
      if (key !== "functionDeclarations") tolerance.native.push(`tools[${i}].${key}`);
    }
    const declarations = tool.functionDeclarations === undefined
      ? []
      : list(tool.functionDeclarations, `tools[${i}]`);
    declarations.forEach((d, j) => {
      const at = `tools[${i}].functionDeclarations[${j}]`;
      const declaration = object(d, at);
      const fn: JsonObject = { name: text(declaration.name, `${at}.name`) };
      if (typeof declaration.description === "string") fn.description = declaration.description;
      // A JSON Schema goes as the client wrote it; Google's own Schema is made one (schema.ts).
      if (declaration.parametersJsonSchema != null) {
        fn.parameters = object(declaration.parametersJsonSchema, `${at}.parametersJsonSchema`);
      } else if (declaration.parameters != null) {
        fn.parameters = jsonSchemaOf(object(declaration.parameters, `${at}.parameters`));
      }
      const chatTool = { type: "function", function: fn };
      paths.set(chatTool, at);
      out.push(chatTool);
    });
  });
  return out;
}

/** Google's `FunctionCallingConfig.Mode` values (normalize.ts wrote them in upper case). */
const MODES = ["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"];

/**
 * `toolConfig.functionCallingConfig` as `tool_choice`, applied to `chat`. `ANY` forces a call; `VALIDATED`, as
 * Google defines it, lets the model answer with a call or in text (`auto`). `allowedFunctionNames` bounds what
 * either may call: only those tools stay in the chat form, and under `ANY` one name forces that function.
 */
function applyToolChoice(config: unknown, chat: ChatRequest): void {
  if (!isObject(config) || !isObject(config.functionCallingConfig)) return;
  const { mode, allowedFunctionNames } = config.functionCallingConfig;
  // Google refuses a mode it does not know; read as AUTO, it would change the answer unseen.
  if (mode != null && !MODES.includes(mode as string)) {
    throw bad("toolConfig.functionCallingConfig.mode", `expected one of ${MODES.join(", ")}.`);
  }
  const tools = Array.isArray(chat.tools) ? chat.tools as JsonObject[] : undefined;
  if (tools === undefined) return;
  if (mode === "NONE") chat.tool_choice = "none";
  else if (mode === "ANY" || mode === "VALIDATED") {
    const path = "toolConfig.functionCallingConfig.allowedFunctionNames";
    const names = allowedFunctionNames == null
      ? []
      : list(allowedFunctionNames, path).map((n, i) => text(n, `${path}[${i}]`));
    if (names.length > 0) {
      const allowed = tools.filter((t) =>
        names.includes(String((t.function as JsonObject | undefined)?.name))
      );
      if (allowed.length === 0) throw bad(path, "names no function declared in 'tools'.");
      chat.tools = allowed;
    }
    chat.tool_choice = mode === "VALIDATED"
      ? "auto"
      : names.length === 1
      ? { type: "function", function: { name: names[0] } }
      : "required";
  } else chat.tool_choice = "auto";
}

/** Whether a content (an object: `messagesOf` checked it) holds a part with anything in it. */
function hasPart(content: unknown): boolean {
  const parts = (content as JsonObject).parts;
  const all = Array.isArray(parts) ? parts : [];
  return all.some((part) => isObject(part) && Object.values(part).some((value) => value != null));
}

/** The top-level fields the translation reads; any other is the tolerance rule's. */
const KNOWN = new Set(["contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "model"]);

/** Validates a `generateContent` body for `alias` and translates it to the chat form. */
export function parseGeminiRequest(input: unknown, alias: string, stream: boolean): GeminiRequest {
  const body = normalizeGemini(object(input, "body"), "GenerateContentRequest");
  const tolerance = newTolerance();
  for (const key of Object.keys(body)) {
    if (KNOWN.has(key) || body[key] == null) continue;
    if (key === "cachedContent") {
      tolerance.refusal ??= invalidRequest(
        "'cachedContent' is content cached at Google: served only by Gemini targets, and this model's target " +
          "is not one.",
        "cachedContent",
        "unsupported_value",
      );
    } else tolerance.dropped.push(key);
  }
  const messages: ChatMessage[] = [];
  const params: GeminiParams = { messages: [], tools: [] };
  if (body.systemInstruction != null) {
    const instruction = object(body.systemInstruction, "systemInstruction");
    const parts = list(instruction.parts ?? [], "systemInstruction.parts");
    const texts: string[] = [];
    parts.forEach((p, i) => {
      const at = `systemInstruction.parts[${i}]`;
      const part = object(p, at);
      // Google documents system instructions as text only: a translated target gets the texts, and the
      // client learns which other parts it went without.
      if (part.text == null) tolerance.dropped.push(at);
      else texts.push(text(part.text, `${at}.text`));
    });
    const system = texts.join("\n");
    if (system !== "") {
      messages.push({ role: "system", content: system });
      params.messages.push("systemInstruction");
    }
  }
  const contents = list(body.contents ?? [], "contents");
  messages.push(...messagesOf(contents, tolerance, params.messages));
  // Judged on the client's own contents: a prompt of parts only Gemini serves (a Files API upload, a gs:// or
  // YouTube URI) translates to no chat message, yet a Gemini target serves it; any other target cannot.
  if (!contents.some(hasPart)) throw bad("contents", "must hold at least one content.");
  if (!messages.some((m) => m.role !== "system")) {
    tolerance.refusal ??= invalidRequest(
      "'contents' holds only parts Gemini targets serve, and this model's target is not one.",
      "contents",
      "unsupported_value",
    );
  }
  const chat: ChatRequest = { model: alias, messages };
  if (stream) chat.stream = true;
  const toolPaths = new Map<JsonObject, string>();
  if (body.tools != null) {
    const tools = toolsOf(list(body.tools, "tools"), tolerance, toolPaths);
    if (tools.length > 0) chat.tools = tools;
  }
  applyToolChoice(body.toolConfig, chat);
  // After the tool choice, which may have left only the allowed functions.
  params.tools = ((chat.tools ?? []) as JsonObject[]).map((tool) => toolPaths.get(tool) ?? "tools");
  const config = body.generationConfig;
  if (config != null) generation(config, chat, tolerance, params);
  const thinking = isObject(config) ? config.thinkingConfig : undefined;
  return { chat, body, tolerance, params, thoughts: isObject(thinking) && thinking.includeThoughts === true };
}
