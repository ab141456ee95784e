/**
 * A Responses request's `input` (a string, or items: messages, function and custom tool calls and their
 * outputs, reasoning, built-in tool items, item references) translated to the chat form's messages.
 * Consecutive calls become one assistant turn; a reasoning item's text becomes the `reasoning_content` of the assistant turn
 * after it (reasoning_item.ts); built-in items, and items of a type the gateway does not know, have no chat form
 * and are left out (noted as native-only); each message keeps the client's param its content came from, for
 * errors found later.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { type ChatMessage, isObject, type JsonObject } from "../../openai/types.ts";
import { NATIVE_ITEMS, type NativeNeeds, needNative } from "./native_only.ts";
import { flatName } from "./namespaces.ts";
import { gatewaySummary, summaryText } from "./compaction_item.ts";
import { addReasoning, reasoningText } from "./reasoning_item.ts";
import { customArguments } from "./custom_tools.ts";

/** A `function_call` item's function as the chat form names it (a namespaced one by its flat name). */
function callName(item: JsonObject, param: string): string {
  const name = string(item, "name", `${param}.name`, true)!;
  const namespace = string(item, "namespace", `${param}.namespace`);
  return namespace === undefined ? name : flatName(namespace, name);
}
import { badValue, missing, string, wrongType } from "./validate.ts";

/** What translating the request's own input notes beside the chat messages. */
export interface InputNotes {
  /** See `ResponsesRequest.messageParams`. */
  paths: string[];
  /** See `ResponsesRequest.references`. */
  references: string[];
}

const ROLES = ["user", "assistant", "system", "developer"] as const;

/**
 * One content part of an input message, in the chat form; null for a part only a native target can read (a
 * file, an image by `file_id`: uploaded to the upstream's account), noted in `needs` when given (a rebuilt
 * history leaves such parts out, as it leaves out built-in tool items).
 */
function contentPart(part: unknown, param: string, role: string, needs?: NativeNeeds): JsonObject | null {
  if (!isObject(part)) throw wrongType(param, "an object", part);
  const type = part.type;
  if (type === "input_text" || type === "output_text") {
    return { type: "text", text: string(part, "text", `${param}.text`, true)! };
  }
  if (type === "refusal") return { type: "text", text: string(part, "refusal", `${param}.refusal`, true)! };
  if (type === "input_image") {
    // A tool's output may hold images too (a screenshot tool): `function_call_output.output`'s parts.
    if (role !== "user" && role !== "tool") {
      throw invalidRequest(
        `Images are only allowed in user messages ('${param}').`,
        `${param}.type`,
        "invalid_value",
      );
    }
    const url = string(part, "image_url", `${param}.image_url`);
    const fileId = string(part, "file_id", `${param}.file_id`);
    if (url === undefined && fileId === undefined) throw missing(`${param}.image_url`);
    const detail = string(part, "detail", `${param}.detail`) ?? "auto";
    if (!["auto", "low", "high", "original"].includes(detail)) {
      throw badValue(`${param}.detail`, detail, ["auto", "low", "high", "original"]);
    }
    if (url === undefined) {
      if (needs) needNative(needs, "An image by 'file_id'", `${param}.file_id`);
      return null;
    }
    return { type: "image_url", image_url: { url, detail: detail === "original" ? "high" : detail } };
  }
  if (type === "input_file") {
    if (role !== "user" && role !== "tool") {
      throw invalidRequest(
        `Files are only allowed in user messages ('${param}').`,
        `${param}.type`,
        "invalid_value",
      );
    }
    for (const key of ["file_id", "file_data", "file_url", "filename"]) string(part, key, `${param}.${key}`);
    if (part.file_id == null && part.file_data == null && part.file_url == null) {
      throw missing(`${param}.file_id`);
    }
    if (needs) needNative(needs, "Content of type 'input_file'", `${param}.type`);
    return null;
  }
  if (type === "input_audio") {
    throw invalidRequest(
      `Content of type '${type}' is not supported by this gateway's Responses endpoint yet.`,
      `${param}.type`,
      "unsupported_value",
    );
  }
  if (typeof type !== "string") {
    throw type === undefined ? missing(`${param}.type`) : wrongType(`${param}.type`, "a string", type);
  }
  throw badValue(`${param}.type`, type, [
    "input_text",
    "input_image",
    "input_file",
    "output_text",
    "refusal",
  ]);
}

/** A message's content as the chat form takes it: a string, or parts (text only for non-user roles). */
function messageContent(
  content: unknown,
  param: string,
  role: string,
  needs?: NativeNeeds,
): string | JsonObject[] {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) {
    throw content === undefined ? missing(param) : wrongType(param, "a string or an array", content);
  }
  // A native-only part has no chat form. In the request's own input (bound for a native target) an empty text
  // holds its place, so errors found in the chat form keep naming the client's part; a rebuilt history, bound
  // for any target, leaves it out.
  const parts: JsonObject[] = [];
  content.forEach((p, i) => {
    const part = contentPart(p, `${param}[${i}]`, role, needs);
    if (part !== null) parts.push(part);
    else if (needs !== undefined) parts.push({ type: "text", text: "" });
  });
  if (role === "user") return parts;
  // System, developer and assistant messages take text only in the chat form: join their texts.
  return parts.map((p) => p.text as string).join("");
}

/**
 * Turns the items of `input` into chat messages, merging consecutive function calls into one turn. Built-in
 * tool items, and items of a type the gateway does not know, have no chat form: noted in `needs` for a request's
 * own input, left out of a rebuilt history (`needs` absent). Reasoning goes with the assistant turn that follows
 * it (its message or its calls); reasoning that no assistant turn follows before another message is left out.
 */
function inputMessages(items: unknown[], into: ChatMessage[], needs?: NativeNeeds, notes?: InputNotes): void {
  /** Images of the tool outputs just translated, sent after the last of them (chat tool messages take none). */
  let media: JsonObject[] = [];
  let mediaPath = "";
  /** The text of the reasoning items since the last message, for the next assistant turn. */
  let reasoning: string[] = [];
  /** Gives `message` (an assistant turn) the reasoning that preceded it. */
  const reasoned = (message: ChatMessage) => {
    if (reasoning.length > 0) addReasoning(message, reasoning.join("\n\n"));
    reasoning = [];
  };
  items.forEach((item, i) => {
    const param = `input[${i}]`;
    const push = (message: ChatMessage, path: string) => {
      if (message.role === "assistant") reasoned(message);
      reasoning = [];
      into.push(message);
      notes?.paths.push(path);
    };
    if (!isObject(item)) throw wrongType(param, "an object", item);
    const type = item.type ?? "message";
    if (type === "message") {
      const role = item.role;
      if (typeof role !== "string" || !(ROLES as readonly string[]).includes(role)) {
        throw role === undefined ? missing(`${param}.role`) : badValue(`${param}.role`, role, ROLES);
      }
      push(
        { role, content: messageContent(item.content, `${param}.content`, role, needs) },
        `${param}.content`,
      );
      return;
    }
    // A custom tool is a function of the chat form (custom_tools.ts): its call, with its input as arguments.
    if (type === "function_call" || type === "custom_tool_call") {
      const call = {
        id: string(item, "call_id", `${param}.call_id`, true)!,
        type: "function",
        function: {
          name: callName(item, param),
          arguments: type === "custom_tool_call"
            ? customArguments(item, param)
            : string(item, "arguments", `${param}.arguments`, true)!,
        },
      };
      const last = into.at(-1);
      // An assistant turn that said something and called tools is one chat message with both.
      if (last?.role === "assistant") {
        last.content ??= null;
        ((last.tool_calls ??= []) as unknown[]).push(call);
        reasoned(last);
      } else push({ role: "assistant", content: null, tool_calls: [call] }, param);
      return;
    }
    if (type === "function_call_output" || type === "custom_tool_call_output") {
      const output = item.output;
      let content: string;
      if (typeof output === "string") content = output;
      else if (Array.isArray(output)) {
        const texts: string[] = [];
        output.forEach((p, j) => {
          const part = contentPart(p, `${param}.output[${j}]`, "tool", needs);
          if (part?.type === "image_url") media.push(part);
          else if (part !== null) texts.push(part.text as string);
        });
        content = texts.join("");
        mediaPath = `${param}.output`;
      } else {throw output === undefined
          ? missing(`${param}.output`)
          : wrongType(`${param}.output`, "a string or an array", output);}
      push(
        { role: "tool", tool_call_id: string(item, "call_id", `${param}.call_id`, true)!, content },
        `${param}.output`,
      );
      const next = items[i + 1];
      const isOutput = (t: unknown) => t === "function_call_output" || t === "custom_tool_call_output";
      if (media.length > 0 && !(isObject(next) && isOutput(next.type))) {
        // After the last of a turn's tool outputs: the chat form's tool messages must follow their call.
        push(
          { role: "user", content: [{ type: "text", text: "(returned by the tool)" }, ...media] },
          mediaPath,
        );
        media = [];
      }
      return;
    }
    // The model's reasoning, for the assistant turn after it (an encrypted one alone has no text to carry).
    if (type === "reasoning") {
      const text = reasoningText(item, param);
      if (text !== "") reasoning.push(text);
      return;
    }
    // The gateway's own compaction of earlier turns (compaction_item.ts): its summary, as the user's message.
    const summary = gatewaySummary(item);
    if (summary !== null) {
      push({ role: "user", content: summaryText(summary) }, param);
      return;
    }
    // Tools the client declares in its input (Codex's code mode), not a turn: translated beside `tools`
    // (additional_tools.ts); a rebuilt history leaves them out, as each request declares its own tools.
    if (type === "additional_tools") return;
    if (typeof type === "string" && NATIVE_ITEMS.has(type)) {
      if (needs) needNative(needs, `The input item '${type}'`, `${param}.type`);
      return;
    }
    // An earlier input or output item by id (the Vercel AI SDK's multi-turn form while `store` is on): noted
    // for the handler to look up, then translated as the item itself when the request is parsed again.
    if (type === "item_reference") {
      const id = string(item, "id", `${param}.id`, true)!;
      if (id === "") {
        throw invalidRequest(`Invalid '${param}.id': empty string.`, `${param}.id`, "invalid_value");
      }
      notes?.references.push(id);
      return;
    }
    const unknown = badValue(`${param}.type`, type, [
      "message",
      "function_call",
      "function_call_output",
      "custom_tool_call",
      "custom_tool_call_output",
      "reasoning",
    ]);
    if (typeof type !== "string") throw unknown;
    // An item type the gateway does not know yet (OpenAI adds them: `program` came after this list was written)
    // is a native target's to read, as sent (the tolerance rule, lib/http/tolerance.ts): the request goes to
    // native targets, and is refused only when the alias has none, since a translated model would answer without
    // it. A stored conversation leaves it out, as it leaves out built-in items: a native upstream wrote it, and
    // refusing it would end every later turn of the conversation.
    if (needs) needs.tolerance.refusal ??= unknown;
  });
}

/**
 * The chat messages of an earlier conversation (a stored chain's input and output items, oldest first), to
 * go before a request's own input when it names a `previous_response_id`. The items were accepted by the
 * gateway or produced by an upstream, so they translate as input items do, except that what has no chat form (a
 * built-in item, a type the gateway does not know) is left out rather than noted or refused.
 */
export function historyMessages(items: readonly JsonObject[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  inputMessages([...items], messages);
  return messages;
}

/** The id of an `item_reference` input item, or undefined for any other item. */
function referenceId(item: unknown): string | undefined {
  return isObject(item) && item.type === "item_reference" && typeof item.id === "string"
    ? item.id
    : undefined;
}

/**
 * The request's own `input` appended to `messages` as chat messages, its `item_reference`s replaced by the
 * items `items` holds for them (the rest are listed in `notes.references`); returns the input as items (a
 * string input becomes one user message), for storing with the response.
 */
export function requestInput(
  given: unknown,
  items: ReadonlyMap<string, JsonObject> | undefined,
  messages: ChatMessage[],
  needs: NativeNeeds,
  notes: InputNotes,
): JsonObject[] {
  if (typeof given === "string") {
    messages.push({ role: "user", content: given });
    notes.paths.push("input");
    return [{ type: "message", role: "user", content: given }];
  }
  if (!Array.isArray(given)) {
    throw given == null ? missing("input") : wrongType("input", "a string or an array", given);
  }
  if (given.length === 0) {
    throw invalidRequest(
      "Invalid 'input': empty array. Expected at least one item.",
      "input",
      "empty_array",
    );
  }
  const referenced = new Set<number>();
  const input = (given as JsonObject[]).map((item, i) => {
    const id = referenceId(item);
    const found = id === undefined ? undefined : items?.get(id);
    if (found === undefined) return item;
    referenced.add(i);
    return found;
  });
  inputMessages(input, messages, needs, notes);
  // A referenced item's text is not in the client's request: its param is the reference.
  notes.paths = notes.paths.map((path) => {
    const at = /^input\[(\d+)\]/.exec(path);
    return at !== null && referenced.has(Number(at[1])) ? at[0] : path;
  });
  return input;
}
