/**
 * Where the texts of a Responses body live, for a body passed through to a native target: the texts the
 * content rules read in the request's chat form (lib/policy/text_slots.ts), where the Responses API keeps them,
 * and those only a native target reads. One description serves the native body's redaction and the deny rules'
 * reading of what has no chat form, so the two cannot drift apart:
 *
 * - `instructions`, a string `input`;
 * - a message's string content, and its parts' texts: `input_text`, `output_text` (an assistant's history),
 *   `refusal`, and the decoded text of an `input_file` of plain text (`data:text/plain;base64,…`);
 * - a function or custom tool call's output (the tool result): a string, or parts as a message's;
 * - a `reasoning` item's `summary_text` and `reasoning_text` parts: the chat form keeps one of them, on the
 *   assistant turn that follows, and none when no assistant turn follows, yet a native target reads them all.
 *
 * Left alone, as in the chat form: tool-call arguments, images, files that are not plain text, and opaque
 * state (`encrypted_content`: the upstream's, unreadable, and refused if changed).
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { encodedTextSlot, stringSlot, type TextSlot } from "../../policy/text_slots.ts";

/** The text parts of a message, a tool output or a reasoning item. */
const TEXT_PARTS = new Set(["input_text", "output_text", "summary_text", "reasoning_text"]);

function partSlots(parts: unknown[], param: string, out: (TextSlot | undefined)[]): void {
  parts.forEach((part, j) => {
    if (!isObject(part)) return;
    const at = `${param}[${j}]`;
    if (typeof part.type === "string" && TEXT_PARTS.has(part.type)) {
      out.push(stringSlot(part, "text", `${at}.text`));
    } else if (part.type === "refusal") out.push(stringSlot(part, "refusal", `${at}.refusal`));
    else if (part.type === "input_file") out.push(encodedTextSlot(part, "file_data", `${at}.file_data`));
  });
}

/** The key of an item that holds its text as a string or as parts. */
function textKey(type: unknown): string | undefined {
  if (type === "message") return "content";
  if (type === "function_call_output" || type === "custom_tool_call_output") return "output";
  return undefined;
}

function itemSlots(item: unknown, param: string, out: (TextSlot | undefined)[]): void {
  if (!isObject(item)) return;
  const type = item.type ?? "message";
  const key = textKey(type);
  if (key !== undefined) {
    const value = item[key];
    if (typeof value === "string") out.push(stringSlot(item, key, `${param}.${key}`));
    else if (Array.isArray(value)) partSlots(value, `${param}.${key}`, out);
  } else if (type === "reasoning") {
    for (const field of ["summary", "content"]) {
      const parts = item[field];
      if (Array.isArray(parts)) partSlots(parts, `${param}.${field}`, out);
    }
  }
}

/** The texts of a Responses body (the client's, or the one a native target gets), each at its param. */
export function responsesTexts(body: JsonObject): TextSlot[] {
  const out: (TextSlot | undefined)[] = [stringSlot(body, "instructions", "instructions")];
  const input = body.input;
  if (typeof input === "string") out.push(stringSlot(body, "input", "input"));
  else if (Array.isArray(input)) input.forEach((item, i) => itemSlots(item, `input[${i}]`, out));
  return out.filter((slot) => slot !== undefined);
}

/**
 * The texts a native target of a Responses request reads, for the content rules: the request's own
 * `instructions` and input (item references resolved), then the stored conversation it continues (named
 * `previous_response_id`, the param that brought it in).
 */
export function nativeRequestTexts(
  parsed: { params: { instructions: string | null }; input: readonly JsonObject[] },
  history: readonly JsonObject[] = [],
): { param: string; text: string }[] {
  const own = responsesTexts({ instructions: parsed.params.instructions, input: [...parsed.input] });
  const earlier = responsesTexts({ input: [...history] }).map((slot) => ({
    ...slot,
    param: "previous_response_id",
  }));
  return [...own, ...earlier].map(({ param, text }) => ({ param, text }));
}
