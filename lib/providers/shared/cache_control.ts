/**
 * Prompt-caching markers in the chat form, for the vendors that cache up to a marked block: Anthropic
 * (`cache_control` on the block) and Claude on Bedrock (a Converse `cachePoint` block after it).
 *
 * Clients of Claude behind an OpenAI-compatible API mark their prompts as Anthropic's API takes them:
 * `cache_control: {type: "ephemeral", ttl?: "5m" | "1h"}` on a message (opencode for a model named "claude",
 * on its system messages and last turns), on one of its content parts (LiteLLM and OpenRouter callers), on an
 * assistant's tool call (opencode through @ai-sdk/openai-compatible, on a turn that ends with one), or on a tool
 * definition (`tools[i].cache_control`, which LiteLLM takes and nanobot puts on its last tool: the tools open a
 * Claude prompt, and an agent's long tool list is what every one of its requests repeats). Without them nothing
 * is cached, and a long agent session pays full input price on every turn where cache reads cost about a tenth
 * of it.
 *
 * A vendor's translation notes a marker on the block it makes of the part ({@linkcode markBlock}), or of the
 * message's last block ({@linkcode markLast}); the marks are kept beside the blocks, never in them, so blocks
 * can be moved, merged and reordered freely, and a block the request never sends takes its mark with it. Once
 * the request's blocks are in their final order (the vendors' prefix order: tools, system, messages; the request
 * is settled whole, so a tool's marker counts with the others), {@linkcode settleMarks} decides which are sent:
 *
 * - At most {@linkcode MAX_BREAKPOINTS} (Anthropic refuses a request with more: "A maximum of 4 blocks with
 *   cache_control may be provided"; Bedrock documents the same limit for Claude). Past it the first two and the
 *   last two are kept: the first ones end the prefix every request of an application shares (its system prompt,
 *   the layout opencode and VS Code use for them), the last ones end the conversation so far, which the next
 *   turn reads back; a hit at a later marker reads everything before it, so the ones in between are what is
 *   least missed. Sending fewer markers only caches less; a refused request would answer nothing.
 * - A `ttl` other than `5m` or `1h` is left out (the default, five minutes, applies), as is a `1h` after a
 *   shorter one: both vendors refuse a request whose longer-lived entries do not come first, and hoisting system
 *   messages to the front can make a client's order one they refuse.
 *
 * What was not sent is named for `x-gateway-dropped` ({@linkcode cacheControlDropped}), as the client wrote it
 * (`messages[1].cache_control`, `messages[1].content[0].cache_control`, `tools[3].cache_control`,
 * `…cache_control.ttl`). A target with no such markers (Gemini, Bedrock models other than Claude) names them all
 * ({@linkcode cacheControlPaths}).
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";

/** The most blocks one request may mark (Anthropic's limit, and Bedrock's for Claude). */
export const MAX_BREAKPOINTS = 4;

/** The lifetimes both vendors take; the default is five minutes. */
const TTLS: ReadonlySet<unknown> = new Set(["5m", "1h"]);

/** A marker on one vendor block. */
export interface CacheMark {
  /** The client's `cache_control` (the first that reached the block: a part's before its message's). */
  readonly control: JsonObject;
  /** Every client path whose marker reached the block, in the order they did. */
  readonly paths: string[];
  /** Whether the request sends it (set by {@linkcode settleMarks}). */
  sent: boolean;
  /** The lifetime sent: the client's `ttl` when it is kept, else undefined (the vendor's default). */
  ttl: string | undefined;
  /** The marker's fields that are not sent, as client paths (`….cache_control.ttl`). */
  readonly droppedFields: string[];
}

const MARKS = new WeakMap<object, CacheMark>();

/** The marker `holder` (a message or content part) carries when a vendor can take it: `type: "ephemeral"`. */
function requested(holder: unknown): JsonObject | undefined {
  if (!isObject(holder)) return undefined;
  const control = holder.cache_control;
  return isObject(control) && control.type === "ephemeral" ? control : undefined;
}

/**
 * Notes `holder`'s marker (its `cache_control` at client path `path`) on `block`, the block made of it; a
 * block already marked keeps its marker and notes the path. Returns `block`.
 */
export function markBlock<T extends object>(block: T, holder: unknown, path: string): T {
  const control = requested(holder);
  if (control === undefined) return block;
  const mark = MARKS.get(block);
  if (mark !== undefined) mark.paths.push(path);
  else MARKS.set(block, { control, paths: [path], sent: false, ttl: undefined, droppedFields: [] });
  return block;
}

/** Notes `message`'s own marker (at `messages[i]`, `param`) on the last of `blocks`, the ones made of it. */
export function markLast<T extends object>(blocks: T[], message: JsonObject, param: string): T[] {
  const last = blocks.at(-1);
  if (last !== undefined) markBlock(last, message, `${param}.cache_control`);
  return blocks;
}

/**
 * Moves the marks of `inner` blocks onto `outer`, the block that holds them, and returns `outer` (a tool result:
 * the marker ends the cached prefix at the end of the result, as neither vendor takes one inside it here).
 */
export function moveMarks<T extends object>(inner: readonly object[], outer: T): T {
  for (const block of inner) {
    const mark = MARKS.get(block);
    if (mark === undefined) continue;
    MARKS.delete(block);
    const held = MARKS.get(outer);
    if (held === undefined) MARKS.set(outer, mark);
    else held.paths.push(...mark.paths);
  }
  return outer;
}

/** The mark on `block`, if any. */
export function markOf(block: object): CacheMark | undefined {
  return MARKS.get(block);
}

/** The marks of `blocks` (every block of a request, in the order the vendor reads them) the request sends. */
export function settleMarks(blocks: readonly object[]): CacheMark[] {
  const marks = blocks.map((b) => MARKS.get(b)).filter((m): m is CacheMark => m !== undefined);
  const n = marks.length;
  const kept = n <= MAX_BREAKPOINTS ? marks : [marks[0], marks[1], marks[n - 2], marks[n - 1]];
  let shorter = false;
  for (const mark of marks) {
    mark.sent = kept.includes(mark);
    mark.droppedFields.length = 0;
    mark.ttl = undefined;
    if (!mark.sent) continue;
    const ttl = mark.control.ttl;
    if (ttl === undefined || ttl === null) {
      shorter = true;
    } else if (!TTLS.has(ttl) || (ttl === "1h" && shorter)) {
      mark.droppedFields.push(`${mark.paths[0]}.ttl`);
      shorter = true;
    } else {
      mark.ttl = String(ttl);
      shorter ||= ttl !== "1h";
    }
  }
  return kept;
}

/** The parts of a chat request that carry prompt-caching markers, and those that decide which tools are sent. */
export interface MarkedRequest {
  readonly messages: readonly JsonObject[];
  readonly tools?: unknown;
  readonly tool_choice?: unknown;
  readonly response_format?: unknown;
}

/**
 * Every `cache_control` a chat request carries, on a message, a content part, an assistant's tool call (where
 * @ai-sdk/openai-compatible puts opencode's when a turn ends with one) or a tool definition (`tools[i]`), as
 * client paths (a null one is no marker): the messages' in order, then the tools'.
 */
export function cacheControlPaths({ messages, tools }: MarkedRequest): string[] {
  const paths: string[] = [];
  messages.forEach((m, i) => {
    if (m.cache_control != null) paths.push(`messages[${i}].cache_control`);
    for (const [key, list] of [["content", m.content], ["tool_calls", m.tool_calls]] as const) {
      if (!Array.isArray(list)) continue;
      list.forEach((item, j) => {
        if (isObject(item) && item.cache_control != null) {
          paths.push(`messages[${i}].${key}[${j}].cache_control`);
        }
      });
    }
  });
  if (Array.isArray(tools)) {
    tools.forEach((tool, i) => {
      if (isObject(tool) && tool.cache_control != null) paths.push(`tools[${i}].cache_control`);
    });
  }
  return paths;
}

/**
 * What a translation did not send of the markers at `paths` (the request's, {@linkcode cacheControlPaths}),
 * given `blocks`, every block it made (settled by {@linkcode settleMarks}): the markers on no block sent, in the
 * client's order, then the fields of sent ones left out.
 */
export function cacheControlDropped(paths: readonly string[], blocks: readonly object[]): string[] {
  const sent = new Set<string>();
  const fields: string[] = [];
  for (const block of blocks) {
    const mark = MARKS.get(block);
    if (mark?.sent !== true) continue;
    for (const path of mark.paths) sent.add(path);
    fields.push(...mark.droppedFields);
  }
  return [...paths.filter((p) => !sent.has(p)), ...fields];
}

/** A verdict and the request fields it was reached for, besides the messages that key it. */
interface Verdict {
  readonly inputs: readonly unknown[];
  readonly dropped: string[];
}

const VERDICTS = new WeakMap<readonly JsonObject[], Map<string, Verdict>>();

/** The fields besides `messages` a verdict depends on: the tools, and what decides whether they are sent. */
const inputsOf = (r: MarkedRequest): unknown[] => [r.tools, r.tool_choice, r.response_format];

/**
 * `compute`'s answer for `request` under `key` (a vendor's form), computed once per request: routing asks it
 * for every target before routing and again for the one that answered. Nothing is computed or kept for a
 * request without markers. Kept by the request's messages, and computed again for other tools (a client API may
 * withhold a parameter from one target, and hands that target a copy of the request without it).
 */
export function droppedOnce(
  request: MarkedRequest,
  key: string,
  compute: (paths: string[]) => string[],
): string[] {
  let byKey = VERDICTS.get(request.messages);
  const inputs = inputsOf(request);
  const known = byKey?.get(key);
  if (known !== undefined && known.inputs.every((v, i) => v === inputs[i])) return known.dropped;
  const paths = cacheControlPaths(request);
  if (paths.length === 0) return paths;
  const dropped = compute(paths);
  if (byKey === undefined) VERDICTS.set(request.messages, byKey = new Map());
  byKey.set(key, { inputs, dropped });
  return dropped;
}
