/**
 * What in a Responses request only an upstream speaking the Responses API natively can serve: built-in tools
 * (`web_search`, `mcp`…), their call items, a built-in `tool_choice`, a prompt template. The chat form has no
 * place for them, so a request using one is passed through to a native target as sent. Without one, what
 * the model must read (a call item, a file by id, a template) is refused with the 400 OpenAI gives for an
 * unsupported value, and what it can go without (a built-in tool, a built-in tool choice) is dropped and named
 * in `x-gateway-dropped` (the tolerance rule, lib/http/tolerance.ts).
 *
 * @module
 */
import { type GatewayError, invalidRequest } from "../../errors.ts";
import type { Tolerance } from "../../http/tolerance.ts";

/**
 * Input item types of built-in tools (OpenAI's `Item` union, beyond messages, function and custom tool calls
 * and reasoning).
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
  // Programmatic tool calling: the program the upstream ran and its result (its `fingerprint` must come back).
  "program",
  "program_output",
]);

/**
 * What a request's translation found that a translated target cannot take as sent (lib/http/tolerance.ts):
 * `ResponsesRequest.tolerance`.
 */
export interface NativeNeeds {
  tolerance: Tolerance;
}

/**
 * Notes content only a native target can read (an image or file by id, a built-in tool's item, a prompt
 * template kept upstream): the request goes to native targets, or, when the alias has none, is refused with
 * the 400 naming its `param`, since a translated target would answer without reading it.
 */
export function needNative(needs: NativeNeeds, message: string, param: string): void {
  needs.tolerance.refusal ??= invalidRequest(
    `${message} needs an upstream that speaks the Responses API natively (a provider with native_responses: ` +
      "true), and no target of this model does.",
    param,
    "unsupported_value",
  );
}

/**
 * Notes what a native target serves and a translated one goes without (a built-in tool, log probabilities):
 * native targets are preferred; without one the request is answered without it, and the answer says so.
 */
export function preferNative(needs: NativeNeeds, param: string): void {
  needs.tolerance.native.push(param);
}

/** The 400 of a `strict` alias whose translated target would go without `param`. */
export function strictRefusal(param: string): GatewayError {
  return invalidRequest(
    `'${param}' cannot be served by this model's target, and the model is strict; send the request without it.`,
    param,
    "unsupported_parameter",
  );
}
