/**
 * The texts of a request a rule or guardrail reads and may rewrite in place, each with the request parameter
 * it sits at: string message contents and text parts of array contents (any role: system prompts, tool
 * results), plain-text documents (`file` parts of `text/plain` data), every file's name as the client wrote it
 * (`file.filename`: a Messages document's `title` in the chat form), what an earlier assistant turn said
 * besides its content (`reasoning_content`, `refusal`, refusal parts: each is sent back to the model as the
 * conversation's history), optionally assistant tool-call arguments (a legacy `function_call`'s too, a custom
 * tool call's input), and the strings of an embeddings or moderations `input` (a moderation's `text` parts
 * too). A request of the Responses, Messages or Gemini API is read in its chat form, where its instructions
 * are a system message and a Responses `reasoning` item's text is the next assistant message's
 * `reasoning_content`.
 *
 * @module
 */
import { type Endpoint, isChatFormEndpoint } from "../config/schema.ts";
import { isObject, type JsonObject } from "../openai/types.ts";
import { decodeUtf8Base64, encodeUtf8Base64 } from "../encoding/utf8_base64.ts";
import { hasPlaceholderName } from "../openai/placeholder_filenames.ts";

/** One text of a request, with the request parameter it sits at and a way to replace it in place. */
export interface TextSlot {
  readonly param: string;
  text: string;
  write(text: string): void;
}

function chatSlots(body: JsonObject, toolArguments: boolean): TextSlot[] {
  const slots: TextSlot[] = [];
  const messages = body.messages;
  if (!Array.isArray(messages)) return slots;
  messages.forEach((message: unknown, i) => {
    if (!isObject(message)) return;
    const content = message.content;
    if (typeof content === "string") {
      slots.push({ param: `messages[${i}].content`, text: content, write: (t) => message.content = t });
    } else if (Array.isArray(content)) {
      content.forEach((part: unknown, j) => {
        if (!isObject(part)) return;
        if (typeof part.text === "string") {
          slots.push({
            param: `messages[${i}].content[${j}].text`,
            text: part.text,
            write: (t) => part.text = t,
          });
        } else if (part.type === "refusal" && typeof part.refusal === "string") {
          // An assistant turn's refusal part, forwarded with the history like a text part.
          slots.push({
            param: `messages[${i}].content[${j}].refusal`,
            text: part.refusal,
            write: (t) => part.refusal = t,
          });
        } else slots.push(...fileSlots(part, `messages[${i}].content[${j}].file`));
      });
    }
    // What an assistant turn said besides its content (the answer side's SAID fields, lib/guardrails/output.ts):
    // a client re-sends it as history, and the model reads it as any other text of the conversation.
    for (const field of ["reasoning_content", "refusal"] as const) {
      const said = message[field];
      if (typeof said !== "string") continue;
      slots.push({ param: `messages[${i}].${field}`, text: said, write: (t) => message[field] = t });
    }
    if (!toolArguments) return;
    // The deprecated single `function_call` is forwarded as a tool call is: one more call's arguments.
    const legacy = isObject(message.function_call) ? message.function_call : undefined;
    if (legacy !== undefined && typeof legacy.arguments === "string") {
      slots.push({
        param: `messages[${i}].function_call.arguments`,
        text: legacy.arguments,
        write: (t) => legacy.arguments = t,
      });
    }
    if (!Array.isArray(message.tool_calls)) return;
    message.tool_calls.forEach((call: unknown, j) => {
      const fn = isObject(call) ? call.function : undefined;
      if (isObject(fn) && typeof fn.arguments === "string") {
        slots.push({
          param: `messages[${i}].tool_calls[${j}].function.arguments`,
          text: fn.arguments,
          write: (t) => fn.arguments = t,
        });
      }
      // A custom tool's call carries its input as raw text where a function call has its arguments.
      const custom = isObject(call) ? call.custom : undefined;
      if (isObject(custom) && typeof custom.input === "string") {
        slots.push({
          param: `messages[${i}].tool_calls[${j}].custom.input`,
          text: custom.input,
          write: (t) => custom.input = t,
        });
      }
    });
  });
  return slots;
}

/** A `data:` URL of plain text (Anthropic's text documents become one), its base64 payload after the comma. */
const TEXT_DATA_URL = /^data:text\/plain(?:;charset=utf-8)?;base64,/i;

/** A media type of plain text, as {@linkcode TEXT_DATA_URL} takes it (a Gemini `inlineData` part's `mimeType`). */
export const TEXT_MEDIA_TYPE = /^text\/plain(?:;charset=utf-8)?$/i;

/** `holder[key]` as a slot when it is a string. */
export function stringSlot(holder: JsonObject, key: string, param: string): TextSlot | undefined {
  const text = holder[key];
  if (typeof text !== "string") return undefined;
  return { param, text, write: (t) => holder[key] = t };
}

/**
 * `holder[key]` as a slot of the text it encodes when it is a plain-text `data:` URL (`data:text/plain;base64,…`),
 * or, with `bare`, plain base64 of UTF-8 text: the model reads a plain-text document as it reads a message, so
 * rules and guardrails read it too. Written back encoded the same way.
 */
export function encodedTextSlot(
  holder: JsonObject,
  key: string,
  param: string,
  bare = false,
): TextSlot | undefined {
  const data = holder[key];
  if (typeof data !== "string") return undefined;
  const prefix = bare ? "" : TEXT_DATA_URL.exec(data)?.[0];
  if (prefix === undefined) return undefined;
  const text = decodeUtf8Base64(data.slice(prefix.length));
  if (text === null) return undefined;
  return { param, text, write: (t) => holder[key] = `${prefix}${encodeUtf8Base64(t)}` };
}

/**
 * A `file` part's texts, at `param` (its `file`'s): a plain-text document's (`data:text/plain;base64,…`) decoded
 * text, and the file's name, which the model reads with it (OpenAI passes it on, Anthropic shows it as the
 * document's title), whatever the file holds. A name the gateway gave a file the client sent unnamed is no text
 * of the client's (lib/openai/placeholder_filenames.ts).
 */
function fileSlots(part: JsonObject, param: string): TextSlot[] {
  const file = part.type === "file" && isObject(part.file) ? part.file : undefined;
  if (file === undefined) return [];
  const slots = [encodedTextSlot(file, "file_data", `${param}.file_data`)];
  if (!hasPlaceholderName(file)) slots.push(stringSlot(file, "filename", `${param}.filename`));
  return slots.filter((slot) => slot !== undefined);
}

function inputSlots(body: JsonObject): TextSlot[] {
  const input = body.input;
  if (typeof input === "string") return [{ param: "input", text: input, write: (t) => body.input = t }];
  if (!Array.isArray(input)) return [];
  const slots: TextSlot[] = [];
  input.forEach((item: unknown, i) => {
    if (typeof item === "string") {
      slots.push({
        param: `input[${i}]`,
        text: item,
        write: (t) => input[i] = t,
      });
    } else if (isObject(item) && item.type === "text" && typeof item.text === "string") {
      slots.push({ param: `input[${i}].text`, text: item.text, write: (t) => item.text = t });
    }
  });
  return slots;
}

/**
 * Whether `body` is an embeddings request whose `input` is token ids (`int[]` or `int[][]`, what LangChain sends
 * by default): text that no rule or guardrail can read. They are not turned back into text: the encoding the
 * client tokenized with is unknown (ids of one decode to other words in another), and the tokenizer runs in a
 * worker, a cost no alias without rules should pay. So an alias that reads its input refuses them
 * ({@linkcode tokenInputUnreadable}). Moderations take text only.
 */
export function isTokenInput(endpoint: Endpoint, body: JsonObject | undefined): boolean {
  const input = body?.input;
  return endpoint === "embeddings" && Array.isArray(input) && input.length > 0 &&
    typeof input[0] !== "string";
}

/** The text slots of `body` for `endpoint` (none for endpoints without text, such as `models`). */
export function textSlots(
  endpoint: Endpoint,
  body: JsonObject | undefined,
  options: { toolArguments?: boolean } = {},
): TextSlot[] {
  if (!body) return [];
  if (isChatFormEndpoint(endpoint)) return chatSlots(body, options.toolArguments ?? false);
  return endpoint === "embeddings" || endpoint === "moderations" ? inputSlots(body) : [];
}
