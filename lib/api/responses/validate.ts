/**
 * Reading one field of a Responses request with OpenAI's own refusals: every check names the exact `param`
 * (`input[2].content[0].type`) and `code` (`invalid_type`, `missing_required_parameter`, `invalid_value`,
 * `integer_below_min_value`…) OpenAI gives, so clients written against OpenAI's errors read the gateway's.
 * A null optional field counts as omitted, as everywhere in OpenAI's API.
 *
 * @module
 */
import { invalidRequest, printable } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";

/** What a wrong value is, in OpenAI's words (`an integer`, `a decimal`, `an array`). */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a decimal";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

/** OpenAI's `invalid_type` refusal of `value` at `param`. */
export function wrongType(param: string, expected: string, value: unknown) {
  return invalidRequest(
    `Invalid type for '${param}': expected ${expected}, but got ${describe(value)} instead.`,
    param,
    "invalid_type",
  );
}

/** OpenAI's `missing_required_parameter` refusal. */
export function missing(param: string) {
  return invalidRequest(`Missing required parameter: '${param}'.`, param, "missing_required_parameter");
}

/** OpenAI's `invalid_value` refusal, listing the values it takes. */
export function badValue(param: string, value: unknown, supported: readonly string[]) {
  const given = typeof value === "string" ? `'${printable(value)}'` : describe(value);
  return invalidRequest(
    `Invalid value: ${given}. Supported values are: ${supported.map((s) => `'${s}'`).join(", ")}.`,
    param,
    "invalid_value",
  );
}

/** `body[key]` as a string, refused at `param` when of another type (or absent and `required`). */
export function string(body: JsonObject, key: string, param: string, required = false): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) {
    if (required) throw missing(param);
    return undefined;
  }
  if (typeof v !== "string") throw wrongType(param, "a string", v);
  return v;
}

/** `body[key]` as a boolean; a top-level field, so its param is `key`. */
export function boolean(body: JsonObject, key: string): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw wrongType(key, "a boolean", v);
  return v;
}

/**
 * `body[key]` as a number within `min`..`max` (an integer when `int`), refused with OpenAI's
 * `integer_below_min_value`-style codes; a top-level field, so its param is `key`.
 */
export function number(body: JsonObject, key: string, min: number, max: number | null, int: boolean) {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  const kind = int ? "integer" : "decimal";
  if (typeof v !== "number" || !Number.isFinite(v) || (int && !Number.isInteger(v))) {
    throw wrongType(key, `an ${kind === "integer" ? "integer" : "number"}`, v);
  }
  // An integer past 2^53 is still an integer (and the chat API calls it one, above its maximum): a bound, not a type.
  if (int) max = Math.min(max ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  if (v < min) {
    throw invalidRequest(
      `Invalid '${key}': ${kind} below minimum value. Expected a value >= ${min}, but got ${v} instead.`,
      key,
      `${kind}_below_min_value`,
    );
  }
  if (max !== null && v > max) {
    throw invalidRequest(
      `Invalid '${key}': ${kind} above maximum value. Expected a value <= ${max}, but got ${v} instead.`,
      key,
      `${kind}_above_max_value`,
    );
  }
  return v;
}
