/**
 * OpenAI's `response_format` (`json_object`, `json_schema`) for vendors whose chat has no such field but can be
 * made to answer in JSON by forcing a tool call: Anthropic's Messages API and Bedrock's Converse. Anthropic's own
 * docs give this as the way to get JSON on every Claude model ("JSON mode" through `tool_choice`), and Converse's
 * `toolChoice` does the same for the models behind it. Both vendors now also have native structured outputs
 * (Anthropic `output_config.format`, Converse `outputConfig.textFormat`), but only on recent models, which the
 * gateway cannot tell apart by id; a forced tool works on all of them.
 *
 * The request gets one more tool, {@linkcode JSON_ANSWER_TOOL}, whose input schema is the format's schema, and a
 * tool choice that makes the model call it; the answer's call of that tool is turned back into assistant text
 * (the JSON) with finish reason `stop`, whole and streamed. Because the answer translators see only the answer,
 * the name is reserved: a client tool with that name is refused, so a call of it can only be the answer.
 *
 * With the client's own tools the model may call them or answer (the tool choice is "some tool"), as OpenAI's
 * model may call a function or answer in the format; `tool_choice: "required"` or a named function asks for a
 * call this turn, so the answer tool is not offered then; `"none"` forces the answer.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";

/** The reserved name of the tool that carries a formatted answer. */
export const JSON_ANSWER_TOOL = "json_response";

/** The answer tool for one request: the schema its input must match and what the model is told. */
export interface JsonAnswerTool {
  name: typeof JSON_ANSWER_TOOL;
  description: string;
  /** A JSON schema whose root is an object (both vendors' tool inputs are objects). */
  schema: JsonObject;
}

/** `response_format` types a forced tool can serve (and `text`, which needs nothing). */
export const ANSWER_FORMATS: readonly string[] = ["text", "json_object", "json_schema"];

/** For `applyUnsupportedRules`: a `response_format` that is not one of {@linkcode ANSWER_FORMATS}. */
export function answerFormatUnsupported(format: unknown): boolean {
  return !isObject(format) || typeof format.type !== "string" || !ANSWER_FORMATS.includes(format.type);
}

const ASK = "Give your final answer by calling this tool: its input is the whole answer, as JSON";

/**
 * The answer tool for a `response_format` (already checked by {@linkcode answerFormatUnsupported}), or null
 * when the format is absent or `text`. `json_object` is any JSON object (`{"type": "object"}`). A json_schema
 * whose root is not an object cannot be a tool's input and is a 400 naming the schema; so is one that is not a
 * JSON object. `vendor` names the models in the message.
 */
export function jsonAnswerTool(format: unknown, vendor: string): JsonAnswerTool | null {
  if (!isObject(format) || format.type === "text") return null;
  if (format.type === "json_object") {
    return { name: JSON_ANSWER_TOOL, description: `${ASK} (a JSON object).`, schema: { type: "object" } };
  }
  const spec = isObject(format.json_schema) ? format.json_schema : {};
  const raw = spec.schema ?? { type: "object" };
  const param = "response_format.json_schema.schema";
  if (!isObject(raw)) throw invalidRequest(`Invalid '${param}': expected a JSON schema object.`, param);
  if (raw.type !== undefined && raw.type !== "object") {
    throw invalidRequest(
      `Invalid '${param}': ${vendor} models take a JSON schema whose root is an object ('type': 'object').`,
      param,
      "unsupported_parameter",
    );
  }
  const name = typeof spec.name === "string" && spec.name !== "" ? ` named "${spec.name}"` : "";
  const about = typeof spec.description === "string" && spec.description !== "" ? ` ${spec.description}` : "";
  return {
    name: JSON_ANSWER_TOOL,
    description: `${ASK}${name}, matching the input schema.${about}`,
    schema: raw.type === undefined ? { type: "object", ...raw } : raw,
  };
}

/** A 400 for a client tool that takes the reserved name (`tools[i].function.name`). */
export function refuseReservedToolName(tools: unknown, vendor: string): void {
  if (!Array.isArray(tools)) return;
  tools.forEach((tool, i) => {
    const fn = isObject(tool) && isObject(tool.function) ? tool.function : {};
    if (fn.name === JSON_ANSWER_TOOL) {
      throw invalidRequest(
        `The tool name '${JSON_ANSWER_TOOL}' is reserved on ${vendor} models: the gateway uses it to carry ` +
          "`response_format` answers. Rename the tool.",
        `tools[${i}].function.name`,
        "invalid_value",
      );
    }
  });
}

/**
 * How the answer tool goes with the client's tools and `tool_choice`:
 *
 * - `answer`: only the answer tool may be called (no client tools, or `tool_choice: "none"`);
 * - `any`: some tool must be called, the client's or the answer tool (`auto` or no choice, with tools);
 * - `client`: the client's choice stands and the answer tool is not offered (`required`, a named function, or a
 *   form the vendor translation refuses).
 */
export type JsonAnswerChoice = "answer" | "any" | "client";

/** {@linkcode JsonAnswerChoice} for a request with a JSON format. */
export function jsonAnswerChoice(toolChoice: unknown, hasClientTools: boolean): JsonAnswerChoice {
  if (!hasClientTools || toolChoice === "none") return "answer";
  if (toolChoice === undefined || toolChoice === null || toolChoice === "auto") return "any";
  return "client";
}

/** Whether a tool call in an answer is the formatted answer (the name is reserved, see the module docs). */
export function isJsonAnswer(name: unknown): boolean {
  return name === JSON_ANSWER_TOOL;
}
