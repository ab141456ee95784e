/**
 * The texts of a request a rule or guardrail reads and may rewrite in place, each with the request parameter
 * it sits at: string message contents and text parts of array contents (any role: system prompts, tool
 * results), optionally assistant tool-call arguments, and the strings of an embeddings or moderations `input`
 * (a moderation's `text` parts too). A request of the Responses, Messages or Gemini API is read in its chat
 * form, where its instructions are a system message.
 *
 * @module
 */
import { type Endpoint, isChatFormEndpoint } from "../config/schema.ts";
import { isObject, type JsonObject } from "../openai/types.ts";

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
        if (!isObject(part) || typeof part.text !== "string") return;
        slots.push({
          param: `messages[${i}].content[${j}].text`,
          text: part.text,
          write: (t) => part.text = t,
        });
      });
    }
    if (!toolArguments || !Array.isArray(message.tool_calls)) return;
    message.tool_calls.forEach((call: unknown, j) => {
      const fn = isObject(call) ? call.function : undefined;
      if (!isObject(fn) || typeof fn.arguments !== "string") return;
      slots.push({
        param: `messages[${i}].tool_calls[${j}].function.arguments`,
        text: fn.arguments,
        write: (t) => fn.arguments = t,
      });
    });
  });
  return slots;
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
