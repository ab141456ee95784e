/**
 * Loads the gateway config: YAML → `${VAR}` interpolation → schema → cross-section checks → resolution.
 *
 * Every stage collects all of its issues so an operator fixes a broken file in one pass, and every issue is
 * pinned to a dotted path and, where it can be located, a 1-based line. YAML syntax errors stop the pipeline,
 * because there is no document to check. Otherwise interpolation, schema and cross-section issues are
 * reported together: the cross-section checks also run when the schema rejected the file, on the interpolated
 * data, checking what is well-formed and skipping the rest. Findings that would repeat another stage's are
 * dropped: anything under a value whose interpolation failed, and a cross-section issue at a path the schema
 * already reported.
 *
 * No message ever contains a secret: zod messages are rewritten so they do not echo input, and as a last
 * line of defence every substituted environment value and every `token`/`api_key`/`sha256`/header value is
 * scrubbed from all messages.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { type Document, isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { interpolateDocument, isSecretPath, type PathSegment } from "./interpolate.ts";
import { resolveConfig } from "./resolve.ts";
import { configSchema } from "./schema.ts";
import { checkConfig } from "./semantic_checks.ts";
import type { ConfigIssue, LoadResult } from "./types.ts";

/** Options for {@linkcode parseConfigText}. */
export interface ParseOptions {
  /** Where the text came from (a path, or "<default>"), kept in the resolved config for messages. */
  readonly source: string;
  /** The environment `${VAR}` expressions read; passed in so that parsing stays pure. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

interface PathIssue {
  readonly path: readonly PathSegment[];
  readonly message: string;
}

/**
 * Parses, validates and resolves config text. Pure and synchronous, so tests and `--check` style tooling
 * can validate a config without touching the filesystem or the process environment.
 */
export function parseConfigText(text: string, options: ParseOptions): LoadResult {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, merge: true });
  const lineAt = (offset: number): number => lineCounter.linePos(offset).line;

  if (doc.errors.length > 0 || doc.warnings.length > 0) {
    return fail(yamlIssues(text, doc, lineAt));
  }

  const interpolation = interpolateDocument(doc, options.env);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 1000 });
  } catch (err) {
    // Alias bombs and merges of non-mappings fail only here.
    const reason = err instanceof Error ? err.message : String(err);
    return fail([{ path: "", message: scrub(yamlMessage(reason), secretsInText(text)) }]);
  }
  const secrets = [...interpolation.substituted, ...collectSecrets(data)];
  const located = (issues: readonly PathIssue[]): ConfigIssue[] =>
    issues.map((issue) => ({
      path: issue.path.join("."),
      line: locate(doc, issue.path, lineAt),
      message: scrub(issue.message, secrets),
    }));

  const badPaths = interpolation.issues.map((issue) => issue.path.join("."));
  const underBadPath = (issue: PathIssue): boolean => {
    const path = issue.path.join(".");
    return badPaths.some((bad) => path === bad || path.startsWith(`${bad}.`));
  };

  const parsed = configSchema.safeParse(data);
  const schemaIssues = parsed.success ? [] : parsed.error.issues.flatMap((issue) => fromZod(issue, []));
  const schemaPaths = new Set(schemaIssues.map((issue) => issue.path.join(".")));
  // On a rejected file the checks see the raw data; they skip what the schema found malformed.
  const semantic = checkConfig(parsed.success ? parsed.data : data).filter((issue) =>
    !underBadPath(issue) && !schemaPaths.has(issue.path.join("."))
  );
  const issues = [...interpolation.issues, ...schemaIssues.filter((i) => !underBadPath(i)), ...semantic];
  if (!parsed.success || issues.length > 0) return fail(located(issues));
  return { ok: true, config: resolveConfig(parsed.data, options.source) };
}

/**
 * Reads and parses a config file. Uses `node:fs/promises` so the loader runs unchanged on Deno and Bun; an
 * unreadable file is reported as one issue rather than thrown, like every other config problem.
 */
export async function loadConfigFile(
  path: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<LoadResult> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
    const reason = code === "ENOENT" ? "file not found" : code === "EACCES" ? "permission denied" : code;
    return fail([{ path: "", message: `cannot read config file${reason ? ` (${reason})` : ""}` }]);
  }
  return parseConfigText(text, { source: path, env });
}

/** Formats issues one per line as `<source>:<line>: <path>: <message>`, the shape editors can jump to. */
export function formatIssues(source: string, issues: readonly ConfigIssue[]): string {
  return issues
    .map((issue) => {
      const where = issue.line === undefined ? source : `${source}:${issue.line}`;
      return `${where}: ${issue.path === "" ? "(document)" : issue.path}: ${issue.message}`;
    })
    .join("\n");
}

function fail(issues: readonly ConfigIssue[]): LoadResult {
  const sorted = issues
    .map((issue, index) => ({ issue, index }))
    .sort((a, b) =>
      (a.issue.line ?? Number.MAX_SAFE_INTEGER) - (b.issue.line ?? Number.MAX_SAFE_INTEGER) ||
      a.index - b.index
    )
    .map(({ issue }) => issue);
  return { ok: false, issues: sorted };
}

/** At most this many lines get a YAML error: after the first, most are echoes of the same mistake. */
const MAX_YAML_ERROR_LINES = 5;

/**
 * YAML errors and warnings (an unknown `!tag` is a warning, and a mistake), one per line, capped, because
 * one broken line makes the parser report every token after it.
 */
function yamlIssues(text: string, doc: Document, lineAt: (offset: number) => number): ConfigIssue[] {
  const secrets = secretsInText(text);
  const byLine = new Map<number, ConfigIssue>();
  let dropped = 0;
  for (const err of [...doc.errors, ...doc.warnings]) {
    const line = lineAt(err.pos[0]);
    if (byLine.has(line)) continue;
    if (byLine.size >= MAX_YAML_ERROR_LINES) {
      dropped++;
      continue;
    }
    byLine.set(line, { path: "", line, message: scrub(yamlMessage(err.message), secrets) });
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
  return `YAML: ${first}`;
}

/** Literal secret values in raw text, for scrubbing YAML errors when there is no usable document. */
function secretsInText(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:token|api_key|sha256)["']?\s*:\s*["']?([^\s"',}\]#]+)/g)) {
    found.push(m[1]);
  }
  return found;
}

/**
 * The line of the deepest node on `path` that exists: the key's line for a mapping entry, the item's line
 * for a sequence entry. A missing key therefore points at its parent, and the empty path at the document.
 */
function locate(
  doc: Document,
  path: readonly PathSegment[],
  lineAt: (offset: number) => number,
): number | undefined {
  let node: unknown = doc.contents;
  let line = isMap(node) || isSeq(node) || isScalar(node) ? rangeLine(node.range, lineAt) : undefined;
  for (const segment of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) =>
        (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(segment)
      );
      if (pair === undefined) break;
      line = isScalar(pair.key) ? rangeLine(pair.key.range, lineAt) ?? line : line;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === "number") {
      const item: unknown = node.items[segment];
      if (!(isMap(item) || isSeq(item) || isScalar(item))) break;
      line = rangeLine(item.range, lineAt) ?? line;
      node = item;
    } else {
      break;
    }
  }
  return line;
}

function rangeLine(
  range: readonly [number, number, number] | null | undefined,
  lineAt: (offset: number) => number,
): number | undefined {
  return range ? lineAt(range[0]) : undefined;
}

/** Every value that must not appear in a message: secret fields anywhere in the data. */
function collectSecrets(data: unknown, path: PathSegment[] = []): string[] {
  if (typeof data === "string") return isSecretPath(path) && data !== "" ? [data] : [];
  if (Array.isArray(data)) return data.flatMap((item, i) => collectSecrets(item, [...path, i]));
  if (typeof data === "object" && data !== null) {
    return Object.entries(data).flatMap(([key, value]) => collectSecrets(value, [...path, key]));
  }
  return [];
}

/** Replaces every secret (longest first, so a prefix never leaves a tail behind) with `***`. */
function scrub(message: string, secrets: readonly string[]): string {
  let out = message;
  for (const secret of [...secrets].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length)) {
    out = out.replaceAll(secret, "***");
  }
  return out;
}

/** Rewrites one zod issue into path issues with operator-friendly messages that never echo input. */
function fromZod(issue: z.core.$ZodIssue, base: readonly PathSegment[]): PathIssue[] {
  const path: PathSegment[] = [...base, ...issue.path.map((s) => (typeof s === "number" ? s : String(s)))];
  switch (issue.code) {
    case "unrecognized_keys":
      return issue.keys.map((key) => ({ path: [...path, key], message: unknownKeyMessage(key) }));
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

function unknownKeyMessage(key: string): string {
  const close = KNOWN_KEYS
    .map((known) => ({ known, d: editDistance(key.toLowerCase(), known) }))
    .filter(({ d }) => d > 0 && d <= Math.min(2, Math.floor(key.length / 2)))
    .sort((a, b) => a.d - b.d)[0];
  return `unknown key "${key}"${close ? ` (did you mean "${close.known}"?)` : ""}`;
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
