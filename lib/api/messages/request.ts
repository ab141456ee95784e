/**
 * A `POST /v1/messages` request (Anthropic's Messages API) validated, and translated to the gateway's chat
 * form: the form policy reads for every target, and the request translated targets get. Native targets
 * (Anthropic, Claude on Bedrock) get the validated body as sent instead (`lib/api/messages/create_native.ts`).
 *
 * Top-level parameters, as Anthropic documents them:
 * - `model` (an alias), `max_tokens` (required) → `max_completion_tokens`, `messages` and `system` (content.ts),
 *   `tools` and `tool_choice` (tools.ts; the `system` turns' tool changes apply to the tools, tool_changes.ts),
 *   `stop_sequences` → `stop`, `temperature` (0–1), `top_p`, `top_k`
 *   (kept as `top_k`; the handler refuses it for targets that cannot take it), `metadata.user_id` → `user`,
 *   `stream`, `service_tier` (`standard_only` → `default`; `auto` is every target's default).
 * - `thinking: {type: "enabled", budget_tokens}` → `reasoning_effort` by {@linkcode effortForBudget};
 *   `adaptive` (the model decides) → the effort of `output_config.effort` if given, else none; `disabled` →
 *   none. `output_config.effort` → `reasoning_effort` (`xhigh` and `max` → `high`), `output_config.format`
 *   (a JSON schema) → `response_format`.
 * - The tolerance rule (lib/http/tolerance.ts): a native target gets the body as sent, every parameter
 *   included. A translated target goes without what it cannot serve, and the answer says so
 *   (`x-gateway-dropped`): what only Claude serves (`container`, `mcp_servers`; Claude targets are preferred
 *   for them), `context_management` edits other than clearing thinking (a translated target never gets the
 *   history's thinking, so `clear_thinking_…` is applied already), parameters that do not change the answer
 *   (`speed`, `inference_geo`, …), and parameters this translation does not know (`output_config`'s too, as
 *   `output_config.task_budget`). An `output_config.effort` without thinking asked for is a hint, which a
 *   target with no effort control goes without, named (`effortHint`, effort_hint.ts).
 *
 * @module
 */
import type { ClientTerms } from "../../errors.ts";
import { newTolerance, type Tolerance } from "../../http/tolerance.ts";
import { type ChatMessage, type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { effortForBudget } from "../../openai/effort_for_budget.ts";
import { anthropicRefusal } from "./anthropic_checks.ts";
import { cacheMarker, type ContentNotes, extraFields, systemText, turnMessages } from "./content.ts";
import { translateTool, translateToolChoice, translateTools } from "./tools.ts";
import { applyToolChanges } from "./tool_changes.ts";
import { arrayField, booleanField, fieldError, numberField, stringField, wrongType } from "./validate.ts";

/** A validated Messages request (the contract with the native path, `lib/api/messages/create_native.ts`). */
export interface MessagesRequest {
  /** The chat form, for policy and translated targets; `model` is the alias as the client sent it. */
  chat: ChatRequest;
  stream: boolean;
  /** The validated client body, as sent. */
  body: JsonObject;
  /** The client's `anthropic-version` header. */
  version: string | null;
  /** The client's `anthropic-beta` header. */
  betas: string | null;
  /** The client param of each chat message (`system`, `messages.3.content`), for errors found in the chat form. */
  messageParams: string[];
  /** What a translated target does not get of the request (lib/http/tolerance.ts). */
  tolerance: Tolerance;
  /**
   * Thinking blocks in the history, which translated targets do not get as blocks (a thinking block's text goes
   * as its turn's `reasoning_content`, content.ts; its signature, and a redacted block, go nowhere).
   */
  droppedThinking: number;
  /** `stop_sequences` as sent (empty when none), to tell which one stopped the answer. */
  stopSequences: string[];
  /** The client's field that set `reasoning_effort`: `output_config.effort` when sent, else `thinking`. */
  effortParam: "thinking" | "output_config.effort";
  /**
   * Whether the chat form's `reasoning_effort` is a hint: set by `output_config.effort` without
   * `thinking: {type: "enabled"}` (Claude Code sends `effort: "high"` with adaptive thinking on every request).
   * A translated target that cannot take it goes without it, named as dropped (effort_hint.ts), where an
   * effort the client asked thinking for is refused there.
   */
  effortHint: boolean;
}

/** Parameters translated to the chat form. */
const TRANSLATED = new Set([
  "model",
  "max_tokens",
  "messages",
  "system",
  "stop_sequences",
  "stream",
  "temperature",
  "top_p",
  "top_k",
  "tools",
  "tool_choice",
  "thinking",
  "metadata",
  "service_tier",
  "output_config",
  "cache_control",
  "speed",
]);

/** Parameters whose features run at Anthropic: Claude targets are preferred; a translated one goes without. */
const CLAUDE_FEATURES = new Set(["container", "mcp_servers"]);

/**
 * `context_management` as a translated target serves it: edits that clear thinking are what the translation
 * does anyway (a translated target gets no thinking from the history); any other edit (clearing tool uses…)
 * is dropped, by its path.
 */
function contextManagement(value: unknown, tolerance: Tolerance): void {
  const edits = isObject(value) && Array.isArray(value.edits) ? value.edits : null;
  if (edits === null) {
    tolerance.dropped.push("context_management");
    return;
  }
  edits.forEach((edit, i) => {
    const type = isObject(edit) ? edit.type : undefined;
    if (typeof type === "string" && type.startsWith("clear_thinking")) return;
    tolerance.dropped.push(`context_management.edits.${i}`);
  });
}

const EFFORTS: Readonly<Record<string, string>> = {
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "high",
  max: "high",
};

/** The `output_config` fields translated to the chat form. */
const OUTPUT_CONFIG_FIELDS = new Set(["effort", "format"]);

/**
 * `output_config` in the chat form: `effort` (returned) and `format`. Its other fields (`task_budget`, …) are
 * named as dropped, as unknown parameters are: a native target gets them as sent, a translated one goes without.
 */
function outputConfig(value: unknown, chat: ChatRequest, notes: ContentNotes): string | undefined {
  if (!isObject(value)) throw wrongType("output_config", "an object", value);
  extraFields(value, OUTPUT_CONFIG_FIELDS, "output_config", notes);
  let effort: string | undefined;
  const given = stringField(value, "effort", "output_config.effort");
  if (given !== undefined) {
    effort = EFFORTS[given];
    if (effort === undefined) {
      throw fieldError("output_config.effort", "Input should be 'low', 'medium', 'high', 'xhigh' or 'max'.");
    }
  }
  const format = value.format;
  if (format !== undefined && format !== null) {
    if (!isObject(format) || format.type !== "json_schema" || !isObject(format.schema)) {
      throw fieldError("output_config.format", "Input should be {type: 'json_schema', schema: {…}}.");
    }
    chat.response_format = {
      type: "json_schema",
      json_schema: { name: "output", schema: format.schema, strict: true },
    };
  }
  return effort;
}

/**
 * `thinking` in the chat form. A budget at or above `max_tokens` is not refused: with interleaved thinking (the
 * `interleaved-thinking-2025-05-14` beta, or a model that interleaves by default) it is the whole turn's,
 * across thinking blocks, and may exceed `max_tokens`. Whether it may is Anthropic's to judge on a Claude
 * target; on a translated one the budget only picks an effort.
 */
function thinking(value: unknown, effort: string | undefined, chat: ChatRequest): void {
  if (!isObject(value)) throw wrongType("thinking", "an object", value);
  switch (value.type) {
    case "enabled": {
      const budget = numberField(value, "budget_tokens", "thinking.budget_tokens", {
        min: 1024,
        integer: true,
      });
      if (budget === undefined) throw fieldError("thinking.budget_tokens", "Field required");
      chat.reasoning_effort = effort ?? effortForBudget(budget);
      return;
    }
    case "adaptive":
    case "between_tools":
      if (effort !== undefined) chat.reasoning_effort = effort;
      return;
    case "disabled":
      return;
    default:
      throw fieldError("thinking.type", "Input should be 'enabled', 'disabled' or 'adaptive'.");
  }
}

/** The client's parameter for a chat-form parameter this translation named differently. */
const CLIENT_PARAMS: Readonly<Record<string, string>> = {
  max_completion_tokens: "max_tokens",
  max_tokens: "max_tokens",
  stop: "stop_sequences",
  user: "metadata.user_id",
  parallel_tool_calls: "tool_choice.disable_parallel_tool_use",
  response_format: "output_config.format",
};

/** The client's field for the chat form's `param` (a message's, a renamed parameter), or undefined for none. */
function clientParam(parsed: MessagesRequest, param: string): string | undefined {
  const message = /^messages\[(\d+)\]/.exec(param);
  if (message !== null) return parsed.messageParams[Number(message[1])];
  return param === "reasoning_effort" ? parsed.effortParam : CLIENT_PARAMS[param];
}

/** A quoted mention of a chat param in an error's message ('reasoning_effort', `messages[2].content`). */
const QUOTED = /(['`])([a-z_]+(?:\[\d+\])?(?:\.[\w.[\]]+)?)\1/g;

/**
 * Chat params that are also words a vendor quotes for something else (OpenAI's "only allowed for messages with
 * role 'user'"): renamed only where the error is about that param itself.
 */
const PLAIN_WORDS: ReadonlySet<string> = new Set(["user", "stop"]);

/**
 * The Messages API's terms for `inClientTerms` (`lib/errors.ts`): a translated target's 400 renamed so that its message
 * starts with the Messages request's own field (for a refused `reasoning_effort`, `output_config.effort: …` or
 * `thinking: …`, whichever set it; `messages.2.content: …` for a refused content part), and an Anthropic client
 * learns what it sent that the target cannot take. Anthropic's error has no `param`, so the message is what the
 * client reads: every quoted chat param it mentions ("The parameter 'reasoning_effort' …", a vendor's own
 * "'reasoning_effort' is not supported with this model") is the client's field too. Other errors are left as
 * they are.
 */
export function messagesClientTerms(parsed: MessagesRequest): ClientTerms {
  return (err) => {
    if (err.status !== 400) return undefined;
    const client = clientParam(parsed, err.param);
    if (client === undefined) return undefined;
    const message = err.message.replace(QUOTED, (quoted, mark: string, name: string) => {
      if (PLAIN_WORDS.has(name) && name !== err.param) return quoted;
      const renamed = clientParam(parsed, name);
      return renamed === undefined ? quoted : `${mark}${renamed}${mark}`;
    });
    return { param: client, message: `${client}: ${message}` };
  };
}

function header(headers: Headers, name: string): string | null {
  const value = headers.get(name);
  return value === null || value.trim() === "" ? null : value.trim();
}

/**
 * Validates a Messages request and translates it to the chat form; throws Anthropic's 400 for the first bad
 * field. `headers` are the client's, for `anthropic-version` and `anthropic-beta` (any value is accepted).
 */
export function parseMessagesRequest(input: unknown, headers: Headers): MessagesRequest {
  if (!isObject(input)) throw wrongType("body", "an object", input);
  const body = input;
  const notes: ContentNotes = { droppedThinking: 0, tolerance: newTolerance(), toolChanges: [] };
  for (const key of Object.keys(body)) {
    if (TRANSLATED.has(key) || body[key] === null) continue;
    if (CLAUDE_FEATURES.has(key)) notes.tolerance.native.push(key);
    else if (key === "context_management") contextManagement(body[key], notes.tolerance);
    else notes.tolerance.dropped.push(key);
  }
  const model = stringField(body, "model", "model", true)!;
  if (model === "") throw fieldError("model", "String should have at least 1 character.");
  const maxTokens = numberField(body, "max_tokens", "max_tokens", { min: 1, integer: true });
  if (maxTokens === undefined) throw fieldError("max_tokens", "Field required");
  const turns = arrayField(body, "messages", "messages");
  if (turns === undefined) throw fieldError("messages", "Field required");

  const messages: ChatMessage[] = [];
  const params: string[] = [];
  if (body.system !== undefined && body.system !== null) {
    const text = systemText(body.system, notes);
    if (text !== "") {
      messages.push({ role: "system", content: text });
      params.push("system");
    }
  }
  turns.forEach((turn, i) => turnMessages(turn, i, messages, params, notes));
  if (turns.length === 0) throw fieldError("messages", "At least one message is required.");

  const chat: ChatRequest = { model, messages, max_completion_tokens: maxTokens };
  const stream = booleanField(body, "stream", "stream") ?? false;
  if (stream) chat.stream = true;
  cacheMarker(body, "", notes.tolerance);
  const stops = arrayField(body, "stop_sequences", "stop_sequences") ?? [];
  stops.forEach((s, i) => {
    if (typeof s !== "string") throw wrongType(`stop_sequences.${i}`, "a valid string", s);
  });
  if (stops.length > 0) chat.stop = stops;
  const temperature = numberField(body, "temperature", "temperature", { min: 0, max: 1 });
  if (temperature !== undefined) chat.temperature = temperature;
  const topP = numberField(body, "top_p", "top_p", { min: 0, max: 1 });
  if (topP !== undefined) chat.top_p = topP;
  const topK = numberField(body, "top_k", "top_k", { min: 0, integer: true });
  if (topK !== undefined) chat.top_k = topK;
  const tools = arrayField(body, "tools", "tools");
  if (tools !== undefined) translateTools(tools, chat, notes);
  const declared = (tools ?? []).map((tool) => isObject(tool) ? tool.name : undefined);
  const defined = applyToolChanges(
    notes.toolChanges,
    chat,
    declared,
    (definition, path) => translateTool(definition, path, notes),
    notes.tolerance,
  );
  if (body.tool_choice !== undefined && body.tool_choice !== null) {
    translateToolChoice(body.tool_choice, chat, [...declared, ...defined], notes, body.mcp_servers != null);
  }
  const effort = body.output_config == null ? undefined : outputConfig(body.output_config, chat, notes);
  if (body.thinking !== undefined && body.thinking !== null) {
    thinking(body.thinking, effort, chat);
    // How Claude shows its thinking (`display: "omitted"`); a translated target's reasoning is shown as it comes.
    if (isObject(body.thinking) && body.thinking.display != null) {
      notes.tolerance.dropped.push("thinking.display");
    }
  } else if (effort !== undefined) chat.reasoning_effort = effort;
  if (body.metadata !== undefined && body.metadata !== null) {
    if (!isObject(body.metadata)) throw wrongType("metadata", "an object", body.metadata);
    const user = stringField(body.metadata, "user_id", "metadata.user_id");
    if (user !== undefined) chat.user = user;
  }
  const tier = stringField(body, "service_tier", "service_tier");
  if (tier !== undefined && tier !== "auto" && tier !== "standard_only") {
    throw fieldError("service_tier", "Input should be 'auto' or 'standard_only'.");
  }
  if (tier === "standard_only") chat.service_tier = "default";
  // What Anthropic refuses that a translated target would serve: judged by a Claude target, else refused.
  anthropicRefusal(body, notes.tolerance);
  const speed = stringField(body, "speed", "speed");
  // Fast mode is how quickly Claude answers, not what: a translated target answers at its own speed.
  if (speed === "fast") notes.tolerance.dropped.push("speed");
  else if (speed !== undefined && speed !== "standard") {
    throw fieldError("speed", "Input should be 'standard' or 'fast'.");
  }

  return {
    chat,
    stream,
    body,
    version: header(headers, "anthropic-version"),
    betas: header(headers, "anthropic-beta"),
    messageParams: params,
    tolerance: notes.tolerance,
    droppedThinking: notes.droppedThinking,
    stopSequences: stops as string[],
    effortParam: effort === undefined ? "thinking" : "output_config.effort",
    effortHint: chat.reasoning_effort !== undefined && effort !== undefined &&
      !(isObject(body.thinking) && body.thinking.type === "enabled"),
  };
}
