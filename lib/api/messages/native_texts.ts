/**
 * Where the texts of a Messages body live, for a body passed through to a native target (Anthropic, Claude on
 * Bedrock): the texts the content rules read in the request's chat form (lib/policy/text_slots.ts), where the
 * Messages API keeps them, and those only a native target reads. One description serves the native body's
 * redaction and the deny rules' reading of what has no chat form:
 *
 * - `system` (a string, or its text blocks), a turn's string content and its `text` blocks (any role);
 * - a `document`'s text: a `text` source's `data`, a base64 source of `text/plain` decoded, a `content` source's
 *   string or text blocks (only a Claude target reads the last);
 * - a `tool_result`'s content: a string, or its text and document blocks.
 *
 * Left alone, as in the chat form: tool-use input, images, PDFs, and thinking blocks (their signature covers
 * their text, and the upstream refuses a changed one).
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { encodedTextSlot, stringSlot, TEXT_MEDIA_TYPE, type TextSlot } from "../../policy/text_slots.ts";

type Slots = (TextSlot | undefined)[];

function documentSlots(block: JsonObject, at: string, out: Slots): void {
  const source = block.source;
  if (!isObject(source)) return;
  if (source.type === "text") out.push(stringSlot(source, "data", `${at}.source.data`));
  else if (source.type === "base64" && typeof source.media_type === "string") {
    if (TEXT_MEDIA_TYPE.test(source.media_type)) {
      out.push(encodedTextSlot(source, "data", `${at}.source.data`, true));
    }
  } else if (source.type === "content") contentSlots(source, "content", `${at}.source.content`, out);
}

/** `holder[key]`: a string, or blocks whose texts, documents and tool results are read. */
function contentSlots(holder: JsonObject, key: string, at: string, out: Slots): void {
  const content = holder[key];
  if (typeof content === "string") {
    out.push(stringSlot(holder, key, at));
    return;
  }
  if (!Array.isArray(content)) return;
  content.forEach((block, j) => {
    if (!isObject(block)) return;
    const path = `${at}.${j}`;
    if (block.type === "text") out.push(stringSlot(block, "text", `${path}.text`));
    else if (block.type === "document") documentSlots(block, path, out);
    else if (block.type === "tool_result") contentSlots(block, "content", `${path}.content`, out);
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
