/**
 * Where the texts of a Messages body live, for a body passed through to a native target (Anthropic, Claude on
 * Bedrock): the texts the content rules read in the request's chat form (lib/policy/text_slots.ts), where the
 * Messages API keeps them, and those only a native target reads. One description serves the native body's
 * redaction and the deny rules' reading of what has no chat form:
 *
 * - `system` (a string, or its blocks), a turn's string content, and its blocks' texts by their type
 *   ({@linkcode BLOCK_TEXTS}, the one list of them; any role):
 *   - a `text` block's text;
 *   - a `document`'s text: a `text` source's `data`, a base64 source of `text/plain` decoded, a `content`
 *     source's string or text blocks (only a Claude target reads the last); then its `title` and its `context`,
 *     which Claude reads with it;
 *   - a `search_result`'s `title` and its content's text blocks (only a Claude target reads one);
 *   - a `tool_result`'s content, and an MCP connector's `mcp_tool_result`'s: a string, or its blocks, read as a
 *     turn's (texts, documents, search results).
 *
 * Left alone, as in the chat form: tool-use input, images, PDFs, a search result's `source` (a URL or an
 * identifier, as a document's or an image's is), thinking blocks (their signature covers their text, and the
 * upstream refuses a changed one), and what Anthropic's own server tools ran and returned.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { encodedTextSlot, stringSlot, TEXT_MEDIA_TYPE, type TextSlot } from "../../policy/text_slots.ts";

type Slots = (TextSlot | undefined)[];

function documentSlots(block: JsonObject, at: string, out: Slots): void {
  const source = block.source;
  if (isObject(source)) {
    if (source.type === "text") out.push(stringSlot(source, "data", `${at}.source.data`));
    else if (source.type === "base64" && typeof source.media_type === "string") {
      if (TEXT_MEDIA_TYPE.test(source.media_type)) {
        out.push(encodedTextSlot(source, "data", `${at}.source.data`, true));
      }
    } else if (source.type === "content") contentSlots(source, "content", `${at}.source.content`, out);
  }
  out.push(stringSlot(block, "title", `${at}.title`), stringSlot(block, "context", `${at}.context`));
}

/** A block's content, as a turn's: a string, or blocks whose texts are read ({@linkcode BLOCK_TEXTS}). */
function blockContent(block: JsonObject, at: string, out: Slots): void {
  contentSlots(block, "content", `${at}.content`, out);
}

/**
 * Where a content block, by its `type`, keeps the texts a native target reads (see the module doc). The one list
 * of them: a block type not here has none.
 */
const BLOCK_TEXTS: ReadonlyMap<unknown, (block: JsonObject, at: string, out: Slots) => void> = new Map([
  ["text", (block: JsonObject, at: string, out: Slots) => out.push(stringSlot(block, "text", `${at}.text`))],
  ["document", documentSlots],
  ["search_result", (block: JsonObject, at: string, out: Slots) => {
    out.push(stringSlot(block, "title", `${at}.title`));
    blockContent(block, at, out);
  }],
  ["tool_result", blockContent],
  ["mcp_tool_result", blockContent],
]);

/** `holder[key]`: a string, or blocks whose texts are read ({@linkcode BLOCK_TEXTS}). */
function contentSlots(holder: JsonObject, key: string, at: string, out: Slots): void {
  const content = holder[key];
  if (typeof content === "string") {
    out.push(stringSlot(holder, key, at));
    return;
  }
  if (!Array.isArray(content)) return;
  content.forEach((block, j) => {
    if (isObject(block)) BLOCK_TEXTS.get(block.type)?.(block, `${at}.${j}`, out);
  });
}

/** The texts of a Messages body (the client's, or the one a native target gets), each at its param. */
export function messagesTexts(body: JsonObject): TextSlot[] {
  const out: Slots = [];
  contentSlots(body, "system", "system", out);
  if (Array.isArray(body.messages)) {
    body.messages.forEach((turn, i) => {
      if (isObject(turn)) contentSlots(turn, "content", `messages.${i}.content`, out);
    });
  }
  return out.filter((slot) => slot !== undefined);
}
