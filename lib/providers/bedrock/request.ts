/**
 * OpenAI chat request → Bedrock Converse request body. Pure functions, no I/O.
 *
 * Converse has one top-level `system` list and strictly alternating user/assistant turns, so system and
 * developer messages are collected (in order) into `system`, tool results become `toolResult` blocks in a
 * user turn, and consecutive turns of the same role are merged. Images must be inline bytes: `data:` URLs are
 * decoded to base64 bytes, remote URLs are refused (Converse cannot fetch them). Files are `document` blocks
 * (`./documents.ts`). Tools and the tool choice are `./tool_config.ts`.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { type ChatMessage, type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import {
  always,
  CORE_CHAT_PARAMS,
  LEGACY_FUNCTION_RULES,
  NO_EFFECT_PARAMS,
  parallelCallsOffUnsupported,
  type ParamRules,
  STYLE_HINTS,
  type UnsupportedRules,
} from "../shared/unsupported_params.ts";
import { claudeEffortUnsupported, claudeThinking } from "../shared/thinking_budget.ts";
import {
  claudeParamReason,
  claudeSamplingDropped,
  claudeTemperatureUnsupported,
} from "../shared/claude_sampling.ts";
import { claudeStopUnsupported } from "../shared/claude_stop.ts";
import { answerFormatUnsupported, jsonAnswerChoice, jsonAnswerTool } from "../shared/json_answer_tool.ts";
import { markBlock, markLast, moveMarks } from "../shared/cache_control.ts";
import { withCachePoints } from "./cache_points.ts";
import { type ToolConfig, toToolConfig } from "./tool_config.ts";
import { refuseNonFunctionCalls } from "../shared/history_tools.ts";
import { claudeHistoryLeavesThinkingOff, hasText, partText } from "../shared/claude_history.ts";
import { base64DataUrl, documentBlock, DocumentNames, isBase64Bytes, withDocumentText } from "./documents.ts";

/** One Converse content block, as sent. */
export type ConverseBlock = JsonObject;

/** One Converse turn. */
export interface ConverseMessage {
  role: "user" | "assistant";
  content: ConverseBlock[];
}

/**
 * OpenAI parameters Converse cannot honour: there is no equivalent for several choices, log probabilities,
 * token biases, penalties, seeds, `response_format` types other than text / json_object / json_schema (those two
 * become a forced tool, see `../shared/json_answer_tool.ts`), audio or predicted outputs, and no way to turn off
 * parallel tool calls generically, nor legacy `functions` / `function_call` (see `LEGACY_FUNCTION_RULES`). Each
 * is refused (400) or, with `unsupported_params: drop`, dropped; a value that changes nothing is neither
 * (`top_logprobs: 0`, `parallel_tool_calls: false` without tools the model may call).
 * `reasoning_effort` has no Converse field either; only Claude models take it, through
 * `additionalModelRequestFields` (see {@linkcode bedrockParamRules}).
 */
export const BEDROCK_UNSUPPORTED: UnsupportedRules = {
  n: (v) => v !== 1,
  logprobs: (v) => v === true,
  top_logprobs: (v) => v !== 0,
  logit_bias: (v) => typeof v === "object" && v !== null && Object.keys(v).length > 0,
  presence_penalty: (v) => v !== 0,
  frequency_penalty: (v) => v !== 0,
  seed: always,
  response_format: answerFormatUnsupported,
  parallel_tool_calls: parallelCallsOffUnsupported,
  audio: always,
  modalities: (v) => !(Array.isArray(v) && v.every((m) => m === "text")),
  prediction: always,
  reasoning_effort: always,
  web_search_options: always,
  ...LEGACY_FUNCTION_RULES,
};

/**
 * The parameters the translation reads (`toConverseRequest`), and those it leaves out because they do not
 * change the answer (`user`: Converse has no end-user field). The style hint `verbosity`, which Converse has no
 * control for, is left out and named in either mode (`STYLE_HINTS`). Any other (`top_k` but on Claude, next
 * month's) is unsupported: 400, or dropped and named with `unsupported_params: drop`.
 */
const BEDROCK_KNOWN: ReadonlySet<string> = new Set([...CORE_CHAT_PARAMS, ...NO_EFFECT_PARAMS]);

/**
 * Claude's on Bedrock: those, and `top_k`, which Converse has no field for but Claude takes through
 * `additionalModelRequestFields` (as AWS's Converse examples for Claude send it).
 */
const BEDROCK_CLAUDE_KNOWN: ReadonlySet<string> = new Set([...BEDROCK_KNOWN, "top_k"]);

/**
 * Claude on Bedrock, by model id, inference profile (`us.anthropic.claude-…`) or ARN ending in one. An
 * application inference profile ARN does not name its model, so it counts as not Claude.
 */
export function isClaudeModel(model: string): boolean {
  return /(?:^|[./])anthropic\.claude-/.test(model);
}

const BEDROCK_RULES: ParamRules = {
  vendor: "Bedrock",
  unsupported: BEDROCK_UNSUPPORTED,
  known: BEDROCK_KNOWN,
  hints: STYLE_HINTS,
};
const BEDROCK_CLAUDE_RULES: ParamRules = {
  ...BEDROCK_RULES,
  known: BEDROCK_CLAUDE_KNOWN,
  unsupported: {
    temperature: claudeTemperatureUnsupported,
    stop: claudeStopUnsupported,
    ...BEDROCK_UNSUPPORTED,
    reasoning_effort: claudeEffortUnsupported,
  },
  reason: claudeParamReason,
};

/**
 * What Converse's translation does with a chat request's parameters for `model`: {@linkcode BEDROCK_UNSUPPORTED};
 * Claude models take the `reasoning_effort` values Claude maps, but not beside what Claude refuses with thinking
 * on (a forced tool, a temperature other than 1, top_p under 0.95: see `thinkingExcludedBy`), take no
 * `temperature` above 1 (`../shared/claude_sampling.ts`) nor a blank `stop` sequence (`../shared/claude_stop.ts`), and take `top_k` (`additionalModelRequestFields`)
 * but beside thinking, where it is left out and named instead (`../shared/claude_sampling.ts`).
 */
export function bedrockParamRules(model: string): ParamRules {
  return isClaudeModel(model) ? BEDROCK_CLAUDE_RULES : BEDROCK_RULES;
}

/**
 * The answer allowance added to a Claude thinking budget when the client sets no token limit (Converse has no
 * gateway default of its own; 4,096 is what the `anthropic` provider uses by default).
 */
export const CLAUDE_DEFAULT_ANSWER_TOKENS = 4096;

const IMAGE_FORMATS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/gif": "gif",
  "image/webp": "webp",
};

/** `data:image/png;base64,…` → an image block; anything else is a 400 naming `param`. */
export function imageBlock(url: string, param: string): ConverseBlock {
  const inline = base64DataUrl(url);
  if (!inline) {
    if (/^https?:/i.test(url)) {
      throw invalidRequest(
        "Bedrock models cannot fetch images from URLs; send the image inline as a base64 `data:` URL.",
        param,
        "unsupported_image_url",
      );
    }
    throw invalidRequest("The image URL must be a base64 `data:` URL (data:image/png;base64,…).", param);
  }
  const format = IMAGE_FORMATS[inline.type.toLowerCase()];
  if (!format) {
    throw invalidRequest(
      `Image type '${inline.type}' is not supported by Bedrock; use PNG, JPEG, GIF or WebP.`,
      param,
      "unsupported_image_type",
    );
  }
  if (!isBase64Bytes(inline.data)) throw invalidRequest("The image data is not valid base64.", param);
  // Converse's JSON protocol carries blobs as base64 strings.
  return { image: { format, source: { bytes: inline.data } } };
}

/**
 * The content of a tool result that has no text: Converse requires some content and refuses blank text, so an
 * empty result is an empty JSON object (a `json` ToolResultContentBlock, the form of AWS's own tool-use example),
 * which says "nothing came back" without inventing words the tool never returned.
 */
const EMPTY_TOOL_RESULT: ConverseBlock[] = [{ json: {} }];

/**
 * Content as Converse blocks: text (blank text left out), and with `documents`, the request's document names
 * (a user turn, where Converse takes media), images and files too.
 */
function textParts(content: unknown, param: string, documents?: DocumentNames): ConverseBlock[] {
  if (typeof content === "string") return hasText(content) ? [{ text: content }] : [];
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw invalidRequest("Message content must be a string or an array.", param);
  const blocks: ConverseBlock[] = [];
  content.forEach((part, j) => {
    const partParam = `${param}[${j}]`;
    if (!isObject(part)) throw invalidRequest("Each content part must be an object.", partParam);
    const text = partText(part);
    if (typeof text === "string") {
      // Converse refuses blank text, as Anthropic does (`hasText`).
      if (hasText(text)) blocks.push(markBlock({ text }, part, `${partParam}.cache_control`));
    } else if (part.type === "image_url" && documents !== undefined) {
      const image = part.image_url;
      const url = isObject(image) ? image.url : image;
      if (typeof url !== "string") {
        throw invalidRequest("image_url.url must be a string.", `${partParam}.image_url`);
      }
      blocks.push(markBlock(imageBlock(url, `${partParam}.image_url`), part, `${partParam}.cache_control`));
    } else if (part.type === "file" && documents !== undefined) {
      blocks.push(markBlock(documentBlock(part, partParam, documents), part, `${partParam}.cache_control`));
    } else {
      throw invalidRequest(
        `Content parts of type '${String(part.type)}' are not supported by Bedrock models here.`,
        `${partParam}.type`,
        "unsupported_content_type",
      );
    }
  });
  return blocks;
}

function toolUseBlocks(message: ChatMessage, param: string): ConverseBlock[] {
  const calls = message.tool_calls;
  if (!Array.isArray(calls)) return [];
  refuseNonFunctionCalls(calls, param, "Bedrock");
  return calls.map((call, j) => {
    const fn = isObject(call) && isObject(call.function) ? call.function : {};
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    let input: unknown = {};
    if (args.trim() !== "") {
      try {
        input = JSON.parse(args);
      } catch {
        throw invalidRequest(
          "Tool call arguments must be a JSON object string.",
          `${param}.tool_calls[${j}].function.arguments`,
        );
      }
    }
    if (!isObject(input)) {
      throw invalidRequest(
        "Tool call arguments must be a JSON object.",
        `${param}.tool_calls[${j}].function.arguments`,
      );
    }
    const block = { toolUse: { toolUseId: String((call as JsonObject).id), name: String(fn.name), input } };
    return markBlock(block, call, `${param}.tool_calls[${j}].cache_control`); // a cachePoint follows it
  });
}

/**
 * Whether Converse takes a tool result's `status` for `model`: AWS documents the field for Amazon Nova and
 * Claude only, and other models (Writer's Palmyra among them) have refused a request carrying it.
 */
function takesToolResultStatus(model: string): boolean {
  return isClaudeModel(model) || /(?:^|[./])amazon\.nova-/.test(model);
}

/**
 * The user turn put before a conversation that opens with the assistant's (a chat UI's greeting): Converse
 * refuses it ("A conversation must start with a user message"), which OpenAI, Gemini and the Messages API take.
 * Not blank, since Converse refuses blank text too.
 */
export const CONVERSATION_START = ".";

/**
 * Converse's `system` list and turns for OpenAI `messages` to `model` (which decides whether a tool result
 * carries its `status`). A request of system messages only (which OpenAI answers) has them as its one user turn
 * and no `system` (as for `anthropic`, see `toAnthropicMessages`); one whose first turn is the assistant's gets
 * {@linkcode CONVERSATION_START} as the user turn before it. A user turn's files are documents named uniquely
 * over the whole request, and a turn of documents without text gets the text Converse requires beside them
 * (`./documents.ts`).
 */
export function toConverseMessages(
  messages: ChatMessage[],
  model = "",
): { system: ConverseBlock[]; turns: ConverseMessage[] } {
  const status = takesToolResultStatus(model);
  const documents = new DocumentNames();
  const system: ConverseBlock[] = [];
  const turns: ConverseMessage[] = [];
  const push = (role: "user" | "assistant", content: ConverseBlock[]) => {
    if (content.length === 0) return;
    const last = turns.at(-1);
    if (last?.role === role) {
      // Tool results must lead a user turn that follows tool use; keep them ahead of any merged text.
      const results = content.filter((b) => "toolResult" in b);
      const others = content.filter((b) => !("toolResult" in b));
      const lastResults = last.content.filter((b) => "toolResult" in b);
      const lastOthers = last.content.filter((b) => !("toolResult" in b));
      last.content = [...lastResults, ...results, ...lastOthers, ...others];
    } else {
      turns.push({ role, content });
    }
  };
  messages.forEach((message, i) => {
    const param = `messages[${i}]`;
    switch (message.role) {
      case "system":
      case "developer":
        system.push(...markLast(textParts(message.content, `${param}.content`), message, param));
        break;
      case "user":
        push("user", markLast(textParts(message.content, `${param}.content`, documents), message, param));
        break;
      case "assistant": {
        const text = textParts(message.content, `${param}.content`);
        push("assistant", markLast([...text, ...toolUseBlocks(message, param)], message, param));
        break;
      }
      case "tool": {
        const text = textParts(message.content, `${param}.content`);
        const toolResult: JsonObject = {
          toolUseId: String(message.tool_call_id),
          content: text.length > 0 ? text : EMPTY_TOOL_RESULT,
        };
        if (status) toolResult.status = "success";
        const result = { toolResult };
        push("user", markLast([moveMarks(text, result)], message, param));
        break;
      }
      default:
        throw invalidRequest(
          `Messages with role '${message.role}' are not supported by Bedrock models.`,
          `${param}.role`,
          "unsupported_role",
        );
    }
  });
  // Only system messages: Converse refuses a request without turns, so the instructions are the user's turn.
  if (turns.length === 0 && system.length > 0) {
    return { system: [], turns: [{ role: "user", content: system }] };
  }
  if (turns[0]?.role === "assistant") {
    turns.unshift({ role: "user", content: [{ text: CONVERSATION_START }] });
  }
  return { system, turns: withDocumentText(turns) };
}

/**
 * Claude's extended thinking for `reasoning_effort` (`additionalModelRequestFields.thinking`), as for the
 * `anthropic` provider: not for other models, and not while a tool loop is under way (the last assistant turn
 * uses tools), nor after a final assistant turn (a prefill), because Claude then requires that turn to start
 * with a signed thinking block, which OpenAI clients never send back. Judged on the turns sent, by the one rule
 * the parameter rules use too (`../shared/claude_history.ts`).
 */
function claudeThinkingFor(request: ChatRequest, model: string) {
  if (!isClaudeModel(model) || claudeHistoryLeavesThinkingOff(request.messages)) return null;
  const clientMax = request.max_completion_tokens ?? request.max_tokens;
  return claudeThinking(
    request.reasoning_effort,
    typeof clientMax === "number" ? clientMax : undefined,
    request.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens",
    CLAUDE_DEFAULT_ANSWER_TOKENS,
    model,
  );
}

/**
 * The input of a Converse request to `model`: its `system`, turns and `toolConfig` (`./tool_config.ts`), with a
 * Claude model's prompt-caching markers as `cachePoint` blocks settled over all three (`./cache_points.ts`), and
 * how a JSON `response_format`'s answer tool goes with the client's tools. One source for the request and for
 * the markers it leaves out (`./cache_dropped.ts`).
 */
export function converseInput(request: ChatRequest, model: string) {
  const converse = toConverseMessages(request.messages, model);
  const answer = jsonAnswerTool(request.response_format, "Bedrock");
  const clientTools = Array.isArray(request.tools) && request.tools.length > 0;
  const answerChoice = answer === null ? "client" : jsonAnswerChoice(request.tool_choice, clientTools);
  const toolConfig = toToolConfig(request, converse.turns, answer, answerChoice);
  const input = { ...converse, tools: toolConfig?.tools ?? [] };
  const { system, turns, tools } = isClaudeModel(model) ? withCachePoints(input) : input;
  const config: ToolConfig | undefined = toolConfig && { ...toolConfig, tools };
  return { system, turns, toolConfig: config, answerChoice };
}

/**
 * The Converse / ConverseStream request body for an (already unsupported-filtered) OpenAI request to `model`
 * (the Bedrock model id, which decides whether `reasoning_effort` becomes Claude's thinking and `top_k` its
 * `additionalModelRequestFields.top_k`). A JSON `response_format` that forces a tool call leaves thinking off:
 * Claude refuses thinking with a forced tool choice, and the format is what the client cannot do without.
 */
export function toConverseRequest(request: ChatRequest, model = ""): JsonObject {
  const { system, turns, toolConfig, answerChoice } = converseInput(request, model);
  const body: JsonObject = { messages: turns };
  if (system.length > 0) body.system = system;
  const inference: JsonObject = {};
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (typeof maxTokens === "number") inference.maxTokens = maxTokens;
  const thinking = answerChoice === "client" ? claudeThinkingFor(request, model) : null;
  const additional: JsonObject = {};
  if (thinking !== null) {
    inference.maxTokens = thinking.maxTokens;
    additional.thinking = thinking.thinking;
    if (thinking.outputConfig !== undefined) additional.output_config = thinking.outputConfig;
  }
  // Claude's own sampling parameter; for other models the parameter rules left it out or refused it.
  // Claude refuses it with thinking on, where it is named as dropped (`../shared/claude_sampling.ts`).
  if (isClaudeModel(model) && typeof request.top_k === "number" && thinking === null) {
    additional.top_k = request.top_k;
  }
  if (Object.keys(additional).length > 0) body.additionalModelRequestFields = additional;
  if (typeof request.temperature === "number") inference.temperature = request.temperature;
  // Claude takes one of the two (`../shared/claude_sampling.ts`).
  const claudeDrops = isClaudeModel(model) ? claudeSamplingDropped(request) : [];
  if (typeof request.top_p === "number" && !claudeDrops.includes("top_p")) inference.topP = request.top_p;
  if (typeof request.stop === "string") inference.stopSequences = [request.stop];
  else if (Array.isArray(request.stop)) inference.stopSequences = request.stop;
  if (Object.keys(inference).length > 0) body.inferenceConfig = inference;
  if (toolConfig) body.toolConfig = toolConfig;
  return body;
}
