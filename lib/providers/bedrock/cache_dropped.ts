/**
 * What a Bedrock target does not get of a chat request's prompt-caching markers (see
 * `../shared/cache_control.ts`): on Claude, those past the four it takes, those on content it is not sent, those
 * of another `type`, and the fields a `cachePoint` has no place for (`./cache_points.ts`); on any other model,
 * every one. Named in `x-gateway-dropped` like the parameters it drops.
 *
 * @module
 */
import type { ChatMessage } from "../../openai/types.ts";
import { cacheControlDropped, cacheControlPaths, droppedOnce } from "../shared/cache_control.ts";
import { withCachePoints } from "./cache_points.ts";
import { isClaudeModel, toConverseMessages } from "./request.ts";

/** The client paths of the markers in `messages` a Converse request to `model` leaves out. */
export function bedrockCacheDropped(model: string, messages: ChatMessage[]): string[] {
  if (!isClaudeModel(model)) return cacheControlPaths(messages);
  return droppedOnce(messages, "bedrock-claude", (paths) => {
    let converse: ReturnType<typeof toConverseMessages>;
    try {
      converse = toConverseMessages(messages);
    } catch {
      return []; // the translation refuses the request itself, with its own 400
    }
    withCachePoints(converse);
    return cacheControlDropped(paths, [...converse.system, ...converse.turns.flatMap((t) => t.content)]);
  });
}
