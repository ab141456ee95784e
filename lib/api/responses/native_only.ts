/**
 * What in a Responses request only an upstream speaking the Responses API natively can serve: built-in tools
 * (`web_search`, `mcp`…), their call items, a built-in `tool_choice`. The chat form has no place for them, so
 * a request using one is passed through to a native target as sent, or refused with the 400 OpenAI would give
 * for an unsupported value when the alias has none (`ResponsesRequest.nativeOnly`).
 *
 * @module
 */
import { type GatewayError, invalidRequest } from "../../errors.ts";

/**
 * Input item types of built-in tools (OpenAI's `Item` union, beyond messages, function calls and reasoning).
 * They are passed through to a native target; the chat form has no place for them.
 */
export const NATIVE_ITEMS = new Set([
  "file_search_call",
  "computer_call",
  "computer_call_output",
  "web_search_call",
  "tool_search_call",
  "tool_search_output",
  "additional_tools",
  "compaction",
  "image_generation_call",
  "code_interpreter_call",
  "local_shell_call",
  "local_shell_call_output",
  "shell_call",
  "shell_call_output",
  "apply_patch_call",
  "apply_patch_call_output",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
  "mcp_call",
  "custom_tool_call",
  "custom_tool_call_output",
]);

/** Collects the first use of something only a native target serves (see `ResponsesRequest.nativeOnly`). */
export interface NativeNeeds {
  first: GatewayError | null;
}

/** Notes the first use of something native-only: the 400 names its `param`, the message what it is. */
export function needNative(needs: NativeNeeds, message: string, param: string): void {
  needs.first ??= invalidRequest(
    `${message} needs an upstream that speaks the Responses API natively (a provider with native_responses: ` +
      "true), and no target of this model does.",
    param,
    "unsupported_value",
  );
}
