/**
 * The checks every part of a Gemini request's translation makes of the client's JSON, each failing with Google's
 * 400 naming the field, and its numbers as proto3 JSON writes them.
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

/**
 * `value`, a float field, as a finite number (undefined when absent): a number, or one written as a string as
 * proto3 JSON allows (`"0.5"`), as Google reads it. Anything else is Google's 400 naming `path`, and so is
 * `"NaN"` or `"Infinity"`: valid proto3 JSON, but no setting Google takes, and no JSON number a target could get.
 */
export function num(value: unknown, path: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const n = protoNumber(value);
  if (n === undefined) throw bad(path, "expected a number.");
  if (!Number.isFinite(n)) throw bad(path, "expected a finite number.");
  return n;
}

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

/**
 * `value`, an int32 field, as {@linkcode num} reads it, which must be integral (`"256"`, or `256.0` as proto3
 * JSON reads an integer) and within int32, as Google requires; else Google's 400 naming `path`.
 */
export function int(value: unknown, path: string): number | undefined {
  const n = num(value, path);
  if (n !== undefined && (!Number.isInteger(n) || n < INT32_MIN || n > INT32_MAX)) {
    throw bad(path, "expected an integer.");
  }
  return n;
}

/** A number as proto3 JSON writes one in a string: decimal, with an optional fraction and exponent. */
const DECIMAL = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** The floats proto3 JSON writes as words. */
const SPECIAL: ReadonlyMap<string, number> = new Map([["NaN", NaN], ["Infinity", Infinity], [
  "-Infinity",
  -Infinity,
]]);

/**
 * `value` as proto3 JSON reads a number: a JSON number, or a string holding one (`"256"`, `"0.5"`, `"1e3"`, and
 * for floats `"NaN"`, `"Infinity"`, `"-Infinity"`); undefined for anything else.
 */
export function protoNumber(value: unknown): number | undefined {
  if (typeof value === "number") return value;
  if (typeof value !== "string") return undefined;
  if (DECIMAL.test(value)) return Number(value);
  return SPECIAL.get(value);
}
