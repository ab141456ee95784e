/**
 * An admin body's first problem as a 400 in OpenAI's shape whose `param` names the field (`limits.rpm`,
 * `models.1`, `cache.max_age`), so a script or the console can point at it: zod's first issue, with a union's
 * failure blamed on the branch that took the value's type.
 *
 * @module
 */
import type { z } from "zod";
import { type GatewayError, invalidRequest, printable } from "../errors.ts";

/** A 400 naming `param` (an unknown field's name is the client's text: the message shows it cut short). */
export function badField(param: string, message: string): GatewayError {
  return invalidRequest(`Invalid '${printable(param)}': ${message}.`, param, "invalid_value");
}

/** Whether `issue` is a union branch refusing the value's very type (`cache: true` to the object branch). */
function refusesType(issue: z.core.$ZodIssue): boolean {
  return issue.path.length === 0 && (issue.code === "invalid_type" || issue.code === "invalid_value");
}

/**
 * A plain union's failure (`cache`: `false` or an object) as the issue of the one branch that took the value's
 * type, so `cache: { max_age: "soon" }` is blamed on `cache.max_age`, not on `cache` as a whole.
 */
function meantIssue(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union") return issue;
  const meant = issue.errors.filter((branch) => branch.length > 0 && !branch.some(refusesType));
  if (meant.length !== 1) return issue;
  const first = meant[0][0];
  return meantIssue({ ...first, path: [...issue.path, ...first.path] } as z.core.$ZodIssue);
}

/** "expected false or object": what a union takes, when the value was none of its types. */
function unionMessage(issue: z.core.$ZodIssueInvalidUnion): string {
  const forms = issue.errors.flatMap((branch) =>
    branch.filter(refusesType).flatMap((i) =>
      i.code === "invalid_type" ? [i.expected] : i.code === "invalid_value" ? i.values.map(String) : []
    )
  );
  return forms.length > 0 ? `expected ${[...new Set(forms)].join(" or ")}` : "not an accepted form";
}

/** The first issue of a failed parse as a 400 naming its field. */
function firstIssue(error: z.ZodError): GatewayError {
  const issue = meantIssue(error.issues[0]);
  const path = issue.path.map(String);
  if (issue.code === "unrecognized_keys") {
    const param = [...path, issue.keys[0]].join(".");
    return badField(param, "unknown field");
  }
  const param = path.join(".") || "body";
  if (issue.code === "invalid_union") return badField(param, unionMessage(issue));
  return badField(param, issue.message.replace(/\.$/, ""));
}

/** `body` parsed by `schema`; a failure is the 400 of its first issue, naming its field. */
export function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (!result.success) throw firstIssue(result.error);
  return result.data;
}
