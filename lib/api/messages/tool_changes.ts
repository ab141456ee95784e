/**
 * Mid-conversation tool changes: the `tool_addition` and `tool_removal` blocks of a `system` turn inside
 * `messages` (Anthropic's `mid-conversation-tool-changes-2026-07-01` beta; Claude Code builds such a turn when MCP
 * tools arrive or leave mid-session). A native target gets the turn as sent; a translated target gets their
 * outcome, which is well defined because the chat form offers one list of tools for the answer being asked for:
 *
 * - a `tool_addition` of a `tool_definition` adds its `definition` (a `tools` entry, translated as one) to the
 *   chat request's tools; one naming a tool already offered replaces it, as the later definition is the one
 *   offered from that point on;
 * - a `tool_addition` of a `tool_reference` offers again a tool of `tools` (or one defined earlier) that a
 *   removal withdrew; a `tool_removal` of a `tool_reference` withdraws the named tool;
 * - the changes apply in conversation order; the turn's text stays a system message in its place.
 *
 * What a translated target cannot have is not refused here, since a native target gets the turn as sent: a
 * reference to an MCP server's tools (`mcp_tool_reference`, `mcp_toolset_reference`: Anthropic's MCP connector
 * runs them) and a reference to a tool the request does not define (perhaps in a compaction block, which only
 * Claude reads) are the request's refusal on translated targets; a server tool's definition is, like a server
 * tool in `tools`, what only Claude serves (Claude targets preferred, dropped on the others).
 *
 * @module
 */
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import type { Tolerance } from "../../http/tolerance.ts";
import { claudeOnly, fieldError, stringField, wrongType } from "./validate.ts";

/** One tool change, in conversation order, with the path of its `tool`. */
export type ToolChange =
  | { kind: "define"; path: string; definition: JsonObject }
  | { kind: "add" | "remove"; path: string; name: string };

/** The `type` of a `tool_addition`'s or `tool_removal`'s `tool` that only Claude can resolve. */
const MCP_REFERENCES = new Set(["mcp_tool_reference", "mcp_toolset_reference"]);

/**
 * A `tool_addition` or `tool_removal` block (`at` its path) as a {@linkcode ToolChange}, or null when it is
 * one only a Claude target can apply (noted in `tolerance`). Its `cache_control` is the caller's to check.
 */
export function readToolChange(block: JsonObject, at: string, tolerance: Tolerance): ToolChange | null {
  const path = `${at}.tool`;
  const tool = block.tool;
  if (!isObject(tool)) throw wrongType(path, "an object", tool);
  const adds = block.type === "tool_addition";
  if (tool.type === "tool_definition" && adds) {
    if (!isObject(tool.definition)) {
      throw wrongType(`${path}.definition`, "a valid dictionary", tool.definition);
    }
    return { kind: "define", path: `${path}.definition`, definition: tool.definition };
  }
  if (tool.type === "tool_reference") {
    const name = stringField(tool, "name", `${path}.name`, true)!;
    return { kind: adds ? "add" : "remove", path, name };
  }
  if (typeof tool.type === "string" && MCP_REFERENCES.has(tool.type)) {
    claudeOnly(tolerance, `${path}.type`, `A tool change of type '${tool.type}'`);
    return null;
  }
  const tags = adds
    ? "'tool_reference', 'mcp_tool_reference', 'mcp_toolset_reference', 'tool_definition'"
    : "'tool_reference', 'mcp_tool_reference', 'mcp_toolset_reference'";
  throw fieldError(
    path,
    `Input tag '${String(tool.type)}' found using 'type' does not match any of the expected tags: ${tags}`,
  );
}

/** A chat tool's function name. */
function nameOf(tool: JsonObject): string | undefined {
  return isObject(tool.function) && typeof tool.function.name === "string" ? tool.function.name : undefined;
}

/**
 * Applies `changes` to `chat.tools` (what a translated target is offered), in order. `translate` is how a
 * `tools` entry becomes a chat tool (null for a server tool, which it notes); `declared` are the names in the
 * request's `tools`, kept or not. Returns the names the changes defined, which `tool_choice` may name too.
 */
export function applyToolChanges(
  changes: readonly ToolChange[],
  chat: ChatRequest,
  declared: readonly unknown[],
  translate: (definition: JsonObject, path: string) => JsonObject | null,
  tolerance: Tolerance,
): string[] {
  if (changes.length === 0) return [];
  const offered = new Map<string, JsonObject>();
  for (const tool of (chat.tools ?? []) as JsonObject[]) offered.set(nameOf(tool) ?? "", tool);
  /** Every tool a reference may name: those of `tools` and those defined so far (null: a server tool). */
  const known = new Map<string, JsonObject | null>(offered);
  for (const name of declared) if (typeof name === "string" && !known.has(name)) known.set(name, null);
  const defined: string[] = [];
  for (const change of changes) {
    if (change.kind === "define") {
      const name = stringField(change.definition, "name", `${change.path}.name`, true)!;
      const tool = translate(change.definition, change.path);
      known.set(name, tool);
      defined.push(name);
      if (tool === null) offered.delete(name);
      else offered.set(name, tool);
    } else if (change.kind === "remove") {
      offered.delete(change.name);
    } else if (!known.has(change.name)) {
      // Perhaps defined where only Claude reads (a compaction block's tool changes): Claude resolves it.
      claudeOnly(tolerance, `${change.path}.name`, `A tool_reference to a tool the request does not define`);
    } else {
      const tool = known.get(change.name);
      if (tool !== null && tool !== undefined) offered.set(change.name, tool);
    }
  }
  if (offered.size > 0) chat.tools = [...offered.values()];
  else delete chat.tools;
  return defined;
}
