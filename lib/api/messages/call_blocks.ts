/**
 * The Messages API's content blocks that call a tool, in one list: a client tool's call (`tool_use`, the one the
 * client runs: an answer holding one stops with `tool_use`, which the response cache keeps only under
 * `cache_tool_calls`, cache_spec.ts), a server tool's (`server_tool_use`: a web search, a code execution) and
 * an MCP connector's (`mcp_tool_use`), both run by Anthropic. Read where a turn's calls matter: the input
 * the model wrote (native.ts counts it) and Claude's rule that a turn calling tools starts with its thinking
 * (unsigned_thinking.ts).
 *
 * @module
 */
import { isObject } from "../../openai/types.ts";

/** The content block types that call a tool (client, server or MCP). */
const CALL_BLOCKS: ReadonlySet<unknown> = new Set(["tool_use", "server_tool_use", "mcp_tool_use"]);

/** Whether a content block calls a tool (see the module doc). */
export function isCallBlock(block: unknown): boolean {
  return isObject(block) && CALL_BLOCKS.has(block.type);
}
