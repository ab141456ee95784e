/**
 * The small checks the Messages request's validation is made of, each failing with Anthropic's 400
 * `invalid_request_error` whose message starts with the field's path as Anthropic writes it
 * (`messages.0.content.1.source: …`), so a client sees which field was wrong.
 *
 * @module
 */
import { invalidRequest, printable } from "../../errors.ts";
import type { GatewayError } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { Tolerance } from "../../http/tolerance.ts";

/** A 400 about the field at `path`. */
export function fieldError(path: string, message: string): GatewayError {
  return invalidRequest(`${path}: ${message}`, path, "invalid_request_error");
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

const CLAUDE_ONLY = "; it is served only by Claude targets, and this alias's target is not one.";

/**
 * Notes content only a Claude target can read (a block type, a source, citations): the request goes to Claude
 * targets, or is refused with this 400, since a translated target would answer without reading it.
 */
export function claudeOnly(tolerance: Tolerance, path: string, what: string): void {
  tolerance.refusal ??= fieldError(path, what + CLAUDE_ONLY);
}

/**
 * The 400 for a field of the wrong JSON type; for one that is absent (a tool without `input_schema`),
 * Anthropic's "Field required", not a type.
 */
export function wrongType(path: string, expected: string, value: unknown): GatewayError {
  if (value === undefined) return fieldError(path, "Field required");
  return fieldError(path, `Input should be ${expected}, got ${kind(value)}.`);
}

/** The 400 for the first key of `object` outside `known` (Anthropic's "extra inputs"), or null. */
export function extraField(
  object: JsonObject,
  known: ReadonlySet<string>,
  path: string,
): GatewayError | null {
  for (const key of Object.keys(object)) {
    if (!known.has(key)) {
      return fieldError(
        path === "" ? printable(key) : `${path}.${printable(key)}`,
        "Extra inputs are not permitted",
      );
    }
  }
  return null;
}

/** Refuses any key of `object` outside `known`, as Anthropic refuses extra inputs. */
export function onlyKnown(object: JsonObject, known: ReadonlySet<string>, path: string): void {
  const error = extraField(object, known, path);
  if (error !== null) throw error;
}

/** `object[key]` as a string; undefined when absent (or null and not required). */
export function stringField(
  object: JsonObject,
  key: string,
  path: string,
  required = false,
): string | undefined {
  const value = object[key];
  if (value === undefined || (value === null && !required)) {
    if (required) throw fieldError(path, "Field required");
    return undefined;
  }
  if (typeof value !== "string") throw wrongType(path, "a valid string", value);
  return value;
}

/** `object[key]` as a boolean, undefined when absent or null. */
export function booleanField(object: JsonObject, key: string, path: string): boolean | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw wrongType(path, "a valid boolean", value);
  return value;
}

/** `object[key]` as a number within `[min, max]` (an integer when `integer`), undefined when absent or null. */
export function numberField(
  object: JsonObject,
  key: string,
  path: string,
  { min, max, integer = false }: { min?: number; max?: number; integer?: boolean },
): number | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw wrongType(path, integer ? "a valid integer" : "a valid number", value);
  }
  if (integer && !Number.isInteger(value)) throw wrongType(path, "a valid integer", value);
  if (min !== undefined && value < min) {
    throw fieldError(path, `Input should be greater than or equal to ${min}.`);
  }
  if (max !== undefined && value > max) {
    throw fieldError(path, `Input should be less than or equal to ${max}.`);
  }
  return value;
}

/** `object[key]` as an array, undefined when absent or null. */
export function arrayField(object: JsonObject, key: string, path: string): unknown[] | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw wrongType(path, "a valid list", value);
  return value;
}

/** A `cache_control` value: checked for shape (`{type: "ephemeral", …}`), kept by native targets only. */
export function checkCacheControl(value: unknown, path: string): void {
  if (value === undefined || value === null) return;
  if (!isObject(value)) throw wrongType(path, "an object", value);
  if (value.type !== "ephemeral") throw fieldError(`${path}.type`, "Input should be 'ephemeral'.");
}
