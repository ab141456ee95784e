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
import { isObject, type JsonObject } from "../../openai/types.ts";
import { number, string, wrongType } from "./validate.ts";

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

/**
 * Top-level parameters only a native target can honour, noted in `needs`. Compaction settings
 * (`context_management`) and prompt-cache options are applied upstream and do not change the answer: a
 * translated target goes without them. A `prompt` template lives upstream (under the provider's account), and
 * moderation (`block` mode withholds what it flags) is run by OpenAI: a translated target would answer without
 * the template, or unmoderated, so without a native target they are refused. Log probabilities are not
 * carried through the chat form (a `top_logprobs` of 0 asks for none, so every target serves it).
 */
export function nativeFields(body: JsonObject, needs: NativeNeeds): void {
  if (body.context_management != null) preferNative(needs, "context_management");
  if (body.prompt != null) {
    if (!isObject(body.prompt)) throw wrongType("prompt", "an object", body.prompt);
    if (string(body.prompt, "id", "prompt.id", true) === "") {
      throw invalidRequest("Invalid 'prompt.id': empty string.", "prompt.id", "invalid_value");
    }
    needNative(needs, "A prompt template ('prompt')", "prompt");
  }
  if (body.moderation != null) {
    if (!isObject(body.moderation)) throw wrongType("moderation", "an object", body.moderation);
    string(body.moderation, "model", "moderation.model", true);
    needNative(needs, "Moderation ('moderation')", "moderation");
  }
  if (body.prompt_cache_options != null) {
    if (!isObject(body.prompt_cache_options)) {
      throw wrongType("prompt_cache_options", "an object", body.prompt_cache_options);
    }
    preferNative(needs, "prompt_cache_options");
  }
  const topLogprobs = number(body, "top_logprobs", 0, 20, true);
  if (topLogprobs !== undefined && topLogprobs > 0) {
    preferNative(needs, "top_logprobs");
  }
}
