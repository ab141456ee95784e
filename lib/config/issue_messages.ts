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
import { schemasAt } from "./schema_at.ts";
import type { ConfigIssue } from "./types.ts";

/** A schema or interpolation finding at a path, before it is located on a line. */
export interface PathIssue {
  readonly path: readonly PathSegment[];
  readonly message: string;
  /** For an unknown key: the key, whose "did you mean" is worked out only if the issue is shown. */
  readonly unknownKey?: string;
  /**
   * The path ends in a key from the file the schema refused (an unknown key, an invalid name): shown cut by
   * {@linkcode shownKey}, in the path as in the message, because it may hold a value written into it.
   */
  readonly keyFromFile?: true;
}

/** At most this many lines get a YAML error: after the first, most are echoes of the same mistake. */
const MAX_YAML_ERROR_LINES = 5;

/**
 * An unquoted `${` after a `{` or `[` on the same line: `- { name: ops, token: ${ADMIN_TOKEN} }`. In a flow
 * collection `{` and `}` are YAML's own, so the parser reads `$` as a value and `{ADMIN_TOKEN}` as a mapping,
 * and says only "Unexpected flow-map-start at node end".
 */
const FLOW_VARIABLE = /[{[][^#]*?(?<!["'])\$\{/;

/** What a YAML error on a line with {@linkcode FLOW_VARIABLE} most likely means. */
const FLOW_VARIABLE_HINT = ' (inside { } or [ ], quote a ${VAR}: "${VAR}")';

/**
 * A second document in the file (after a `---`), in words an operator acts on: the library's own message tells
 * a programmer to call another function.
 */
const MULTIPLE_DOCUMENTS =
  "YAML: the file must be one YAML document; a second one starts here (remove the ---)";

/**
 * YAML errors and warnings (an unknown `!tag` is a warning, and a mistake), one per line, capped, because
 * one broken line makes the parser report every token after it. An error on a line with an unquoted `${VAR}`
 * in a flow collection says how to fix it ({@linkcode FLOW_VARIABLE}); the line itself is never quoted.
 */
export function yamlIssues(
  doc: Document,
  lineAt: (offset: number) => number,
  /** The source, for the `${VAR}` hint; a file that is not interpolated (a price catalog) gives none. */
  text = "",
): ConfigIssue[] {
  const byLine = new Map<number, ConfigIssue>();
  let lines: string[] | undefined;
  const hint = (line: number): string => {
    lines ??= text.split("\n");
    return FLOW_VARIABLE.test(lines[line - 1] ?? "") ? FLOW_VARIABLE_HINT : "";
  };
  let dropped = 0;
  for (const err of [...doc.errors, ...doc.warnings]) {
    const line = lineAt(err.pos[0]);
    if (byLine.has(line)) continue;
    if (byLine.size >= MAX_YAML_ERROR_LINES) {
      dropped++;
      continue;
    }
    const message = err.code === "MULTIPLE_DOCS"
      ? MULTIPLE_DOCUMENTS
      : `${yamlMessage(err.message)}${hint(line)}`;
    byLine.set(line, { path: "", line, message });
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

/**
 * `issues`, each naming the variables its value came out empty from, when it did (`${AN_KEY}` with AN_KEY set
 * to ""): "must not be empty" alone sends the operator to the file, where the value is not.
 */
export function withEmptyVariables(
  issues: readonly PathIssue[],
  emptied: readonly { readonly path: readonly PathSegment[]; readonly variables: readonly string[] }[],
): PathIssue[] {
  if (emptied.length === 0) return [...issues];
  const from = new Map(emptied.map((e) => [e.path.join("."), e.variables.join(", ")]));
  return issues.map((issue) => {
    const variables = from.get(issue.path.join("."));
    return variables === undefined
      ? issue
      : { ...issue, message: `${issue.message} (environment variable ${variables})` };
  });
}

/** Rewrites one zod issue into path issues with operator-friendly messages that never echo input. */
export function fromZod(issue: z.core.$ZodIssue, base: readonly PathSegment[]): PathIssue[] {
  const path: PathSegment[] = [...base, ...issue.path.map((s) => (typeof s === "number" ? s : String(s)))];
  switch (issue.code) {
    case "unrecognized_keys":
      return issue.keys.map((key) => ({
        path: [...path, key],
        message: `unknown key "${shownKey(key)}"${keyHint(key)}`,
        unknownKey: key,
        keyFromFile: true,
      }));
    case "invalid_key": {
      // The key is the path's last segment (zod puts it there).
      const key = String(path[path.length - 1] ?? "");
      const why = issue.issues.map((i) => i.message).join("; ");
      return [{ path, message: `invalid name: ${why}${keyHint(key)}`, keyFromFile: true }];
    }
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
  if (issue.origin === "string") {
    if (small && bound === 1) return "must not be empty";
    return `must be ${small ? "at least" : "at most"} ${bound} characters long`;
  }
  const inclusive = issue.inclusive !== false;
  const words = small ? (inclusive ? "at least" : "greater than") : (inclusive ? "at most" : "less than");
  return `must be ${words} ${bound}`;
}

/**
 * True when a union's branch refused the value for its kind, not its content: a wrong type, or not the one
 * literal it takes (`"catalog"`, `false`). Any other finding means the value is of the branch's kind.
 */
function refusedKind(branch: readonly z.core.$ZodIssue[]): boolean {
  return branch.some((i) => i.path.length === 0 && (i.code === "invalid_type" || i.code === "invalid_value"));
}

function fromUnion(issue: z.core.$ZodIssueInvalidUnion, path: PathSegment[]): PathIssue[] {
  if (issue.discriminator !== undefined && "options" in issue && issue.options) {
    const options = issue.options.map((o) => JSON.stringify(o)).join(", ");
    return [{ path, message: `${issue.discriminator} must be one of ${options}` }];
  }
  // A branch of the value's kind is the one the operator meant; report its findings: `price: { input: "0.5" }`
  // is a price with a text for a number, not a misspelt `catalog`.
  const meant = issue.errors.filter((branch) => !refusedKind(branch));
  if (meant.length === 1) return meant[0].flatMap((i) => fromZod(i, path));
  // A message given to the union in the schema beats anything generic.
  if (issue.message !== "Invalid input") return [{ path, message: issue.message }];
  const expected = issue.errors.flatMap((branch) =>
    branch.flatMap((i) => {
      if (i.path.length > 0) return [];
      if (i.code === "invalid_type") return [i.expected];
      return i.code === "invalid_value" ? i.values.map((v) => JSON.stringify(v)) : [];
    })
  );
  if (meant.length === 0 && expected.length > 0) {
    return [{ path, message: `expected ${[...new Set(expected)].join(" or ")}` }];
  }
  return [{ path, message: "invalid value" }];
}

/** The keys a mapping at `place` may have (of every provider type at `providers.NAME`), for suggestions. */
export function keysAt(place: readonly PathSegment[]): string[] {
  const keys = new Set<string>();
  for (const schema of schemasAt(place)) {
    if (schema instanceof z.ZodObject) { for (const key of Object.keys(schema.shape)) keys.add(key); }
  }
  return [...keys];
}

/**
 * ` (did you mean "base_url"?)` for a typo of a key allowed at `place` (the mapping the unknown key is in), of the
 * part {@linkcode shownKey} shows, else "". Only that mapping's keys count: `server: { timout: … }` is "timeouts",
 * not `timeout`, which is a key elsewhere.
 */
export function suggestion(key: string, place: readonly PathSegment[]): string {
  const lower = key.split(KEY_END, 1)[0].toLowerCase();
  const limit = Math.min(2, Math.floor(lower.length / 2));
  // Only keys of a similar length can be that close: skips the edit distance for almost every key.
  const close = keysAt(place)
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

/**
 * Where a key the schema refused is cut when shown. No key of the schema holds `:`, `=` or whitespace, and a key
 * that does is most often a value written into it: `{ api_key:sk-… }` (no space after the colon) is, to YAML, the
 * key `api_key:sk-…` with no value, and `{Authorization:"Bearer sk-…"}` a header named all of that.
 */
const KEY_END = /[:=\s]/;

/**
 * A key from the file that the schema refused, as a message or a path shows it: up to its first `:`, `=` or
 * whitespace (`api_key:…`), so a value written into the key never reaches the output; long ones cut too.
 */
export function shownKey(key: string): string {
  const end = key.search(KEY_END);
  if (end < 0) return shown(key);
  const mark = key[end] === ":" || key[end] === "=" ? key[end] : "";
  return `${shown(key.slice(0, end))}${mark}…`;
}

/** What a key cut at `:` or `=` most likely means, for the message; "" for any other key. */
function keyHint(key: string): string {
  const end = key.search(KEY_END);
  if (end < 0) return "";
  if (key[end] === ":") return " (missing a space after ':'? YAML reads key:value as one key)";
  if (key[end] === "=") return ' (write "key: value", not "key=value")';
  return "";
}

/** A path as an issue shows it: a key the schema refused cut by {@linkcode shownKey}. */
export function shownPath(issue: PathIssue): string {
  const segments = issue.path.map(String);
  if (issue.keyFromFile && segments.length > 0) segments.push(shownKey(segments.pop()!));
  return segments.join(".");
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
