/**
 * A refused OpenAI request told the way OpenAI tells it: the first zod issue of a chat or embeddings request
 * turned into OpenAI's 400, with the exact `param` (`messages[0].content`) and `code`
 * (`missing_required_parameter`, `invalid_type`, `integer_below_min_value`…) and OpenAI's message, so clients
 * written against OpenAI's errors read the gateway's. Apart from the schemas (request_schemas.ts) because it is
 * the one place that knows OpenAI's wording, for every endpoint's schema alike.
 *
 * @module
 */
import type { z } from "zod";
import { invalidRequest, printable } from "../errors.ts";
import type { JsonObject } from "../openai/types.ts";

/**
 * Bound-check messages that tell {@linkcode toRequestError} whether a number is an integer or a decimal
 * parameter: OpenAI's codes say so (`integer_below_min_value`, `decimal_above_max_value`), zod's issues do not.
 */
export const INT = "integer";
export const DEC = "decimal";

/** `messages[0].content`: the `param` notation OpenAI uses in its errors. */
export function toParam(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return "a number out of range";
    return Number.isInteger(value) ? "an integer" : "a decimal";
  }
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

/** How far into the value a union branch got before failing: later indexes and deeper paths win. */
function compareProgress(a: readonly PropertyKey[], b: readonly PropertyKey[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (typeof x === "number" && typeof y === "number" && x !== y) return x - y;
  }
  return a.length - b.length;
}

/**
 * Replaces a plain (non-discriminated) union failure by the issue of the branch the client evidently meant:
 * a branch that accepted the value's type and got furthest into it. `stop: [5 strings]` thus reports the
 * array's length, not "an array is not an accepted form". Returns the issue unchanged when every branch
 * rejected the type itself.
 */
function meantIssue(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union" || "discriminator" in issue && issue.discriminator !== undefined) {
    return issue;
  }
  let best: z.core.$ZodIssue | undefined;
  for (const branch of issue.errors) {
    const first = branch[0];
    if (first === undefined) continue;
    // A branch that rejected the value's type itself is not the one the client meant.
    if (branch.some((i) => i.code === "invalid_type" && i.path.length === 0)) continue;
    if (best === undefined || compareProgress(first.path, best.path) > 0) best = first;
  }
  if (best === undefined) return issue;
  return meantIssue({ ...best, path: [...issue.path, ...best.path] } as z.core.$ZodIssue);
}

/** The types a union accepts, from its branches' root type errors: "string or array". */
function unionExpected(issue: z.core.$ZodIssueInvalidUnion): string {
  const expected = issue.errors.flatMap((branch) =>
    branch.flatMap((i) => (i.code === "invalid_type" && i.path.length === 0 ? [String(i.expected)] : []))
  );
  const unique = [...new Set(expected)];
  return unique.length > 1 ? `one of ${unique.join(" or ")}` : unique[0] ?? "another form";
}

/** `integer` or `decimal`, as OpenAI names a number's kind in its bound errors. */
function numberKind(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig, value: unknown): string {
  if (issue.message === INT || issue.message === DEC) return issue.message;
  return Number.isInteger(value) ? INT : DEC;
}

/** Turns the first zod issue into the 400 OpenAI would send, naming the offending `param`. */
export function toRequestError(body: JsonObject, first: z.core.$ZodIssue) {
  const issue = meantIssue(first);
  // zod puts a discriminated union's key (`role`) at the end of the path; older versions left it off.
  const path = issue.code === "invalid_union" && issue.discriminator !== undefined &&
      issue.path.at(-1) !== issue.discriminator
    ? [...issue.path, issue.discriminator]
    : issue.path;
  const param = toParam(path);
  const value = valueAt(body, path);
  if (value === undefined) {
    return invalidRequest(`Missing required parameter: '${param}'.`, param, "missing_required_parameter");
  }
  switch (issue.code) {
    case "invalid_type":
      return invalidRequest(
        `Invalid type for '${param}': expected ${issue.expected}, but got ${describe(value)} instead.`,
        param,
        "invalid_type",
      );
    case "too_small": {
      const min = String(issue.minimum);
      if (Array.isArray(value)) {
        if (value.length === 0) {
          return invalidRequest(
            `Invalid '${param}': empty array. Expected an array with minimum length ${min}, ` +
              "but got an empty array instead.",
            param,
            "empty_array",
          );
        }
        return invalidRequest(
          `Invalid '${param}': array too short. Expected an array with minimum length ${min}, ` +
            `but got an array with length ${value.length} instead.`,
          param,
          "array_below_min_length",
        );
      }
      if (typeof value === "string") {
        return invalidRequest(
          value === ""
            ? `Invalid '${param}': empty string. Expected a string with minimum length ${min}, ` +
              "but got an empty string instead."
            : `Invalid '${param}': string too short. Expected a string with minimum length ${min}, ` +
              `but got a string with length ${value.length} instead.`,
          param,
          "invalid_value",
        );
      }
      const kind = numberKind(issue, value);
      return invalidRequest(
        `Invalid '${param}': ${kind} below minimum value. Expected a value >= ${min}, ` +
          `but got ${value} instead.`,
        param,
        `${kind}_below_min_value`,
      );
    }
    case "too_big": {
      const max = String(issue.maximum);
      if (Array.isArray(value)) {
        return invalidRequest(
          `Invalid '${param}': array too long. Expected an array with maximum length ${max}, ` +
            `but got an array with length ${value.length} instead.`,
          param,
          "array_above_max_length",
        );
      }
      if (typeof value === "string") {
        return invalidRequest(
          `Invalid '${param}': string too long. Expected a string with maximum length ${max}, ` +
            `but got a string with length ${value.length} instead.`,
          param,
          "string_above_max_length",
        );
      }
      const kind = numberKind(issue, value);
      return invalidRequest(
        `Invalid '${param}': ${kind} above maximum value. Expected a value <= ${max}, ` +
          `but got ${value} instead.`,
        param,
        `${kind}_above_max_value`,
      );
    }
    case "invalid_value":
      return invalidRequest(
        `Invalid value for '${param}'. Supported values are: ${
          issue.values.map((v) => `'${String(v)}'`).join(", ")
        }.`,
        param,
        "invalid_value",
      );
    case "invalid_union": {
      // A discriminated union: the value at `messages[i].role` is not one of the roles.
      if (issue.discriminator !== undefined && "options" in issue && Array.isArray(issue.options)) {
        const supported = (issue.options as unknown[]).map((o) => `'${String(o)}'`).join(", ");
        if (typeof value !== "string") {
          return invalidRequest(
            `Invalid type for '${param}': expected one of ${supported}, but got ${describe(value)} instead.`,
            param,
            "invalid_type",
          );
        }
        return invalidRequest(
          `Invalid value for '${param}': '${printable(value)}'. Supported values are: ${supported}.`,
          param,
          "invalid_value",
        );
      }
      return invalidRequest(
        `Invalid type for '${param}': expected ${unionExpected(issue)}, but got ${describe(value)} instead.`,
        param,
        "invalid_type",
      );
    }
    default:
      return invalidRequest(`Invalid '${param}': ${issue.message}.`, param, "invalid_value");
  }
}
