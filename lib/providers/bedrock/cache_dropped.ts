/**
 * What a Bedrock target does not get of a chat request's prompt-caching markers, on its messages and its tool
 * definitions (see `../shared/cache_control.ts`): on Claude, those past the four it takes, those on content it is
 * not sent (an empty text; the tools a `tool_choice: "none"` leaves out), those of another `type`, and the fields
 * a `cachePoint` has no place for (`./cache_points.ts`); on any other model, every one. Named in `x-gateway-dropped` like the parameters it drops.
 *
 * @module
 */
import { cacheControlDropped, cacheControlPaths, droppedOnce } from "../shared/cache_control.ts";
import type { ChatRequest } from "../../openai/types.ts";
import { converseInput, isClaudeModel } from "./request.ts";

/** The client paths of the markers in `request` a Converse request to `model` leaves out. */
export function bedrockCacheDropped(model: string, request: ChatRequest): string[] {
  if (!isClaudeModel(model)) return cacheControlPaths(request);
  return droppedOnce(request, "bedrock-claude", (paths) => {
    let input: ReturnType<typeof converseInput>;
    try {
      input = converseInput(request, model);
    } catch {
      return []; // the translation refuses the request itself, with its own 400
    }
    const { system, turns, toolConfig } = input;
    return cacheControlDropped(paths, [
      ...(toolConfig?.tools ?? []),
      ...system,
      ...turns.flatMap((t) => t.content),
    ]);
  });
}
