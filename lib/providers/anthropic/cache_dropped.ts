/**
 * What an Anthropic target does not get of a chat request's prompt-caching markers, on its messages and its tool
 * definitions (see `../shared/cache_control.ts`): those past the four it takes, those on content it is not sent
 * (an empty text), those of another `type`, and the `ttl`s left out. Named in `x-gateway-dropped` like the
 * parameters it drops.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { cacheControlDropped, droppedOnce, type MarkedRequest } from "../shared/cache_control.ts";
import { toAnthropicMessages } from "./request.ts";
import { toAnthropicTools } from "./tool_config.ts";

/** The client paths of the markers in `request` an Anthropic request leaves out (none for most requests). */
export function anthropicCacheDropped(request: MarkedRequest): string[] {
  return droppedOnce(request, "anthropic", (paths) => {
    let tools: JsonObject[];
    let translated: ReturnType<typeof toAnthropicMessages>;
    try {
      tools = toAnthropicTools(request.tools) ?? [];
      translated = toAnthropicMessages(request.messages, tools);
    } catch {
      return []; // the translation refuses the request itself, with its own 400
    }
    const { system, messages: turns } = translated;
    const blocks = [
      ...tools,
      ...(Array.isArray(system) ? system : []),
      ...turns.flatMap((turn) => Array.isArray(turn.content) ? turn.content : []),
    ];
    return cacheControlDropped(paths, blocks);
  });
}
