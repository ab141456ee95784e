/**
 * The words of a config issue. The YAML library's and zod's messages are written for programmers and some
 * quote the input, which may be a secret; here they become one line an operator reads (`must not be empty`,
 * `unknown key "base_ur" (did you mean "base_url"?)`) that never echoes a value. Kept apart from the loader so
 * that load.ts reads as the pipeline it is (read → parse → check → scrub) and the wording is found in one place.
 *
 * @module
 */
import type { Document } from "yaml";
import { z } from "zod";
import type { PathSegment } from "./interpolate.ts";
import { configSchema } from "./schema.ts";
import type { ConfigIssue } from "./types.ts";

/** A schema or interpolation finding at a path, before it is located on a line. */
export interface PathIssue {
  readonly path: readonly PathSegment[];
  readonly message: string;
  /** For an unknown key: the key, whose "did you mean" is worked out only if the issue is shown. */
  readonly unknownKey?: string;
}

/** At most this many lines get a YAML error: after the first, most are echoes of the same mistake. */
const MAX_YAML_ERROR_LINES = 5;

/**
 * YAML errors and warnings (an unknown `!tag` is a warning, and a mistake), one per line, capped, because
 * one broken line makes the parser report every token after it.
 */
export function yamlIssues(doc: Document, lineAt: (offset: number) => number): ConfigIssue[] {
  const byLine = new Map<number, ConfigIssue>();
  let dropped = 0;
  for (const err of [...doc.errors, ...doc.warnings]) {
    const line = lineAt(err.pos[0]);
    if (byLine.has(line)) continue;
    if (byLine.size >= MAX_YAML_ERROR_LINES) {
      dropped++;
      continue;
    }
    byLine.set(line, { path: "", line, message: yamlMessage(err.message) });
  }
  const issues = [...byLine.values()];
  if (dropped > 0) {
    issues.push({ path: "", message: `YAML: ${dropped} more errors, probably caused by the above` });
  }
  return issues;
}

/**
 * The YAML library's message reduced to its first line, without the position (the issue has the line) and
 * without the quoted source text some messages end with, which could be a secret.
 */
function yamlMessage(message: string): string {
  const first = message.split("\n", 1)[0]
    .replace(/ at line \d+, column \d+:?\s*$/, "")
    .replace(/: ".*"$/, "")
    .trim();
  // The library catches its own stack overflow on absurdly deep nesting and reports it as an error.
  if (/Maximum call stack/i.test(first)) return "YAML: nested too deeply";
  return `YAML: ${first}`;
}

/** Rewrites one zod issue into path issues with operator-friendly messages that never echo input. */
export function fromZod(issue: z.core.$ZodIssue, base: readonly PathSegment[]): PathIssue[] {
  const path: PathSegment[] = [...base, ...issue.path.map((s) => (typeof s === "number" ? s : String(s)))];
  switch (issue.code) {
    case "unrecognized_keys":
      return issue.keys.map((key) => ({
        path: [...path, key],
        message: `unknown key "${shown(key)}"`,
        unknownKey: key,
      }));
    case "invalid_key":
      return [{ path, message: `invalid name: ${issue.issues.map((i) => i.message).join("; ")}` }];
    case "invalid_type": {
      const last = path[path.length - 1];
      if (/received undefined$/.test(issue.message) && last !== undefined) {
        return [{ path, message: `missing required key "${last}"` }];
      }
      if (path.length === 0) {
        return [{ path, message: "the config must be a YAML mapping (is the file empty?)" }];
      }
      return [{ path, message: issue.message.replace(/^Invalid input: /, "") }];
    }
    case "invalid_union":
      return fromUnion(issue, path);
    case "too_small":
    case "too_big":
      return [{ path, message: boundMessage(issue) }];
    default:
      return [{ path, message: issue.message.replace(/^(Invalid (input|option|string)): /, "") }];
  }
}

/** "must not be empty", "must be at most 65535": zod's bound messages in the words of a config file. */
function boundMessage(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig): string {
  if (!/^Too (small|big): /.test(issue.message)) return issue.message; // the schema's own wording
  const small = issue.code === "too_small";
  const bound = Number(small ? issue.minimum : issue.maximum);
  if (issue.origin === "array") {
    if (small && bound === 1) return "must not be empty";
    return `must have ${small ? "at least" : "at most"} ${bound} items`;
  }
  if (issue.origin === "string") return `must be ${small ? "at least" : "at most"} ${bound} characters long`;
  const inclusive = issue.inclusive !== false;
  const words = small ? (inclusive ? "at least" : "greater than") : (inclusive ? "at most" : "less than");
  return `must be ${words} ${bound}`;
}

function fromUnion(issue: z.core.$ZodIssueInvalidUnion, path: PathSegment[]): PathIssue[] {
  if (issue.discriminator !== undefined && "options" in issue && issue.options) {
    const options = issue.options.map((o) => JSON.stringify(o)).join(", ");
    return [{ path, message: `${issue.discriminator} must be one of ${options}` }];
  }
  // A branch that got past the type check is the one the operator meant; report its findings.
  const meant = issue.errors.filter((branch) => branch.some((i) => i.code !== "invalid_type"));
  if (meant.length === 1) return meant[0].flatMap((i) => fromZod(i, path));
  // A message given to the union in the schema beats anything generic.
  if (issue.message !== "Invalid input") return [{ path, message: issue.message }];
  const expected = issue.errors.flatMap((branch) =>
    branch.flatMap((i) => (i.code === "invalid_type" && i.path.length === 0 ? [i.expected] : []))
  );
  if (meant.length === 0 && expected.length > 0) {
    return [{ path, message: `expected ${[...new Set(expected)].join(" or ")}` }];
  }
  return [{ path, message: "invalid value" }];
}

/** Every key the schema knows, to suggest a fix for a typo like `base_ur`. */
const KNOWN_KEYS: readonly string[] = [...collectKeys(configSchema, new Set())];

function collectKeys(
  schema: z.core.$ZodType,
  seen: Set<z.core.$ZodType>,
  keys = new Set<string>(),
): Set<string> {
  if (seen.has(schema)) return keys;
  seen.add(schema);
  const children: z.core.$ZodType[] = [];
  if (schema instanceof z.ZodObject) {
    for (const [key, child] of Object.entries(schema.shape as Record<string, z.core.$ZodType>)) {
      keys.add(key);
      children.push(child);
    }
  } else if (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault) {
    children.push(schema.unwrap());
  } else if (schema instanceof z.ZodUnion) {
    children.push(...schema.options);
  } else if (schema instanceof z.ZodArray) {
    children.push(schema.element);
  } else if (schema instanceof z.ZodRecord) {
    children.push(schema.valueType);
  } else if (schema instanceof z.ZodPipe) {
    children.push(schema.in, schema.out);
  }
  for (const child of children) collectKeys(child, seen, keys);
  return keys;
}

/** ` (did you mean "base_url"?)` for a typo of a known key, else "". */
export function suggestion(key: string): string {
  const lower = key.toLowerCase();
  const limit = Math.min(2, Math.floor(key.length / 2));
  // Only keys of a similar length can be that close: skips the edit distance for almost every known key.
  const close = KNOWN_KEYS
    .filter((known) => Math.abs(known.length - lower.length) <= limit)
    .map((known) => ({ known, d: editDistance(lower, known) }))
    .filter(({ d }) => d > 0 && d <= limit)
    .sort((a, b) => a.d - b.d)[0];
  return close ? ` (did you mean "${close.known}"?)` : "";
}

/** A name from the file as shown in a message: long ones cut, so one issue stays one readable line. */
function shown(name: string): string {
  return name.length > 80 ? `${name.slice(0, 77)}...` : name;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}
