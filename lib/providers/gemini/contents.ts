/**
 * OpenAI chat `messages` → Gemini `contents` and `systemInstruction`, as pure functions: content parts (text,
 * images and files by URL or inline, audio), tool calls (their thought signatures restored from the ids the
 * gateway minted, or Google's placeholder for calls it did not) and tool results. Throws a 400 `GatewayError`
 * naming the part for anything Gemini cannot take.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { type GeminiContent, type GeminiPart, signatureFromToolCallId } from "./types.ts";
import { vendorMediaType } from "../shared/media_type.ts";
import { refuseNonFunctionCalls } from "../shared/history_tools.ts";
import { FOREIGN_CALL_SIGNATURE } from "../thought_signatures.ts";
import { type ChatMessage, isObject, type JsonObject } from "../../openai/types.ts";

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
    return { inlineData: { mimeType: vendorMediaType(data[1]), data: data[3] } };
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
  refuseNonFunctionCalls(calls, `messages[${i}]`, "Gemini");
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
 * Gives the first function call of each model turn {@linkcode FOREIGN_CALL_SIGNATURE} when it has no signature
 * of its own: the first is the one Gemini checks (parallel calls carry one signature, on the first).
 */
function signFirstCalls(contents: GeminiContent[]): void {
  for (const content of contents) {
    if (content.role !== "model") continue;
    const first = content.parts.find((p) => p.functionCall !== undefined);
    if (first !== undefined && first.thoughtSignature === undefined) {
      first.thoughtSignature = FOREIGN_CALL_SIGNATURE;
    }
  }
}

/**
 * OpenAI messages → Gemini `contents` and `systemInstruction`. System and developer messages (wherever they
 * are) become the system instruction; assistant → `model`; user and tool → `user`; consecutive turns of the
 * same role are merged, as Gemini expects alternating turns. A model turn's first function call without a
 * signature gets {@linkcode FOREIGN_CALL_SIGNATURE}. A request of system messages only (which OpenAI answers)
 * has them as its one user turn and no system instruction (as for `anthropic`, see `toAnthropicMessages`).
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
  signFirstCalls(contents);
  // Only system messages: Gemini refuses a request without contents, so the instructions are the user's turn.
  if (contents.length === 0 && system.some((p) => p.text?.trim())) {
    return { contents: [{ role: "user", parts: system }] };
  }
  return system.length > 0 ? { contents, systemInstruction: { parts: system } } : { contents };
}
