/**
 * OpenAI chat request → Anthropic Messages request, as pure functions.
 *
 * Anthropic differs from OpenAI in ways that matter for translation: the system prompt is a top-level field,
 * `max_tokens` is required, tool results are `tool_result` blocks inside a *user* turn, and turns must
 * alternate user/assistant (consecutive same-role turns are merged here). Parameters are sorted into four
 * groups so that nothing is lost silently:
 *
 * - translated: messages, max_tokens / max_completion_tokens, stop, temperature, top_p (left out and named
 *   beside a temperature: see `../shared/claude_sampling.ts`), tools, tool_choice, parallel_tool_calls, user,
 *   stream, reasoning_effort (→ `thinking`, see `../shared/thinking_budget.ts`), response_format json_object /
 *   json_schema (→ a forced tool, see `../shared/json_answer_tool.ts`);
 * - not sent because they cannot change the answer: `stream_options`, `store`, `metadata` (OpenAI's
 *   dashboard tags), `service_tier`, `prediction`, `prompt_cache_key`, `safety_identifier`, `n: 1`,
 *   `logprobs: false`, `response_format: {type: "text"}`, `modalities: ["text"]`, zero penalties;
 * - Anthropic-native and passed through: `top_k` (left out and named beside thinking, which Claude refuses it
 *   with: `../shared/claude_sampling.ts`);
 * - left out and named whatever `unsupported_params`: the style hint `verbosity`, which Claude has no control
 *   for (`STYLE_HINTS`);
 * - unsupported (400 `unsupported_parameter`, or left out with `unsupported_params: drop`): see
 *   {@linkcode anthropicUnsupportedRules}.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { hasPlaceholderName } from "../../openai/placeholder_filenames.ts";
import type { ParamRules, UnsupportedRules } from "../shared/unsupported_params.ts";
import {
  always,
  CORE_CHAT_PARAMS,
  LEGACY_FUNCTION_RULES,
  NO_EFFECT_PARAMS,
  STYLE_HINTS,
} from "../shared/unsupported_params.ts";
import { claudeEffortUnsupported, claudeThinking } from "../shared/thinking_budget.ts";
import {
  claudeParamReason,
  claudeSamplingDropped,
  claudeTemperatureUnsupported,
} from "../shared/claude_sampling.ts";
import { claudeStopUnsupported } from "../shared/claude_stop.ts";
import { markBlock, markLast, moveMarks } from "../shared/cache_control.ts";
import { placeCacheControl, systemBlocks } from "./cache_control.ts";
import { answerFormatUnsupported, jsonAnswerChoice, jsonAnswerTool } from "../shared/json_answer_tool.ts";
import { toAnthropicTools, toolFields } from "./tool_config.ts";
import { refuseNonFunctionCalls } from "../shared/history_tools.ts";
import { vendorMediaType } from "../shared/media_type.ts";
import { decodeUtf8Base64 } from "../../encoding/utf8_base64.ts";
import { claudeHistoryLeavesThinkingOff, hasText, partText } from "../shared/claude_history.ts";

/** Parameters the translation reads. */
const TRANSLATED = new Set([...CORE_CHAT_PARAMS, "parallel_tool_calls"]);

/** Anthropic's own sampling parameters a client may send as extra body fields. */
const PASS_THROUGH = ["top_k"] as const;

/** OpenAI parameters that do not change the answer (or are handled elsewhere) and are not sent. */
const NO_EFFECT = [...NO_EFFECT_PARAMS, "prediction"];

const nonZero = (v: unknown) => typeof v !== "number" || v !== 0;

/**
 * Parameters Anthropic's Messages API cannot honour, with the values that are harmless (`n: 1`,
 * `logprobs: false`, zero penalties, `response_format: {type: "text"}`) allowed. Checked against Anthropic's
 * "OpenAI SDK compatibility" page, which lists these as ignored — the gateway refuses instead of ignoring:
 *
 * - `temperature` above 1: Claude's range is 0 to 1 (`../shared/claude_sampling.ts`);
 * - a `stop` sequence that is empty or only whitespace, which Claude refuses (`../shared/claude_stop.ts`);
 * - `n` > 1: one answer per request; `logprobs` / `top_logprobs`: no token probabilities;
 * - `presence_penalty`, `frequency_penalty`, `logit_bias`: no such sampling controls;
 * - `seed`: no deterministic sampling (best effort even at OpenAI, but refusing keeps the rule uniform);
 * - `response_format` types other than text, json_object and json_schema; `audio`, `modalities` other than
 *   text, `reasoning_effort` values other than none/minimal/low/medium/high, and any effort that would turn
 *   thinking on beside what Anthropic refuses with it (a forced tool, a temperature other than 1, top_p under
 *   0.95: see `thinkingExcludedBy`; a `top_k` is left out instead, see `../shared/claude_sampling.ts`),
 *   `web_search_options`, legacy `functions` / `function_call`.
 *
 * Any other parameter the gateway does not know is unsupported too (see {@linkcode ANTHROPIC_PARAM_RULES}),
 * because Anthropic rejects unknown fields and dropping them unannounced could change the answer.
 */
export const anthropicUnsupportedRules: UnsupportedRules = {
  temperature: claudeTemperatureUnsupported,
  stop: claudeStopUnsupported,
  n: (v) => v !== 1,
  logprobs: (v) => v !== false,
  top_logprobs: nonZero,
  presence_penalty: nonZero,
  frequency_penalty: nonZero,
  logit_bias: (v) => typeof v !== "object" || Object.keys(v as object).length > 0,
  seed: always,
  response_format: answerFormatUnsupported,
  audio: always,
  modalities: (v) => !Array.isArray(v) || v.some((m) => m !== "text"),
  reasoning_effort: claudeEffortUnsupported,
  web_search_options: always,
  ...LEGACY_FUNCTION_RULES,
};

/**
 * What Anthropic's translation does with a chat request's parameters: {@linkcode anthropicUnsupportedRules},
 * and every parameter in none of the known groups is unsupported too.
 */
export const ANTHROPIC_PARAM_RULES: ParamRules = {
  vendor: "Anthropic",
  unsupported: anthropicUnsupportedRules,
  known: new Set([...TRANSLATED, ...NO_EFFECT, ...PASS_THROUGH]),
  hints: STYLE_HINTS,
  reason: claudeParamReason,
};

/** What the translation needs besides the request. */
export interface AnthropicRequestOptions {
  /** The upstream model id. */
  model: string;
  /** `max_tokens` when the client gives neither max_tokens nor max_completion_tokens. */
  defaultMaxTokens: number;
}

/** One Anthropic content block. */
export type AnthropicBlock = JsonObject & { type: string };

/** One Anthropic message (turn). */
export interface AnthropicMessage extends JsonObject {
  role: "user" | "assistant";
  content: string | AnthropicBlock[];
}

/** Text of a system/developer message: a string, or its text parts joined. */
function systemText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.filter(isObject).map((p) => (typeof p.text === "string" ? p.text : "")).join("\n");
  }
  return "";
}

const DATA_URL = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

/** An OpenAI `image_url` part as an Anthropic image block (base64 for data URLs, url source otherwise). */
function imageBlock(part: JsonObject, param: string): AnthropicBlock {
  const image = part.image_url;
  const url = typeof image === "string" ? image : isObject(image) ? image.url : undefined;
  if (typeof url !== "string" || url === "") {
    throw invalidRequest(`Missing required parameter: '${param}.image_url.url'.`, `${param}.image_url.url`);
  }
  const data = DATA_URL.exec(url);
  if (data) {
    return { type: "image", source: { type: "base64", media_type: vendorMediaType(data[1]), data: data[2] } };
  }
  if (/^https?:\/\//i.test(url)) return { type: "image", source: { type: "url", url } };
  throw invalidRequest(
    `Invalid '${param}.image_url.url': expected a base64 data URL or an http(s) URL.`,
    `${param}.image_url.url`,
    "invalid_image_url",
  );
}

/**
 * An OpenAI `file` part as an Anthropic `document` block, the way the Messages API's own documents become file
 * parts (lib/api/messages/content.ts), so a Messages request served over the chat form reaches Claude with its
 * documents: a plain-text file as a `text` source of its decoded text, a PDF as a `base64` one, its `filename`
 * (when the client wrote it) as the title. Claude takes no other inline file, and a file by id is another vendor's upload: refused.
 */
function documentBlock(part: JsonObject, param: string): AnthropicBlock {
  const file = isObject(part.file) ? part.file : {};
  const data = typeof file.file_data === "string" ? DATA_URL.exec(file.file_data) : null;
  const media = data === null ? undefined : vendorMediaType(data[1]);
  const text = media === "text/plain" ? decodeUtf8Base64(data![2]) : null;
  const source = text !== null
    ? { type: "text", media_type: "text/plain", data: text }
    : media === "application/pdf"
    ? { type: "base64", media_type: media, data: data![2] }
    : undefined;
  if (source === undefined) {
    throw invalidRequest(
      "Anthropic models take a file part only inline (`file_data`), as a PDF or plain text (UTF-8).",
      `${param}.file`,
      "unsupported_parameter",
    );
  }
  // A name the gateway wrote for a file the client named nowhere (a Gemini file's `file`) is no title of its.
  const named = typeof file.filename === "string" && file.filename !== "" && !hasPlaceholderName(file);
  const title = named ? { title: file.filename } : {};
  return { type: "document", source, ...title };
}

/**
 * User or tool content as Anthropic blocks; images and documents allowed, blank text dropped (`hasText`: one rule with Converse
 * and with the thinking decision, `../shared/claude_history.ts`).
 */
function contentBlocks(content: unknown, param: string): AnthropicBlock[] {
  if (typeof content === "string") return hasText(content) ? [{ type: "text", text: content }] : [];
  if (!Array.isArray(content)) return [];
  const blocks: AnthropicBlock[] = [];
  content.forEach((part, j) => {
    const p = `${param}[${j}]`;
    if (!isObject(part)) return;
    if (part.type === "text" || part.type === "refusal") {
      const text = partText(part);
      if (typeof text === "string" && hasText(text)) {
        blocks.push(markBlock({ type: "text", text }, part, `${p}.cache_control`));
      }
    } else if (part.type === "image_url") {
      blocks.push(markBlock(imageBlock(part, p), part, `${p}.cache_control`));
    } else if (part.type === "file") {
      blocks.push(markBlock(documentBlock(part, p), part, `${p}.cache_control`));
    } else {
      throw invalidRequest(
        `The content part type '${String(part.type)}' is not supported by Anthropic models.`,
        `${p}.type`,
        "unsupported_parameter",
      );
    }
  });
  return blocks;
}

/** Assistant `tool_calls` as `tool_use` blocks, with their markers; arguments must be a JSON object. */
function toolUseBlocks(toolCalls: unknown, i: number): AnthropicBlock[] {
  if (!Array.isArray(toolCalls)) return [];
  refuseNonFunctionCalls(toolCalls, `messages[${i}]`, "Anthropic");
  return toolCalls.map((call, j) => {
    const param = `messages[${i}].tool_calls[${j}].function.arguments`;
    const fn = isObject(call) && isObject(call.function) ? call.function : {};
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    let input: unknown;
    try {
      input = args.trim() === "" ? {} : JSON.parse(args);
    } catch {
      throw invalidRequest(`Invalid '${param}': not valid JSON.`, param, "invalid_tool_arguments");
    }
    if (!isObject(input)) {
      throw invalidRequest(`Invalid '${param}': expected a JSON object.`, param, "invalid_tool_arguments");
    }
    const block = {
      type: "tool_use",
      id: String(isObject(call) ? call.id : ""),
      name: String(fn.name),
      input,
    };
    // Anthropic caches up to a tool_use block too; the call's marker is the one opencode's agent steps carry.
    return markBlock(block, call, `messages[${i}].tool_calls[${j}].cache_control`);
  });
}

/** Appends a turn, merging it into the previous one when the role repeats (Anthropic needs alternation). */
function pushTurn(
  turns: { role: "user" | "assistant"; blocks: AnthropicBlock[] }[],
  role: "user" | "assistant",
  blocks: AnthropicBlock[],
) {
  if (blocks.length === 0) return;
  const last = turns.at(-1);
  if (last && last.role === role) last.blocks.push(...blocks);
  else turns.push({ role, blocks });
}

/**
 * The `system` prompt and the alternating turns for `messages`. System and developer messages anywhere are
 * hoisted into `system` (joined with a newline, as Anthropic's own compatibility layer does; as text blocks when
 * one carries a prompt-caching marker); tool results are moved to the front of their user turn, where Anthropic
 * requires them. The client's `cache_control` markers go onto the blocks made of their parts and messages
 * (`./cache_control.ts`), settled with those of `tools` (the request's, `./tool_config.ts`), which come before
 * them in Anthropic's prefix. System messages alone (OpenAI answers them) are the one user turn, not also the
 * system prompt: the client said them once.
 */
export function toAnthropicMessages(messages: readonly JsonObject[], tools: readonly JsonObject[] = []): {
  system: string | AnthropicBlock[] | undefined;
  messages: AnthropicMessage[];
} {
  const system: string[] = [];
  const systemAsBlocks: AnthropicBlock[] = [];
  const turns: { role: "user" | "assistant"; blocks: AnthropicBlock[] }[] = [];
  messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    const param = `${at}.content`;
    switch (m.role) {
      case "system":
      case "developer":
        system.push(systemText(m.content));
        systemAsBlocks.push(...systemBlocks(m, at));
        break;
      case "user":
        pushTurn(turns, "user", markLast(contentBlocks(m.content, param), m, at));
        break;
      case "assistant":
        pushTurn(
          turns,
          "assistant",
          markLast([...contentBlocks(m.content, param), ...toolUseBlocks(m.tool_calls, i)], m, at),
        );
        break;
      case "tool": {
        const inner = contentBlocks(m.content, param);
        const result: AnthropicBlock = { type: "tool_result", tool_use_id: String(m.tool_call_id) };
        if (inner.length > 0) {
          const onlyText = inner.length === 1 && inner[0].type === "text";
          result.content = onlyText ? inner[0].text : inner;
        }
        pushTurn(turns, "user", markLast([moveMarks(inner, result)], m, at));
        break;
      }
      default:
        throw invalidRequest(
          `Messages with role '${
            String(m.role)
          }' are not supported by Anthropic models; use 'tool' messages.`,
          `messages[${i}].role`,
          "unsupported_parameter",
        );
    }
  });
  // Only system messages: Anthropic refuses a request without turns, so the instructions are the user's turn.
  if (turns.length === 0 && system.join("").trim() !== "") {
    turns.push({
      role: "user",
      blocks: systemAsBlocks.splice(0).filter((b) => String(b.text).trim() !== ""),
    });
    system.length = 0;
  }
  const ordered = turns.map(({ role, blocks }) =>
    role === "user"
      ? [...blocks.filter((b) => b.type === "tool_result"), ...blocks.filter((b) => b.type !== "tool_result")]
      : blocks
  );
  const systemMarked = placeCacheControl(tools, systemAsBlocks, ordered);
  const out: AnthropicMessage[] = turns.map(({ role }, t) => {
    const blocks = ordered[t];
    const plain = blocks.length === 1 && blocks[0].type === "text" && blocks[0].cache_control === undefined;
    return { role, content: plain ? String(blocks[0].text) : blocks };
  });
  if (systemMarked) return { system: systemAsBlocks, messages: out };
  return { system: system.length > 0 ? system.join("\n") : undefined, messages: out };
}

/**
 * The Anthropic Messages request body for an OpenAI chat request whose unsupported parameters were already
 * handled (see {@linkcode anthropicUnsupportedRules}). Throws a 400 `GatewayError` naming the parameter for
 * content Anthropic cannot take (audio/file parts, non-function tools, invalid tool-call arguments).
 *
 * `reasoning_effort` turns on extended thinking, except while a tool loop is under way (the last assistant
 * turn calls tools): Anthropic would refuse that turn without its signed thinking block, and its own advice is
 * to leave thinking off then, so that step is answered without thinking and the loop keeps working. The same
 * for a conversation that ends with an assistant turn (a prefill), which Anthropic refuses with thinking on
 * unless it starts with a thinking block. Both are judged on the turns sent, by the one rule the parameter rules
 * use too (`../shared/claude_history.ts`): a blank turn left out or a system message moved into `system` does
 * not count. Nor is it
 * turned on when a `response_format` forces a tool call: Anthropic refuses thinking with a forced tool choice,
 * and the format is what the client cannot do without. An effort beside the client's own forced tool or
 * sampling settings never gets here: the parameter rules refuse or drop it first (`claudeEffortUnsupported`).
 *
 * Tools and the tool choice are `./tool_config.ts`, which declares a history's tools when the client sent none.
 */
export function toAnthropicRequest(request: ChatRequest, options: AnthropicRequestOptions): JsonObject {
  const tools = toAnthropicTools(request.tools) ?? [];
  const { system, messages } = toAnthropicMessages(request.messages, tools);
  const answer = jsonAnswerTool(request.response_format, "Anthropic");
  const answerChoice = answer === null ? "client" : jsonAnswerChoice(request.tool_choice, tools.length > 0);
  const clientMax = request.max_completion_tokens ?? request.max_tokens;
  let maxTokens = clientMax ?? options.defaultMaxTokens;
  const thinking = claudeHistoryLeavesThinkingOff(request.messages) || answerChoice !== "client"
    ? null
    : claudeThinking(
      request.reasoning_effort,
      typeof clientMax === "number" ? clientMax : undefined,
      request.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens",
      options.defaultMaxTokens,
      options.model,
    );
  if (thinking !== null) maxTokens = thinking.maxTokens;
  const body: JsonObject = { model: options.model, max_tokens: maxTokens, messages };
  if (thinking !== null) body.thinking = thinking.thinking;
  if (thinking?.outputConfig !== undefined) body.output_config = thinking.outputConfig;
  if (system !== undefined) body.system = system;
  if (typeof request.stop === "string") body.stop_sequences = [request.stop];
  else if (Array.isArray(request.stop)) body.stop_sequences = request.stop;
  const withoutSampling = claudeSamplingDropped(request);
  for (const name of ["temperature", "top_p", ...PASS_THROUGH]) {
    // Claude refuses top_k with thinking on: the thinking sent decides, whatever the request asked.
    if (withoutSampling.includes(name) || (name === "top_k" && thinking !== null)) continue;
    if (request[name] !== undefined && request[name] !== null) body[name] = request[name];
  }
  Object.assign(body, toolFields(request, messages, tools, answer, answerChoice));
  if (typeof request.user === "string" && request.user !== "") body.metadata = { user_id: request.user };
  if (request.stream === true) body.stream = true;
  return body;
}
