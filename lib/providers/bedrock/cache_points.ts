/**
 * The chat form's prompt-caching markers on a Converse request to Claude (see `../shared/cache_control.ts`), in
 * Bedrock's documented form: a `cachePoint` block (`{type: "default", ttl?: "5m" | "1h"}`, CachePointBlock in
 * the Converse API reference) right after the block the client marked, in `toolConfig.tools` (after the
 * `toolSpec` of a marked tool definition), `system` or a turn's content. The chat path is Converse
 * (`./request.ts`), so Anthropic's `cache_control` is not what Bedrock reads there.
 *
 * Only Claude models get them: the translation notes markers for every model, and other models name them all
 * as dropped (`./cache_dropped.ts`). A tool result's markers end up after the `toolResult` block, as a
 * `cachePoint` is not a tool result's content. A marker's fields other than `type` and `ttl` have no place in a
 * `cachePoint` and are named as dropped.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { markOf, settleMarks } from "../shared/cache_control.ts";

/**
 * A Converse request's `system` list and turns, as `toConverseMessages` makes them, and the `toolConfig.tools`
 * it sends (`./tool_config.ts`: the client's marked tools are only those it sends).
 */
interface Converse {
  tools: JsonObject[];
  system: JsonObject[];
  turns: { role: "user" | "assistant"; content: JsonObject[] }[];
}

/** `blocks` with a `cachePoint` after each one whose marker is sent. */
function pointed(blocks: readonly JsonObject[]): JsonObject[] {
  const out: JsonObject[] = [];
  for (const block of blocks) {
    out.push(block);
    const mark = markOf(block);
    if (mark?.sent !== true) continue;
    const point: JsonObject = { type: "default" };
    if (mark.ttl !== undefined) point.ttl = mark.ttl;
    out.push({ cachePoint: point });
    for (const key of Object.keys(mark.control)) {
      if (key !== "type" && key !== "ttl") mark.droppedFields.push(`${mark.paths[0]}.${key}`);
    }
  }
  return out;
}

/**
 * `converse` with its markers as `cachePoint` blocks, at most four (Bedrock's limit for Claude), settled in the
 * order of Claude's cache prefix: tools, system, then the turns. `converse` itself when it has none.
 */
export function withCachePoints<T extends Converse>(converse: T): T {
  const blocks = [...converse.tools, ...converse.system, ...converse.turns.flatMap((t) => t.content)];
  if (!blocks.some((b) => markOf(b) !== undefined)) return converse;
  settleMarks(blocks);
  return {
    ...converse,
    tools: pointed(converse.tools),
    system: pointed(converse.system),
    turns: converse.turns.map((turn) => ({ ...turn, content: pointed(turn.content) })),
  };
}
