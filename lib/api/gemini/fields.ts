/**
 * The checks every part of a Gemini request's translation makes of the client's JSON, each failing with Google's
 * 400 naming the field, and Google's schema types in JSON Schema's terms.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";

/** Google's 400 for the field at `path`. */
export function bad(path: string, message: string) {
  return invalidRequest(`Invalid value at '${path}': ${message}`, path, "invalid_value");
}

/** `value` as an object, else Google's 400 naming `path`. */
export function object(value: unknown, path: string): JsonObject {
  if (!isObject(value)) throw bad(path, "expected an object.");
  return value;
}

/** `value` as a list, else Google's 400 naming `path`. */
export function list(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw bad(path, "expected a list.");
  return value;
}

/** `value` as a string, else Google's 400 naming `path`. */
export function text(value: unknown, path: string): string {
  if (typeof value !== "string") throw bad(path, "expected a string.");
  return value;
}

/** `value` as a finite number (undefined when absent), else Google's 400 naming `path`. */
export function num(value: unknown, path: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) throw bad(path, "expected a number.");
  return value;
}

/** Google's OpenAPI-style schema types (`STRING`, `OBJECT`) in JSON Schema's lower case, recursively. */
export function lowerTypes(schema: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "type" && typeof value === "string") out.type = value.toLowerCase();
    else if (Array.isArray(value)) out[key] = value.map((v) => isObject(v) ? lowerTypes(v) : v);
    else if (isObject(value)) out[key] = lowerTypes(value);
    else out[key] = value;
  }
  return out;
}
