/**
 * Google's `Schema` (a function's `parameters`, `generationConfig.responseSchema`: "a select subset of an
 * OpenAPI 3.0 schema object") as the JSON Schema a chat target reads. Only Google's own fields are rewritten, in
 * the schema positions (`properties`' values, `items`, `anyOf`'s entries): what the client wrote as data
 * (`enum`, `default`, `example`, property names) keeps its case, as Google reads it. A JSON Schema the client
 * gave as such (`parametersJsonSchema`, `responseJsonSchema`) is not this: it goes as written.
 *
 * - `type`: Google's upper-case `Type` (normalize.ts wrote it so) in JSON Schema's lower case;
 *   `TYPE_UNSPECIFIED` is no type.
 * - `nullable: true`: JSON Schema has no such keyword, so the value's type takes `"null"` beside its own (and an
 *   `anyOf` a null entry, an `enum` the null value); else a chat target would refuse a null Google allows.
 * - `propertyOrdering`: the order `properties` are listed in, which is the order OpenAI's structured outputs
 *   write the keys in; the keyword itself is Google's alone.
 * - The counts (`minItems`, `maxLength`, …) are int64s, which proto3 JSON writes as strings (`"5"`, as Google's
 *   reference shows them), and `minimum` / `maximum` doubles: numbers here, as JSON Schema requires. The enum
 *   of an `INTEGER` or `NUMBER` is strings in Google's Schema (`enum: ["101", "201"]`, its own example): their
 *   numbers here, since a JSON Schema of type integer whose enum holds strings admits no value at all.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { protoNumber } from "./fields.ts";

/** Google's `Schema` fields holding an int64 or a double, which proto3 JSON may write as a string. */
const NUMBERS = new Set([
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
]);

/** A numeric string as its number (one Google would refuse is left as written, for the target to refuse). */
function numeric(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const n = protoNumber(value);
  return Number.isFinite(n) ? n : value;
}

/** A value in a schema position: a schema, converted; anything else as the client wrote it. */
const sub = (value: unknown): unknown => isObject(value) ? jsonSchemaOf(value) : value;

/** `properties` in `ordering`'s order (the names it lists first, then the rest as written). */
function ordered(properties: JsonObject, ordering: unknown): JsonObject {
  const out: JsonObject = {};
  const names = Array.isArray(ordering) ? ordering : [];
  for (const name of names) {
    if (typeof name === "string" && Object.hasOwn(properties, name)) out[name] = sub(properties[name]);
  }
  for (const [name, value] of Object.entries(properties)) {
    if (!Object.hasOwn(out, name)) out[name] = sub(value);
  }
  return out;
}

/** A Google `Schema` (normalised: normalize.ts) as JSON Schema. A new object: the client's is not changed. */
export function jsonSchemaOf(schema: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "type") {
      if (value !== "TYPE_UNSPECIFIED") out.type = typeof value === "string" ? value.toLowerCase() : value;
    } else if (key === "properties") {
      out.properties = isObject(value) ? ordered(value, schema.propertyOrdering) : value;
    } else if (key === "items") out.items = sub(value);
    else if (key === "anyOf") out.anyOf = Array.isArray(value) ? value.map(sub) : value;
    else if (NUMBERS.has(key)) out[key] = numeric(value);
    else if (key !== "nullable" && key !== "propertyOrdering") out[key] = value;
  }
  if ((out.type === "integer" || out.type === "number") && Array.isArray(out.enum)) {
    out.enum = out.enum.map(numeric);
  }
  if (schema.nullable === true) {
    if (typeof out.type === "string") out.type = [out.type, "null"];
    if (Array.isArray(out.anyOf)) out.anyOf = [...out.anyOf, { type: "null" }];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  }
  return out;
}
