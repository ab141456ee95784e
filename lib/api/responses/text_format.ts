/**
 * A Responses request's `text.format` (plain text, a JSON object, or a named JSON schema) as the chat form's
 * `response_format`, and the format the Response echoes with OpenAI's defaults (`strict: false`); its
 * `text.verbosity` as the chat form's `verbosity`.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { badValue, missing, string, wrongType } from "./validate.ts";

/** The spec's `Verbosity` values. */
const VERBOSITIES = ["low", "medium", "high"];

/**
 * `text.verbosity`, the chat form's `verbosity` (the same values in OpenAI's chat API), or undefined when
 * absent: it goes to the target like any chat parameter, so a target whose parameter rules cannot honour it
 * decides (refused, or dropped and named), never silently lost.
 */
export function textVerbosity(text: unknown): string | undefined {
  if (!isObject(text)) throw wrongType("text", "an object", text);
  const verbosity = string(text, "verbosity", "text.verbosity");
  if (verbosity !== undefined && !VERBOSITIES.includes(verbosity)) {
    throw badValue("text.verbosity", verbosity, VERBOSITIES);
  }
  return verbosity;
}

/** `text.format` → the chat `response_format`, and the format the Response echoes. */
export function responseFormat(text: unknown): { chat?: JsonObject; echo: JsonObject } {
  if (!isObject(text)) throw wrongType("text", "an object", text);
  const format = text.format ?? undefined;
  if (format === undefined) return { echo: { type: "text" } };
  if (!isObject(format)) throw wrongType("text.format", "an object", format);
  const type = format.type;
  if (type === "text") return { echo: { type: "text" } };
  if (type === "json_object") return { chat: { type: "json_object" }, echo: { type: "json_object" } };
  if (type === "json_schema") {
    const name = string(format, "name", "text.format.name", true)!;
    const schema = format.schema;
    if (!isObject(schema)) {
      throw schema === undefined
        ? missing("text.format.schema")
        : wrongType("text.format.schema", "an object", schema);
    }
    const description = string(format, "description", "text.format.description");
    const strict = format.strict ?? undefined;
    if (strict !== undefined && typeof strict !== "boolean") {
      throw wrongType("text.format.strict", "a boolean", strict);
    }
    const jsonSchema: JsonObject = { name, schema };
    if (description !== undefined) jsonSchema.description = description;
    if (strict !== undefined) jsonSchema.strict = strict;
    const echo: JsonObject = { type: "json_schema", name, schema, strict: strict ?? false };
    if (description !== undefined) echo.description = description;
    return { chat: { type: "json_schema", json_schema: jsonSchema }, echo };
  }
  throw type === undefined
    ? missing("text.format.type")
    : badValue("text.format.type", type, ["text", "json_object", "json_schema"]);
}
