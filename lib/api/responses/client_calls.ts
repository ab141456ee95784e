/**
 * Which output items of a Responses answer hand the client something to do before the model goes on: the one
 * list of them, read wherever an answer's ending matters (the response cache's `cache_tool_calls`,
 * cache_spec.ts; a traced answer's `tool_calls` finish reason, native_facts.ts), so the two never disagree.
 * A second copy of this list once left the shell and apply_patch calls out of the cache's, and a coding agent
 * was handed the same `rm -rf build` again from the cache, without the model being asked.
 *
 * A call for the client: a function's and a custom tool's call; a computer call; the shell, local shell and
 * apply_patch tools' calls, which the client's harness runs (Codex does); a tool search the client runs
 * (`execution: "client"`); and an MCP approval request, which waits on the client's approval before the
 * upstream runs the MCP tool. Not one: a hosted tool's call (web and file search, code interpreter, image
 * generation, an MCP call, a server-run tool search), which ran upstream and whose result is in the answer,
 * and a shell call in a hosted container (`environment` a `container_reference`), which ran upstream alike.
 * An unknown `environment` leaves a shell call the client's: replaying a call that ran upstream costs a cache
 * miss, replaying one the client runs reruns a command.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";

/** Output item types that are always a call for the client (or its user) to act on. */
const CLIENT_CALL_TYPES: ReadonlySet<unknown> = new Set([
  "function_call",
  "custom_tool_call",
  "computer_call",
  "local_shell_call",
  "shell_call",
  "apply_patch_call",
  "mcp_approval_request",
]);

/** Whether a shell call ran in a hosted container (upstream) rather than in the client's own environment. */
function hostedShell(item: JsonObject): boolean {
  const environment = item.environment;
  return isObject(environment) && typeof environment.type === "string" &&
    environment.type.startsWith("container");
}

/** Whether one output item is a call for the client to run (see the module doc). */
export function isClientCall(item: unknown): boolean {
  if (!isObject(item)) return false;
  if (item.type === "tool_search_call") return item.execution === "client";
  if (item.type === "shell_call") return !hostedShell(item);
  return CLIENT_CALL_TYPES.has(item.type);
}

/** Whether a Response's `output` holds a call for the client to run. */
export function callsClient(response: JsonObject): boolean {
  return Array.isArray(response.output) && response.output.some(isClientCall);
}
