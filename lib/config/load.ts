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
import { open } from "node:fs/promises";
import { type Document, LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { interpolateDocument, isSecretPath, type PathSegment } from "./interpolate.ts";
import { resolveConfig } from "./resolve.ts";
import { type ConfigOutput, configSchema } from "./schema.ts";
import { checkConfig } from "./semantic_checks.ts";
import type { ConfigIssue, LoadResult } from "./types.ts";
import { inspectDocument, toPlainData } from "./yaml_tree.ts";

/**
 * Largest config file read. Real configs are kilobytes (the shipped one is 3 KB; a thousand aliases and
 * tokens is about 300 KB), so 4 MiB leaves over ten times the room of a very large deployment while keeping
 * the worst case (parse, validate, every issue) to a few seconds and a bounded amount of memory. The bound
 * is checked before parsing, on bytes when reading a file and on characters for text given directly.
 */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
/** Most issues reported; the rest are counted in one last issue, so output stays readable. */
export const MAX_ISSUES = 100;

/** Options for {@linkcode parseConfigText}. */
export interface ParseOptions {
  /** Where the text came from (a path, or "<default>"), kept in the resolved config for messages. */
  readonly source: string;
  /** The environment `${VAR}` expressions read; passed in so that parsing stays pure. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/**
 * A config that passed every check, before resolution: plain data that survives `structuredClone`, so a
 * worker can validate and the serving thread only resolve.
 */
export interface ValidatedConfig {
  readonly data: ConfigOutput;
  /** Every string `${VAR}` interpolation substituted into the file (secrets among them). */
  readonly substituted: readonly string[];
}

/** The outcome of {@linkcode validateConfigText}. */
export type ValidationResult =
  | { readonly ok: true; readonly validated: ValidatedConfig }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

interface PathIssue {
  readonly path: readonly PathSegment[];
  readonly message: string;
  /** For an unknown key: the key, whose "did you mean" is worked out only if the issue is shown. */
  readonly unknownKey?: string;
}

/** An issue before {@linkcode fail} caps, completes and scrubs it. */
interface PendingIssue extends ConfigIssue {
  readonly unknownKey?: string;
}

/**
 * Parses, validates and resolves config text. Pure and synchronous, so tests and `--check` style tooling
 * can validate a config without touching the filesystem or the process environment.
 */
export function parseConfigText(text: string, options: ParseOptions): LoadResult {
  const result = validateConfigText(text, options.env);
  return result.ok ? resolveValidated(result.validated, options) : result;
}

/**
 * Every stage but resolution. Never throws, and its cost is linear in the size of the text (bounded by
 * {@linkcode MAX_CONFIG_BYTES}), whatever the text holds: alias cycles and bombs, deep nesting, duplicate
 * keys and non-scalar keys are issues, found in one pass before anything walks the data.
 */
export function validateConfigText(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
): ValidationResult {
  if (text.length > MAX_CONFIG_BYTES) return fail([tooLarge()], []);
  const lineCounter = new LineCounter();
  // uniqueKeys: false because the library's check is quadratic; inspectDocument reports duplicates.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, merge: true, uniqueKeys: false });
  const lineAt = (offset: number): number => lineCounter.linePos(offset).line;

  if (doc.errors.length > 0 || doc.warnings.length > 0) {
    return fail(yamlIssues(doc, lineAt), secretsInText(text));
  }
  const tree = inspectDocument(doc, lineAt);
  if (tree.issues.length > 0) return fail(tree.issues, secretsInText(text));

  const interpolation = interpolateDocument(doc, env);
  const data = toPlainData(doc, tree);
  const secrets = [...interpolation.substituted, ...collectSecrets(data)];
  const located = (issues: readonly PathIssue[]): PendingIssue[] =>
    issues.map((issue) => ({
      path: issue.path.join("."),
      line: locate(tree.lines, issue.path),
      message: issue.message,
      unknownKey: issue.unknownKey,
    }));

  const badPaths = new Set(interpolation.issues.map((issue) => issue.path.join(".")));
  const underBadPath = (issue: PathIssue): boolean => {
    if (badPaths.size === 0) return false;
    let prefix = "";
    for (const segment of issue.path) {
      prefix = prefix === "" ? String(segment) : `${prefix}.${segment}`;
      if (badPaths.has(prefix)) return true;
    }
    return false;
  };

  const parsed = configSchema.safeParse(data);
  const schemaIssues = parsed.success ? [] : parsed.error.issues.flatMap((issue) => fromZod(issue, []));
  const schemaPaths = new Set(schemaIssues.map((issue) => issue.path.join(".")));
  // On a rejected file the checks see the raw data; they skip what the schema found malformed.
  const semantic = checkConfig(parsed.success ? parsed.data : data).filter((issue) =>
    !underBadPath(issue) && !schemaPaths.has(issue.path.join("."))
  );
  const issues = [...interpolation.issues, ...schemaIssues.filter((i) => !underBadPath(i)), ...semantic];
  if (!parsed.success || issues.length > 0) return fail(located(issues), secrets);
  return { ok: true, validated: { data: parsed.data, substituted: interpolation.substituted } };
}

/** Resolves a validated config; the step a reload runs on the serving thread after a worker validated. */
export function resolveValidated(parsed: ValidatedConfig, options: ParseOptions): LoadResult {
  return {
    ok: true,
    config: resolveConfig(parsed.data, options.source, undefined, {
      substituted: parsed.substituted,
      env: options.env,
    }),
  };
}

/** The text of a config file, or the issue that it cannot be read or is too large. */
export type ReadResult =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/**
 * Reads a config file, at most {@linkcode MAX_CONFIG_BYTES} of it: a larger file (or a device that never
 * ends) is refused with one issue before anything is parsed. Uses `node:fs/promises` so the loader runs
 * unchanged on Deno and Bun; an unreadable file is reported as one issue rather than thrown.
 */
export async function readConfigFile(path: string): Promise<ReadResult> {
  const buffer = new Uint8Array(MAX_CONFIG_BYTES + 1);
  let length = 0;
  try {
    const handle = await open(path, "r");
    try {
      while (length < buffer.length) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
        if (bytesRead === 0) break;
        length += bytesRead;
      }
    } finally {
      await handle.close();
    }
  } catch (err) {
    const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
    const reason = code === "ENOENT"
      ? "file not found"
      : code === "EACCES"
      ? "permission denied"
      : code === "EISDIR"
      ? "is a directory"
      : code;
    return {
      ok: false,
      issues: [{ path: "", message: `cannot read config file${reason ? ` (${reason})` : ""}` }],
    };
  }
  if (length > MAX_CONFIG_BYTES) return { ok: false, issues: [tooLarge()] };
  return { ok: true, text: new TextDecoder().decode(buffer.subarray(0, length)) };
}

/** Reads, parses, validates and resolves a config file. */
export async function loadConfigFile(
  path: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<LoadResult> {
  const read = await readConfigFile(path);
  if (!read.ok) return read;
  return parseConfigText(read.text, { source: path, env });
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

function tooLarge(): ConfigIssue {
  return {
    path: "",
    message:
      `config file is larger than ${MAX_CONFIG_BYTES / 1024 / 1024} MiB (${MAX_CONFIG_BYTES} bytes); ` +
      "not parsed",
  };
}

/**
 * Sorts issues by line (stable), keeps the first {@linkcode MAX_ISSUES} and counts the rest in one more
 * issue, then scrubs secrets from the messages kept.
 */
function fail(
  issues: readonly PendingIssue[],
  secrets: readonly string[],
): { ok: false; issues: ConfigIssue[] } {
  const sorted = issues
    .map((issue, index) => ({ issue, index }))
    .sort((a, b) =>
      (a.issue.line ?? Number.MAX_SAFE_INTEGER) - (b.issue.line ?? Number.MAX_SAFE_INTEGER) ||
      a.index - b.index
    )
    .map(({ issue }) => issue);
  const kept = sorted.slice(0, MAX_ISSUES);
  const scrub = scrubber(secrets);
  const out: ConfigIssue[] = kept.map(({ path, line, message, unknownKey }) => {
    const text = scrub(unknownKey === undefined ? message : `${message}${suggestion(unknownKey)}`);
    return line === undefined ? { path, message: text } : { path, line, message: text };
  });
  if (sorted.length > kept.length) {
    out.push({
      path: "",
      message: `${sorted.length - kept.length} more issues not shown; fix the above first`,
    });
  }
  return { ok: false, issues: out };
}

/** At most this many lines get a YAML error: after the first, most are echoes of the same mistake. */
const MAX_YAML_ERROR_LINES = 5;

/**
 * YAML errors and warnings (an unknown `!tag` is a warning, and a mistake), one per line, capped, because
 * one broken line makes the parser report every token after it.
 */
function yamlIssues(doc: Document, lineAt: (offset: number) => number): ConfigIssue[] {
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

/** Literal secret values in raw text, for scrubbing YAML errors when there is no usable document. */
function secretsInText(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:token|api_key|sha256)["']?\s*:\s*["']?([^\s"',}\]#]+)/g)) {
    found.push(m[1]);
  }
  return found;
}

/**
 * The line of the deepest node on `path` that exists in the file: the key's line for a mapping entry, the
 * item's line for a sequence entry. A missing key therefore points at its parent, and the empty path at the
 * document. A lookup per prefix in the index built by `inspectDocument`, so locating is linear overall.
 */
function locate(lines: ReadonlyMap<string, number>, path: readonly PathSegment[]): number | undefined {
  const prefixes = [""];
  for (const segment of path) {
    const last = prefixes[prefixes.length - 1];
    prefixes.push(last === "" ? String(segment) : `${last}.${segment}`);
  }
  for (let i = prefixes.length - 1; i >= 0; i--) {
    const line = lines.get(prefixes[i]);
    if (line !== undefined) return line;
  }
  return undefined;
}

/**
 * Every value that must not appear in a message: secret fields anywhere in the data. The data may share
 * objects (aliases), so each object is visited at most twice: once as a header map, once as anything else.
 */
function collectSecrets(data: unknown): string[] {
  const found: string[] = [];
  const seen = [new Set<object>(), new Set<object>()];
  const stack: { value: unknown; key: PathSegment | undefined; inHeaders: boolean }[] = [
    { value: data, key: undefined, inHeaders: false },
  ];
  while (stack.length > 0) {
    const { value, key, inHeaders } = stack.pop()!;
    if (typeof value === "string") {
      const path: PathSegment[] = inHeaders ? ["headers", key ?? ""] : key === undefined ? [] : [key];
      if (value !== "" && isSecretPath(path)) found.push(value);
      continue;
    }
    if (typeof value !== "object" || value === null) continue;
    const visited = seen[inHeaders ? 1 : 0];
    if (visited.has(value)) continue;
    visited.add(value);
    const childInHeaders = key === "headers";
    const entries: [PathSegment, unknown][] = Array.isArray(value)
      ? value.map((item, i) => [i, item])
      : Object.entries(value);
    for (const [k, v] of entries) stack.push({ value: v, key: k, inHeaders: childInHeaders });
  }
  return found;
}

/**
 * A function that replaces every secret of at least four characters in a message with `***`, the longest
 * first where several start at one place. Secrets are bucketed by their first four characters, so scrubbing
 * costs a map lookup per character of the message, however many secrets there are.
 */
function scrubber(secrets: readonly string[]): (message: string) => string {
  const exact = new Set(secrets.filter((s) => s.length >= 4));
  if (exact.size === 0) return (message) => message;
  const lengths = new Map<string, number[]>();
  for (const secret of exact) {
    const head = secret.slice(0, 4);
    const list = lengths.get(head) ?? [];
    if (!list.includes(secret.length)) list.push(secret.length);
    lengths.set(head, list);
  }
  for (const list of lengths.values()) list.sort((a, b) => b - a);
  return (message) => {
    let out = "";
    let i = 0;
    while (i < message.length) {
      const found = (lengths.get(message.slice(i, i + 4)) ?? []).find((n) =>
        i + n <= message.length && exact.has(message.slice(i, i + n))
      );
      if (found !== undefined) {
        out += "***";
        i += found;
      } else {
        out += message[i];
        i++;
      }
    }
    return out;
  };
}

/** Rewrites one zod issue into path issues with operator-friendly messages that never echo input. */
function fromZod(issue: z.core.$ZodIssue, base: readonly PathSegment[]): PathIssue[] {
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
function suggestion(key: string): string {
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
