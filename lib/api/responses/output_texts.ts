/**
 * What the model wrote in a native Responses answer, for the gateway's own count of its output tokens when the
 * upstream reports no usage (`tokens_estimated`): of a whole Response ({@linkcode outputTexts}) and of a stream,
 * event by event ({@linkcode StreamOutputTexts}). The same items count the same either way: text a delta event
 * streams is counted from its deltas, and an item whose text no delta streamed is counted whole from its
 * `response.output_item.done`, by the very reader a whole Response's items go through.
 *
 * Counted: message text and refusals, reasoning and its summaries, and every call's text the model wrote (a
 * function's, an MCP call's and an MCP approval request's `arguments`, a custom tool call's `input`, the
 * `code` of a code interpreter call or of a program, an apply_patch call's `operation.diff`, a shell call's
 * `action.commands`, a local shell call's `action.command`, the text a computer call types, a web or file
 * search's queries). Left out: what is not text the model wrote (an image generation's base64 `result` and
 * partial images, a search's results and sources, a tool list, a call's output), a computer call's pointer
 * and key actions (coordinates and key names), a web search's page actions (a URL from its results, a
 * pattern to find in it), a tool search call's `arguments` (the spec gives them no type), and audio
 * transcripts (no Response field holds them, so only a stream could count them).
 *
 * Reasoning (a reasoning item's summaries and text, their deltas) is pushed as reasoning ({@linkcode TextSink}):
 * the stream budget weighs it at its own rate, and content capture shows it apart from the answer
 * ({@linkcode outputSaid}, a stream's `StreamTexts.said`).
 *
 * @module
 */
import { pushText, type SaidTexts, saidTextsOf, type TextSink } from "../../openai/said_fields.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";

/**
 * Where an output item, by its type, keeps text the model wrote: each a path of fields to a string or an
 * array of strings (OpenAI's OpenAPI spec names them; `operation.diff` is nested, `commands` a list).
 */
const ITEM_TEXTS: ReadonlyMap<unknown, readonly (readonly string[])[]> = new Map([
  ["function_call", [["arguments"]]],
  ["mcp_call", [["arguments"]]],
  ["mcp_approval_request", [["arguments"]]],
  ["custom_tool_call", [["input"]]],
  ["code_interpreter_call", [["code"]]],
  ["program", [["code"]]],
  ["apply_patch_call", [["operation", "diff"]]],
  ["shell_call", [["action", "commands"]]],
  ["local_shell_call", [["action", "command"]]],
  ["file_search_call", [["queries"]]],
]);

/** The events whose `delta` is text the model wrote: a field of {@linkcode ITEM_TEXTS}, a message's or reasoning. */
const TEXT_DELTAS: ReadonlySet<unknown> = new Set([
  "response.output_text.delta",
  "response.refusal.delta",
  "response.reasoning_text.delta",
  "response.reasoning_summary_text.delta",
  "response.function_call_arguments.delta",
  "response.mcp_call_arguments.delta",
  "response.custom_tool_call_input.delta",
  "response.code_interpreter_call_code.delta",
  "response.apply_patch_call_operation_diff.delta",
  "response.shell_call_command.delta",
]);

/**
 * Of {@linkcode TEXT_DELTAS}, the reasoning's: weighed at a reasoning rate where one is priced apart, and captured
 * apart from the answer.
 */
const REASONING_DELTAS: ReadonlySet<unknown> = new Set([
  "response.reasoning_text.delta",
  "response.reasoning_summary_text.delta",
]);

/** The strings at `path` in `value`: a string there, or the strings of an array there. */
function textsAt(value: unknown, path: readonly string[]): string[] {
  let at = value;
  for (const key of path) at = isObject(at) ? at[key] : undefined;
  if (typeof at === "string") return [at];
  return Array.isArray(at) ? at.filter((text): text is string => typeof text === "string") : [];
}

/** The texts a computer call types (its `type` actions'): its other actions are coordinates and key names. */
function typedTexts(item: JsonObject): string[] {
  const actions = [item.action, ...(Array.isArray(item.actions) ? item.actions : [])];
  return actions.flatMap((action) =>
    isObject(action) && action.type === "type" && typeof action.text === "string" ? [action.text] : []
  );
}

/** A web search's queries: its `queries`, else the one (deprecated) `query` they replace. */
function searchQueries(item: JsonObject): string[] {
  if (!isObject(item.action) || item.action.type !== "search") return [];
  const queries = textsAt(item.action, ["queries"]);
  return queries.length > 0 ? queries : textsAt(item.action, ["query"]);
}

/**
 * Adds to `out` the texts the model wrote in one output item (untrusted: anything not text is skipped): a
 * reasoning item's (its summaries and reasoning text) as reasoning.
 */
function pushItemTexts(item: unknown, out: TextSink): void {
  if (!isObject(item)) return;
  const reasoning = item.type === "reasoning";
  const calls = (ITEM_TEXTS.get(item.type) ?? []).flatMap((path) => textsAt(item, path));
  if (item.type === "computer_call") calls.push(...typedTexts(item));
  if (item.type === "web_search_call") calls.push(...searchQueries(item));
  for (const text of calls) out.push(text);
  for (const part of Array.isArray(item.summary) ? item.summary : []) {
    if (isObject(part) && typeof part.text === "string") pushText(out, part.text, reasoning);
  }
  for (const part of Array.isArray(item.content) ? item.content : []) {
    if (!isObject(part)) continue;
    if (typeof part.text === "string") pushText(out, part.text, reasoning);
    if (typeof part.refusal === "string") out.push(part.refusal);
  }
}

/** Adds to `out` the texts the model wrote in a Response's output ({@linkcode pushItemTexts}, item by item). */
function pushResponseTexts(response: JsonObject, out: TextSink): void {
  for (const item of Array.isArray(response.output) ? response.output : []) pushItemTexts(item, out);
}

/** The texts the model wrote in a Response's output, for counting its tokens: see the module doc. */
export function outputTexts(response: JsonObject): string[] {
  const out: string[] = [];
  pushResponseTexts(response, out);
  return out;
}

/**
 * A Response's output texts as content capture shows them: its reasoning apart from its answer, as
 * {@linkcode StreamOutputTexts} tells a stream's apart.
 */
export function outputSaid(response: JsonObject): SaidTexts {
  return saidTextsOf((sink) => pushResponseTexts(response, sink));
}

/**
 * The texts of a stream, event by event, counted when no usage comes: what {@linkcode outputTexts} counts of the
 * whole Response. A delta of {@linkcode TEXT_DELTAS} adds its text as it comes, as does a shell command's
 * opening text (`response.shell_call_command.added`, which its deltas append to); an item none of whose text
 * was streamed so (a local shell call's command, a program, an MCP approval request, a computer call, a
 * search: no delta event carries theirs) adds its texts whole from its `response.output_item.done`, never twice.
 */
export class StreamOutputTexts {
  /**
   * The `output_index`es, and `item_id`s, that a delta has streamed text of: only short ones, and at most
   * {@linkcode STREAMED_KEPT} of them, as the upstream names them (a stream of deltas each naming a new
   * kilobyte-long id would otherwise keep every id for the stream's life). Past the cap an item's text may be
   * counted twice, from its deltas and whole: more, never less.
   */
  #streamed = new Set<unknown>();

  /** The texts `event` adds ({@linkcode push}), reasoning or not. */
  read(event: JsonObject): string[] {
    const out: string[] = [];
    this.push(event, out);
    return out;
  }

  /**
   * Adds to `out` the texts `event` adds: a reasoning delta's ({@linkcode REASONING_DELTAS}), or a whole
   * reasoning item's, as reasoning.
   */
  push(event: JsonObject, out: TextSink): void {
    const added = event.type === "response.shell_call_command.added";
    if (TEXT_DELTAS.has(event.type) || added) {
      this.#note(event.output_index);
      this.#note(event.item_id);
      const text = added ? event.command : event.delta;
      if (typeof text === "string" && (text !== "" || !added)) {
        pushText(out, text, REASONING_DELTAS.has(event.type));
      }
      return;
    }
    if (event.type !== "response.output_item.done" || !isObject(event.item)) return;
    const id = event.item.id;
    const streamed = this.#streamed.has(event.output_index) ||
      (typeof id === "string" && this.#streamed.has(id));
    if (!streamed) pushItemTexts(event.item, out);
  }

  /** Keeps `key` among {@linkcode #streamed} when it is an index or a short id and the set has room. */
  #note(key: unknown): void {
    const short = typeof key === "number" || (typeof key === "string" && key.length <= STREAMED_KEY_CHARS);
    if (short && this.#streamed.size < STREAMED_KEPT) this.#streamed.add(key);
  }
}

/** How many output indexes and item ids a stream keeps ({@linkcode StreamOutputTexts}); answers have a few. */
const STREAMED_KEPT = 1_024;
/** The longest item id kept: OpenAI's are about 50 characters. */
const STREAMED_KEY_CHARS = 256;
