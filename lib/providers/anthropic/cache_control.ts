/**
 * The chat form's prompt-caching markers on an Anthropic request (see `../shared/cache_control.ts`): the
 * translation notes them on the tools and blocks it makes, and {@linkcode placeCacheControl} writes the ones sent
 * as their `cache_control`, settled in Anthropic's prefix order: tools, system, then messages.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { markBlock, markLast, markOf, settleMarks } from "../shared/cache_control.ts";

/** A block as the translation makes it. */
type Block = JsonObject & { type: string };

/**
 * A system/developer message (`messages[i]`, `param`) as text blocks carrying its markers (the message's own on
 * its last block): the form `system` is sent in when one of them is marked.
 */
export function systemBlocks(message: JsonObject, param: string): Block[] {
  const content = message.content;
  const parts = typeof content === "string" ? [{ text: content }] : Array.isArray(content) ? content : [];
  const blocks: Block[] = [];
  parts.forEach((part, j) => {
    // Anthropic refuses a blank text block (`hasText` in ./request.ts): a blank part says nothing, so none is made.
    if (!isObject(part) || typeof part.text !== "string" || part.text.trim() === "") return;
    blocks.push(markBlock({ type: "text", text: part.text }, part, `${param}.content[${j}].cache_control`));
  });
  return markLast(blocks, message, param);
}

/** The `cache_control` Anthropic gets for a sent mark: the client's, its `ttl` only when kept. */
function controlOf(block: object): JsonObject | undefined {
  const mark = markOf(block);
  if (mark?.sent !== true) return undefined;
  const { ttl: _ttl, ...control } = mark.control;
  return mark.ttl === undefined ? control : { ...control, ttl: mark.ttl };
}

/**
 * Settles the marks of `tools` (the client's tool definitions, every one of which the request sends), `system`
 * (the system messages' text blocks) and `turns` (each turn's blocks, in their final order) together, as
 * Anthropic counts them, and writes the sent ones as `cache_control`. Whether the system prompt is sent as
 * blocks: only when one of them carries a marker (the joined text otherwise, as before markers were read).
 */
export function placeCacheControl(
  tools: readonly JsonObject[],
  system: readonly Block[],
  turns: readonly (readonly Block[])[],
): boolean {
  const all: JsonObject[] = [...tools, ...system, ...turns.flat()];
  if (!all.some((b) => markOf(b) !== undefined)) return false;
  settleMarks(all);
  for (const block of all) {
    const control = controlOf(block);
    if (control !== undefined) block.cache_control = control;
  }
  return system.some((b) => b.cache_control !== undefined);
}
