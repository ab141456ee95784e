/**
 * A `reasoning` input item as the chat form carries reasoning back upstream: `reasoning_content` on the
 * assistant turn it preceded. DeepSeek's thinking mode and Kimi K2 refuse a tool loop's next turn without the
 * reasoning of the turn that called the tools ("Missing `reasoning_content` field in the assistant message"),
 * and a Responses client sends it back only as an item: Codex re-sends the output's reasoning items in its
 * input (`store: false`), and a `previous_response_id` chain holds them in its stored output. The gateway's own
 * reasoning items carry the text as their summary (response.ts), OpenAI's may carry the raw text as `content`.
 *
 * An item with only `encrypted_content` holds nothing a translated target can read: it adds nothing. Vendor
 * adapters that build their own bodies (Anthropic, Gemini, Bedrock) never read the field.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { string, wrongType } from "./validate.ts";

/** The texts of `item[key]`'s parts of type `type` (other parts left alone), checked as OpenAI checks them. */
function partTexts(item: JsonObject, key: string, type: string, param: string): string[] {
  const parts = item[key];
  if (parts == null) return [];
  if (!Array.isArray(parts)) throw wrongType(`${param}.${key}`, "an array", parts);
  const texts: string[] = [];
  parts.forEach((part, i) => {
    if (!isObject(part)) throw wrongType(`${param}.${key}[${i}]`, "an object", part);
    if (part.type === type) texts.push(string(part, "text", `${param}.${key}[${i}].text`, true)!);
  });
  return texts.filter((text) => text !== "");
}

/**
 * The readable text of a reasoning item: its `reasoning_text` content (the model's own words) when it has any,
 * else its summary's paragraphs; "" when it holds neither (an encrypted one).
 */
export function reasoningText(item: JsonObject, param: string): string {
  const own = partTexts(item, "content", "reasoning_text", param);
  const summary = partTexts(item, "summary", "summary_text", param);
  return own.length > 0 ? own.join("") : summary.join("\n\n");
}

/** `message` (an assistant turn) with `text` as its `reasoning_content`, after any it already has. */
export function addReasoning(message: JsonObject, text: string): void {
  const had = message.reasoning_content;
  message.reasoning_content = typeof had === "string" && had !== "" ? `${had}\n\n${text}` : text;
}

/**
 * The `encrypted_content` of each reasoning item of `input` (`input[3].encrypted_content`): the upstream's own
 * state of its reasoning, which a native target reads back and the chat form has no place for (only an item's
 * readable text goes, as `reasoning_content`). Named when a native target is served the chat form instead of
 * the client's body (its guardrails made the request go so: `ChatForm.chatLoses`).
 */
export function encryptedReasoningPaths(input: readonly JsonObject[]): string[] {
  const paths: string[] = [];
  input.forEach((item, i) => {
    if (item.type === "reasoning" && typeof item.encrypted_content === "string") {
      paths.push(`input[${i}].encrypted_content`);
    }
  });
  return paths;
}
