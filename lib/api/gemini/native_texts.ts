/**
 * Where the texts of a Gemini `generateContent` body live, for a body passed through to a `gemini` provider: the
 * texts the content rules read in the request's chat form (lib/policy/text_slots.ts), where the Gemini API keeps
 * them, and those only a Gemini target reads. One description serves the native body's redaction and the deny
 * rules' reading of what has no chat form:
 *
 * - a part's `text`, in `systemInstruction` and in every turn, a thought's too (a model turn's thoughts are left
 *   out of the chat form, yet the upstream reads them);
 * - an `inlineData` part of plain text (`text/plain`), its base64 decoded, as the chat form reads it as a
 *   plain-text document;
 * - a `functionResponse.response`, as the chat form's tool message holds it: its JSON text
 *   ({@linkcode responseSlot}); and a plain-text `inlineData` of its `parts`, as above.
 *
 * Left alone, as in the chat form: `functionCall.args` (tool-call arguments), images and other files. A file has
 * no name here: the Gemini API's `Blob` and `FileData` hold none (the `displayName` of Google's SDK types is
 * Vertex AI's, which those SDKs refuse to send to the Gemini API), so the chat form's `file` is named by the
 * gateway, a name no rule judges (lib/openai/placeholder_filenames.ts).
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { encodedTextSlot, stringSlot, TEXT_MEDIA_TYPE, type TextSlot } from "../../policy/text_slots.ts";

/**
 * A function response as the chat form's tool message reads it, `JSON.stringify(response)`: the rules run over
 * that JSON text, so keys, numbers and matches across values are caught here as there. A redacted text is
 * parsed back; when a replacement broke the JSON (a quote in it, a match across a value's end), the text the
 * translated model reads goes as the function's `output`, the key Google's docs name for it, so nothing a rule
 * matched reaches the upstream.
 */
function responseSlot(call: JsonObject, param: string): TextSlot {
  const write = (text: string) => {
    try {
      const parsed: unknown = JSON.parse(text);
      if (isObject(parsed)) return void (call.response = parsed);
    } catch {
      // Not JSON any more: sent as text below.
    }
    call.response = { output: text };
  };
  return { param, text: JSON.stringify(call.response ?? {}), write };
}

/** A part's `inlineData` of plain text, at `path` (the part's), as its decoded text. */
function inlineSlot(part: JsonObject, path: string, out: (TextSlot | undefined)[]): void {
  const data = part.inlineData;
  if (isObject(data) && typeof data.mimeType === "string" && TEXT_MEDIA_TYPE.test(data.mimeType)) {
    out.push(encodedTextSlot(data, "data", `${path}.inlineData.data`, true));
  }
}

function partSlots(content: unknown, at: string, out: (TextSlot | undefined)[]): void {
  if (!isObject(content) || !Array.isArray(content.parts)) return;
  content.parts.forEach((part, j) => {
    if (!isObject(part)) return;
    const path = `${at}.parts[${j}]`;
    if (typeof part.text === "string") out.push(stringSlot(part, "text", `${path}.text`));
    else if (isObject(part.functionResponse)) {
      const response = part.functionResponse;
      out.push(responseSlot(response, `${path}.functionResponse`));
      // Its media, which the chat form sends after the result: a plain-text file among them is read there too.
      if (Array.isArray(response.parts)) {
        response.parts.forEach((media, k) => {
          if (isObject(media)) inlineSlot(media, `${path}.functionResponse.parts[${k}]`, out);
        });
      }
    } else inlineSlot(part, path, out);
  });
}

/** The texts of a Gemini body (the client's, normalised, or the one a Gemini target gets), each at its param. */
export function geminiTexts(body: JsonObject): TextSlot[] {
  const out: (TextSlot | undefined)[] = [];
  partSlots(body.systemInstruction, "systemInstruction", out);
  if (Array.isArray(body.contents)) {
    body.contents.forEach((content, i) => partSlots(content, `contents[${i}]`, out));
  }
  return out.filter((slot) => slot !== undefined);
}
