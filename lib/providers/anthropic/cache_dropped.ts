/**
 * What an Anthropic target does not get of a chat request's prompt-caching markers (see
 * `../shared/cache_control.ts`): those past the four it takes, those on content it is not sent (an empty text),
 * those of another `type`, and the `ttl`s left out. Named in `x-gateway-dropped` like the parameters it drops.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { cacheControlDropped, droppedOnce } from "../shared/cache_control.ts";
import { toAnthropicMessages } from "./request.ts";

/** The client paths of the markers in `messages` an Anthropic request leaves out (none for most requests). */
export function anthropicCacheDropped(messages: readonly JsonObject[]): string[] {
  return droppedOnce(messages, "anthropic", (paths) => {
    let translated: ReturnType<typeof toAnthropicMessages>;
    try {
      translated = toAnthropicMessages(messages);
    } catch {
      return []; // the translation refuses the request itself, with its own 400
    }
    const { system, messages: turns } = translated;
    const blocks = [
      ...(Array.isArray(system) ? system : []),
      ...turns.flatMap((turn) => Array.isArray(turn.content) ? turn.content : []),
    ];
    return cacheControlDropped(paths, blocks);
  });
}
