/**
 * What Anthropic refuses with a 400 that a translated target would answer anyway: a user turn with empty
 * content (`""`, or a text block whose `text` is `""`), a custom tool whose name is not `^[a-zA-Z0-9_-]{1,128}$`
 * or repeats an earlier tool's, an image whose base64 `data` is not base64. A client that tried an alias of a
 * Claude target would get the 400, so one of a translated target does too, in Anthropic's shape, naming the
 * field: the request is noted as one only a Claude target may judge (`Tolerance.refusal`), so an alias with a
 * Claude target sends it there as sent (Anthropic answers), and one without refuses it before any upstream is
 * called.
 *
 * Not checked: an empty assistant turn. Anthropic refuses one before the last turn, but a translated target's
 * answer may have been empty (`content: []`), and refusing the history it is part of would end the client's
 * conversation on every later turn.
 *
 * @module
 */
import type { Tolerance } from "../../http/tolerance.ts";
import { isObject } from "../../openai/types.ts";
import { fieldError } from "./validate.ts";

/** Anthropic's rule for a custom tool's name. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

/** Standard base64 (Anthropic's `source.data`), padding optional, no whitespace. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Notes the first thing of `body` (already validated for shape) that Anthropic refuses. */
export function anthropicRefusal(body: Record<string, unknown>, tolerance: Tolerance): void {
  if (tolerance.refusal !== null) return;
  const refuse = (path: string, message: string) => {
    tolerance.refusal ??= fieldError(path, message);
  };
  const turns = Array.isArray(body.messages) ? body.messages : [];
  turns.forEach((turn, i) => {
    if (!isObject(turn) || turn.role !== "user") return;
    if (turn.content === "") {
      return refuse(`messages.${i}.content`, "all messages must have non-empty content.");
    }
    if (!Array.isArray(turn.content)) return;
    turn.content.forEach((block, j) => {
      if (!isObject(block)) return;
      const at = `messages.${i}.content.${j}`;
      if (block.type === "text" && block.text === "") {
        refuse(`${at}.text`, "text content blocks must be non-empty.");
      }
      const source = block.source;
      if (
        block.type === "image" && isObject(source) && source.type === "base64" &&
        typeof source.data === "string" && !BASE64.test(source.data)
      ) refuse(`${at}.source.data`, "The image data is not valid base64.");
    });
  });
  const seen = new Set<string>();
  const tools = Array.isArray(body.tools) ? body.tools : [];
  tools.forEach((tool, i) => {
    if (!isObject(tool) || (tool.type != null && tool.type !== "custom") || typeof tool.name !== "string") {
      return;
    }
    if (!TOOL_NAME.test(tool.name)) {
      refuse(`tools.${i}.name`, "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'.");
    } else if (seen.has(tool.name)) refuse(`tools.${i}.name`, "Tool names must be unique.");
    seen.add(tool.name);
  });
}
