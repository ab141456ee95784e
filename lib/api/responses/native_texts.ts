/**
 * Where the texts of a Responses body live, for a body passed through to a native target: the texts the
 * content rules read in the request's chat form (lib/policy/text_slots.ts), where the Responses API keeps them,
 * and those only a native target reads. One description serves the native body's redaction and the deny rules'
 * reading of what has no chat form, so the two cannot drift apart:
 *
 * - `instructions`, a string `input`;
 * - each input item's texts, by its type ({@linkcode ITEM_TEXTS}, the one list of them): a message's string
 *   content, and its parts' texts: `input_text`, `output_text` (an assistant's history), `refusal`, the
 *   decoded text of an `input_file` of plain text (`data:text/plain;base64,…`) and every `input_file`'s
 *   `filename`, which the model reads with the file whatever it holds; a function or custom tool call's
 *   output (a string, or parts as a message's); a `reasoning` item's `summary_text` and `reasoning_text` parts
 *   (the chat form keeps one of them, on the assistant turn that follows, and none when no assistant turn
 *   follows, yet a native target reads them all); and what only a native target reads of the built-in tools'
 *   items (OpenAI's OpenAPI spec names the fields): a local shell call's `output`, a shell call's output chunks
 *   (`stdout`, `stderr`), an apply_patch call's `output` (its log), an MCP call's `output` and `error` (a string,
 *   or an error object's `message`, or a tool execution error's `content`: a string or text blocks), an MCP tool
 *   list's `error`, and the `reason` an MCP approval response gives.
 *
 * Left alone, as in the chat form: tool-call arguments (a shell call's commands, a patch's diff, an MCP call's
 * `arguments` among them), tool declarations (an MCP tool list's `tools`), images (a computer call's output is a
 * screenshot), the content of files that are not plain text, what the upstream itself ran and returned (a code interpreter's
 * logs, a program's result, a computer call's pending safety checks) and opaque state (`encrypted_content`: the
 * upstream's, unreadable, and refused if changed).
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { encodedTextSlot, stringSlot, type TextSlot } from "../../policy/text_slots.ts";

type Slots = (TextSlot | undefined)[];

/** The text parts of a message, a tool output or a reasoning item. */
const TEXT_PARTS = new Set(["input_text", "output_text", "summary_text", "reasoning_text"]);

function partSlots(parts: unknown[], param: string, out: Slots): void {
  parts.forEach((part, j) => {
    if (!isObject(part)) return;
    const at = `${param}[${j}]`;
    if (typeof part.type === "string" && TEXT_PARTS.has(part.type)) {
      out.push(stringSlot(part, "text", `${at}.text`));
    } else if (part.type === "refusal") out.push(stringSlot(part, "refusal", `${at}.refusal`));
    else if (part.type === "input_file") {
      out.push(
        encodedTextSlot(part, "file_data", `${at}.file_data`),
        stringSlot(part, "filename", `${at}.filename`),
      );
    }
  });
}

/** How one field of an item holds its text: `holder[key]`, at `param`. */
type FieldReader = (holder: JsonObject, key: string, param: string, out: Slots) => void;

/** A string. */
const text: FieldReader = (holder, key, param, out) => out.push(stringSlot(holder, key, param));

/** A string, or parts as a message's content. */
const textOrParts: FieldReader = (holder, key, param, out) => {
  const value = holder[key];
  if (typeof value === "string") out.push(stringSlot(holder, key, param));
  else if (Array.isArray(value)) partSlots(value, param, out);
};

/** A shell call's output: chunks of what its commands printed, each a `stdout` and a `stderr`. */
const shellChunks: FieldReader = (holder, key, param, out) => {
  const chunks = holder[key];
  if (!Array.isArray(chunks)) return;
  chunks.forEach((chunk, j) => {
    if (!isObject(chunk)) return;
    for (const stream of ["stdout", "stderr"]) {
      out.push(stringSlot(chunk, stream, `${param}[${j}].${stream}`));
    }
  });
};

/**
 * An MCP call's `error`: a string (as OpenAI's SDKs typed it first), or an error object: a protocol or HTTP
 * error's `message`, a tool execution error's `content` (the spec leaves it untyped: a string, or MCP's content
 * blocks, whose `text` is read).
 */
const mcpError: FieldReader = (holder, key, param, out) => {
  const error = holder[key];
  if (typeof error === "string") out.push(stringSlot(holder, key, param));
  if (!isObject(error)) return;
  out.push(stringSlot(error, "message", `${param}.message`));
  const content = error.content;
  if (typeof content === "string") out.push(stringSlot(error, "content", `${param}.content`));
  else if (Array.isArray(content)) {
    content.forEach((block, j) => {
      if (isObject(block)) out.push(stringSlot(block, "text", `${param}.content[${j}].text`));
    });
  }
};

/**
 * Where an input item, by its `type` (a message's may be absent), keeps the texts a native target reads: each a
 * field and how it holds them. The one list of them: an item type not here has none (see the module doc).
 */
const ITEM_TEXTS: ReadonlyMap<unknown, readonly (readonly [string, FieldReader])[]> = new Map([
  ["message", [["content", textOrParts]]],
  ["function_call_output", [["output", textOrParts]]],
  ["custom_tool_call_output", [["output", textOrParts]]],
  ["reasoning", [["summary", textOrParts], ["content", textOrParts]]],
  ["local_shell_call_output", [["output", text]]],
  ["shell_call_output", [["output", shellChunks]]],
  ["apply_patch_call_output", [["output", text]]],
  ["mcp_call", [["output", text], ["error", mcpError]]],
  ["mcp_list_tools", [["error", text]]],
  ["mcp_approval_response", [["reason", text]]],
]);

function itemSlots(item: unknown, param: string, out: Slots): void {
  if (!isObject(item)) return;
  for (const [key, read] of ITEM_TEXTS.get(item.type ?? "message") ?? []) {
    read(item, key, `${param}.${key}`, out);
  }
}

/** The texts of a Responses body (the client's, or the one a native target gets), each at its param. */
export function responsesTexts(body: JsonObject): TextSlot[] {
  const out: Slots = [stringSlot(body, "instructions", "instructions")];
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
