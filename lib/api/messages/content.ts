/**
 * A Messages request's `system` and `messages` as chat messages: what translated targets get, and what policy
 * (content rules, token estimates) reads for every target.
 *
 * - `system` (a string or text blocks) → one system message, the blocks' texts joined by a blank line; a
 *   `system` turn inside `messages` (Claude Code sends them) → a system message in its place, of its text
 *   blocks; its `tool_addition` / `tool_removal` blocks are noted for the chat request's tools (tool_changes.ts).
 * - A user turn's `text` and `image` blocks → a user message's parts (`image_url`: a data URL for base64, the
 *   URL itself for a url source); `document` blocks with a base64 or plain-text source → `file` parts (a
 *   target that takes no files refuses them with its own 400; the `title` is the filename), each after a text
 *   part of its `context`, if any, which Anthropic's model reads too. A base64 source's `media_type` must be one
 *   Anthropic takes (JPEG, PNG, GIF, WebP images; PDF documents), as Anthropic refuses others with a 400.
 * - `tool_result` blocks → `tool` messages (first, as Anthropic requires them first in their turn), content a
 *   string or the result's text blocks joined (a `tool_reference`, tool search's answer, as text naming the
 *   tool); a result's images follow in a user message of their own (chat
 *   tool messages carry no images); `is_error: true` prefixes the text with `Error: ` (the chat form has no
 *   flag for it).
 * - An assistant turn's `text` → its content, `tool_use` → `tool_calls` (input as JSON arguments); its
 *   `thinking` blocks' text → its `reasoning_content` (joined by a blank line), as the Responses translation
 *   carries a `reasoning` item back: DeepSeek's thinking mode and Kimi K2 refuse a tool loop's next turn
 *   without the reasoning of the turn that called the tools, and a Messages client sends it back only as a
 *   thinking block (the gateway shows a chat upstream's reasoning as one). Claude's own thinking text goes too:
 *   it is what the model reasoned, readable, and shown to the client already; a fallback from Claude to such a
 *   target needs it as much. The blocks themselves are dropped (counted in the notes): a signature means
 *   something only to Claude, and a `redacted_thinking` block (encrypted) or a thinking block with no text
 *   (`display: "omitted"`) holds nothing a chat target can read. Vendor adapters that build their own bodies
 *   (Gemini, Bedrock) never read `reasoning_content`.
 * - `cache_control` is checked and dropped, and named as dropped: a caching hint changes no answer, but it
 *   changes what the request costs, which the client is told (the chat form names a marker a target goes
 *   without the same way).
 *
 * Content only a Claude target can read (other block types, document sources, citations) and fields this
 * translation does not know are not refused here, since a native target passes the body through as sent: they
 * are noted in the request's tolerance (lib/http/tolerance.ts). Content the model must read goes to Claude
 * targets only (a 400 when the alias has none: a translated target would answer without it); an unknown field
 * is dropped for a translated target, which the answer says.
 *
 * @module
 */
import { type ChatMessage, isObject, type JsonObject } from "../../openai/types.ts";
import { encodeUtf8Base64 } from "../../encoding/utf8_base64.ts";
import { placeholderNamed } from "../../openai/placeholder_filenames.ts";
import type { Tolerance } from "../../http/tolerance.ts";
import { readToolChange, type ToolChange } from "./tool_changes.ts";
import {
  arrayField,
  booleanField,
  checkCacheControl,
  claudeOnly as claudeOnlyIn,
  fieldError,
  stringField,
  wrongType,
} from "./validate.ts";

/**
 * What the translation noticed: history thinking dropped, and what a translated target does not get (see
 * lib/http/tolerance.ts): what only Claude serves, and fields this translation does not know.
 */
export interface ContentNotes {
  droppedThinking: number;
  tolerance: Tolerance;
  /** The `system` turns' tool changes, in order, for the chat request's tools (tool_changes.ts). */
  toolChanges: ToolChange[];
}

/** Notes content only a Claude target can read: see `claudeOnly` in validate.ts. */
function claudeOnly(notes: ContentNotes, path: string, what: string): void {
  claudeOnlyIn(notes.tolerance, path, what);
}

/** Notes every field of `object` outside `known`: a translated target goes without them. */
export function extraFields(
  object: JsonObject,
  known: ReadonlySet<string>,
  path: string,
  notes: ContentNotes,
): void {
  for (const key of Object.keys(object)) {
    if (!known.has(key)) notes.tolerance.dropped.push(path === "" ? key : `${path}.${key}`);
  }
}

/** Notes the fields of `block` outside `known`, and its `cache_control` (checked), which no chat form carries. */
function fields(block: JsonObject, known: string[], path: string, notes: ContentNotes): void {
  extraFields(block, new Set([...known, "type", "cache_control"]), path, notes);
  cacheMarker(block, path, notes.tolerance);
}

/**
 * Checks `holder`'s `cache_control` (at `path`) and notes it as dropped: a translated target gets no prompt-caching
 * marker (Anthropic's and Bedrock's Claude get the body natively), so the client is told its breakpoint was not
 * applied, as the chat form's markers are named where a target goes without them.
 */
export function cacheMarker(holder: JsonObject, path: string, tolerance: Tolerance): void {
  const at = path === "" ? "cache_control" : `${path}.cache_control`;
  checkCacheControl(holder.cache_control, at);
  if (holder.cache_control != null) tolerance.dropped.push(at);
}

/** A text block's text (`citations` are accepted: Anthropic's answers carry them back in history). */
function textOf(block: JsonObject, path: string, notes: ContentNotes): string {
  fields(block, ["text", "citations"], path, notes);
  return stringField(block, "text", `${path}.text`, true)!;
}

/** The media types Anthropic takes in base64 sources: anything else is its 400, as at Anthropic. */
const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"];
const DOCUMENT_TYPES = ["application/pdf"];

/** A base64 source's `media_type`, one of `allowed` (it goes into a data URL, so nothing else may pass). */
function mediaType(source: JsonObject, path: string, allowed: readonly string[]): string {
  const media = stringField(source, "media_type", `${path}.source.media_type`, true)!;
  if (!allowed.includes(media)) {
    throw fieldError(
      `${path}.source.media_type`,
      `Input should be ${allowed.map((t) => `'${t}'`).join(", ")}.`,
    );
  }
  return media;
}

/** An `image` block as an `image_url` part, or null for a source only Claude serves. */
function imagePart(block: JsonObject, path: string, notes: ContentNotes): JsonObject | null {
  fields(block, ["source"], path, notes);
  const source = block.source;
  if (!isObject(source)) throw wrongType(`${path}.source`, "an object", source);
  if (source.type === "base64") {
    const media = mediaType(source, path, IMAGE_TYPES);
    const data = stringField(source, "data", `${path}.source.data`, true)!;
    return { type: "image_url", image_url: { url: `data:${media};base64,${data}` } };
  }
  if (source.type === "url") {
    const url = stringField(source, "url", `${path}.source.url`, true)!;
    return { type: "image_url", image_url: { url } };
  }
  claudeOnly(notes, `${path}.source.type`, `An image source of type '${String(source.type)}'`);
  return null;
}

/**
 * A `document` block as a `file` part (base64 or plain text), after a text part of its `context` when it has
 * one (Anthropic passes a document's context to the model, so a translated target's model reads it too, just
 * before the file it is about); no parts for what only Claude serves.
 */
function documentParts(block: JsonObject, path: string, notes: ContentNotes): JsonObject[] {
  fields(block, ["source", "title", "context", "citations"], path, notes);
  const source = block.source;
  if (!isObject(source)) throw wrongType(`${path}.source`, "an object", source);
  if (isObject(block.citations) && block.citations.enabled === true) {
    claudeOnly(notes, `${path}.citations`, "Citations");
  }
  const title = stringField(block, "title", `${path}.title`);
  const context = stringField(block, "context", `${path}.context`);
  // The title is the file's name, judged as the client's text; an untitled document gets one of the gateway's,
  // which is not (lib/openai/placeholder_filenames.ts).
  const named = (fileData: string): JsonObject => ({
    type: "file",
    file: title === undefined
      ? placeholderNamed({ filename: "document", file_data: fileData })
      : { filename: title, file_data: fileData },
  });
  let file: JsonObject;
  if (source.type === "base64") {
    const media = mediaType(source, path, DOCUMENT_TYPES);
    const data = stringField(source, "data", `${path}.source.data`, true)!;
    file = named(`data:${media};base64,${data}`);
  } else if (source.type === "text") {
    const data = stringField(source, "data", `${path}.source.data`, true)!;
    file = named(`data:text/plain;base64,${encodeUtf8Base64(data)}`);
  } else {
    claudeOnly(notes, `${path}.source.type`, `A document source of type '${String(source.type)}'`);
    return [];
  }
  if (context === undefined) return [file];
  const about = title === undefined ? "the document that follows" : `the document that follows (${title})`;
  return [{ type: "text", text: `Context of ${about}: ${context}` }, file];
}

/**
 * A `tool_reference` block of a tool result (what tool search answers: a tool the model may now call) as text
 * naming the tool. Anthropic loads the named tool's deferred definition; a translated target was sent every
 * tool of `tools` in full (`defer_loading` is dropped), so the name is all it needs.
 */
function toolReferenceText(block: JsonObject, path: string, notes: ContentNotes): string {
  fields(block, ["tool_name"], path, notes);
  return `Tool available: ${stringField(block, "tool_name", `${path}.tool_name`, true)!}`;
}

/** A `tool_result` block's content: its text, and its images and documents (sent after it). */
function toolResult(
  block: JsonObject,
  path: string,
  notes: ContentNotes,
): { id: string; text: string; media: JsonObject[] } {
  fields(block, ["tool_use_id", "content", "is_error"], path, notes);
  const id = stringField(block, "tool_use_id", `${path}.tool_use_id`, true)!;
  const isError = booleanField(block, "is_error", `${path}.is_error`) ?? false;
  const content = block.content;
  const texts: string[] = [];
  const media: JsonObject[] = [];
  if (typeof content === "string") texts.push(content);
  else if (Array.isArray(content)) {
    content.forEach((part, k) => {
      const at = `${path}.content.${k}`;
      if (!isObject(part)) throw wrongType(at, "an object", part);
      if (part.type === "text") texts.push(textOf(part, at, notes));
      else if (part.type === "image") {
        const image = imagePart(part, at, notes);
        if (image !== null) media.push(image);
      } else if (part.type === "document") media.push(...documentParts(part, at, notes));
      else if (part.type === "tool_reference") texts.push(toolReferenceText(part, at, notes));
      else claudeOnly(notes, `${at}.type`, `A tool result block of type '${String(part.type)}'`);
    });
  } else if (content !== undefined && content !== null) {
    throw wrongType(`${path}.content`, "a valid string or a list of blocks", content);
  }
  const text = texts.join("\n");
  return { id, text: isError ? `Error: ${text}` : text, media };
}

/** The fields of a turn. */
const TURN_FIELDS = new Set(["role", "content"]);

/**
 * A `system` turn's content as one system message's text: its text blocks, and its tool changes (noted for the
 * chat request's tools, tool_changes.ts). Another block type is what only Claude may take.
 */
function systemTurnText(content: unknown, notes: ContentNotes, at: string): string {
  if (!Array.isArray(content)) return systemText(content, notes, at);
  const texts: string[] = [];
  content.forEach((block, i) => {
    const path = `${at}.${i}`;
    if (!isObject(block)) throw wrongType(path, "an object", block);
    if (block.type === "text") texts.push(textOf(block, path, notes));
    else if (block.type === "tool_addition" || block.type === "tool_removal") {
      fields(block, ["tool"], path, notes);
      const change = readToolChange(block, path, notes.tolerance);
      if (change !== null) notes.toolChanges.push(change);
    } else claudeOnly(notes, `${path}.type`, `A system turn block of type '${String(block.type)}'`);
  });
  return texts.join("\n\n");
}

/** The `system` parameter (or a system turn's content, at `at`) as one system message's text. */
export function systemText(system: unknown, notes: ContentNotes, at = "system"): string {
  if (typeof system === "string") return system;
  if (!Array.isArray(system)) throw wrongType(at, "a valid string or a list of text blocks", system);
  return system.map((block, i) => {
    const path = `${at}.${i}`;
    if (!isObject(block)) throw wrongType(path, "an object", block);
    if (block.type !== "text") throw fieldError(`${path}.type`, "Input should be 'text'.");
    return textOf(block, path, notes);
  }).join("\n\n");
}

/**
 * The chat messages of one Messages turn, pushed onto `out` with their client params onto `params`
 * (`messages.<i>.content`, `messages.<i>.content.<j>` for a tool result).
 */
export function turnMessages(
  turn: unknown,
  i: number,
  out: ChatMessage[],
  params: string[],
  notes: ContentNotes,
): void {
  const path = `messages.${i}`;
  if (!isObject(turn)) throw wrongType(path, "an object", turn);
  extraFields(turn, TURN_FIELDS, path, notes);
  const role = turn.role;
  if (role === "system") {
    // A system turn inside the conversation (Claude Code's mid-conversation instructions): a system message,
    // unless it holds tool changes alone.
    const text = systemTurnText(turn.content, notes, `${path}.content`);
    if (text === "" && Array.isArray(turn.content) && turn.content.length > 0) return;
    out.push({ role: "system", content: text });
    params.push(`${path}.content`);
    return;
  }
  if (role !== "user" && role !== "assistant") {
    throw fieldError(`${path}.role`, "Input should be 'user', 'assistant' or 'system'.");
  }
  const content = turn.content;
  if (typeof content === "string") {
    out.push({ role, content });
    params.push(`${path}.content`);
    return;
  }
  const blocks = arrayField(turn, "content", `${path}.content`);
  if (blocks === undefined) throw fieldError(`${path}.content`, "Field required");
  if (role === "assistant") return assistantMessage(blocks, path, out, params, notes);
  if (blocks.length === 0) throw fieldError(`${path}.content`, "List should have at least 1 item.");

  const parts: JsonObject[] = [];
  const followUp: JsonObject[] = [];
  blocks.forEach((block, j) => {
    const at = `${path}.content.${j}`;
    if (!isObject(block)) throw wrongType(at, "an object", block);
    let part: JsonObject | null = null;
    switch (block.type) {
      case "text":
        part = { type: "text", text: textOf(block, at, notes) };
        break;
      case "image":
        part = imagePart(block, at, notes);
        break;
      case "document":
        parts.push(...documentParts(block, at, notes));
        break;
      case "tool_result": {
        const result = toolResult(block, at, notes);
        out.push({ role: "tool", tool_call_id: result.id, content: result.text });
        params.push(at);
        followUp.push(...result.media);
        break;
      }
      case "tool_use":
      case "thinking":
      case "redacted_thinking":
        throw fieldError(`${at}.type`, `A '${block.type}' block belongs in an assistant turn.`);
      default:
        claudeOnly(notes, `${at}.type`, `A content block of type '${String(block.type)}'`);
    }
    if (part !== null) parts.push(part);
  });
  if (followUp.length > 0) {
    out.push({ role: "user", content: [{ type: "text", text: "(returned by the tool)" }, ...followUp] });
    params.push(`${path}.content`);
  }
  if (parts.length > 0) {
    out.push({ role: "user", content: parts });
    params.push(`${path}.content`);
  }
}

function assistantMessage(
  blocks: unknown[],
  path: string,
  out: ChatMessage[],
  params: string[],
  notes: ContentNotes,
): void {
  const texts: string[] = [];
  const calls: JsonObject[] = [];
  const reasoning: string[] = [];
  blocks.forEach((block, j) => {
    const at = `${path}.content.${j}`;
    if (!isObject(block)) throw wrongType(at, "an object", block);
    switch (block.type) {
      case "text":
        texts.push(textOf(block, at, notes));
        break;
      case "tool_use": {
        fields(block, ["id", "name", "input"], at, notes);
        const id = stringField(block, "id", `${at}.id`, true)!;
        const name = stringField(block, "name", `${at}.name`, true)!;
        if (!isObject(block.input)) throw wrongType(`${at}.input`, "a valid dictionary", block.input);
        calls.push({ id, type: "function", function: { name, arguments: JSON.stringify(block.input) } });
        break;
      }
      case "thinking": {
        const thought = stringField(block, "thinking", `${at}.thinking`, true)!;
        if (thought !== "") reasoning.push(thought);
        notes.droppedThinking++;
        break;
      }
      case "redacted_thinking":
        stringField(block, "data", `${at}.data`, true);
        notes.droppedThinking++;
        break;
      default:
        claudeOnly(notes, `${at}.type`, `A content block of type '${String(block.type)}'`);
    }
  });
  // A turn of thinking alone (or an empty prefill) gives a chat target nothing to read.
  if (texts.length === 0 && calls.length === 0) return;
  const message: ChatMessage = { role: "assistant", content: texts.length > 0 ? texts.join("") : null };
  if (calls.length > 0) message.tool_calls = calls;
  if (reasoning.length > 0) message.reasoning_content = reasoning.join("\n\n");
  out.push(message);
  params.push(`${path}.content`);
}
