/**
 * Loads the gateway config: YAML → `${VAR}` interpolation → schema → the operator's price catalog
 * (`pricing.catalog`) → cross-section checks, which hold money to that catalog → resolution, which prices from it.
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
 * line of defence every value at a secret position (`isSecretPath`: tokens, keys, AWS credentials, alert
 * secrets, header values; for a broken file also an alias or tag written there, and a value written into a
 * key; message_secrets.ts) and every `${VAR}` value substituted into one is scrubbed from all messages. A
 * value substituted anywhere else (a model name, an environment, a default written in the file) is shown.
 *
 * @module
 */
import {
  BUILTIN_CATALOG_SOURCE,
  checkCatalogFile,
  defaultCatalog,
  type PriceCatalog,
} from "../pricing/catalog.ts";
import { open } from "node:fs/promises";
import { LineCounter, parseDocument } from "yaml";
import { createScrubber } from "../secrets/scrubber.ts";
import { interpolateDocument, type PathSegment, type Substitution } from "./interpolate.ts";
import {
  fromZod,
  type PathIssue,
  shownPath,
  suggestion,
  withEmptyVariables,
  yamlIssues,
} from "./issue_messages.ts";
import { resolveConfig } from "./resolve.ts";
import { startOnlyLines } from "./start_only.ts";
import { takesOnlyText } from "./schema_at.ts";
import { type ConfigOutput, configSchema } from "./schema.ts";
import { checkConfig } from "./semantic_checks.ts";
import type { ConfigIssue, LoadResult } from "./types.ts";
import { recordField, stringField } from "./raw_access.ts";
import { readFailure } from "./read_failure.ts";
import { ConfigSetupError } from "./setup_error.ts";
import { secretsInData, secretsInSource, substitutedSecrets } from "./message_secrets.ts";
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
  /** The price catalog targets are priced from (an operator's `pricing.catalog`); the built-in one if absent. */
  readonly catalog?: PriceCatalog;
}

/**
 * A config that passed every check, before resolution: plain data that survives `structuredClone`, so a
 * worker can validate and the serving thread only resolve.
 */
export interface ValidatedConfig {
  readonly data: ConfigOutput;
  /** Every `${VAR}` substitution into the file, with where it went (for the config's secrets). */
  readonly substitutions: readonly Substitution[];
  /** The operator's price catalog (`pricing.catalog`), as the checks read it; absent: the built-in one. */
  readonly catalog?: PriceCatalog;
  /** The lines of the start-only keys (`startOnlyLines`), for what is checked at start: `ResolvedConfig.lines`. */
  readonly lines?: Readonly<Record<string, number>>;
}

/** The outcome of {@linkcode validateConfigText}. */
export type ValidationResult =
  | { readonly ok: true; readonly validated: ValidatedConfig }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/** An issue before {@linkcode fail} caps, completes and scrubs it. */
interface PendingIssue extends ConfigIssue {
  readonly unknownKey?: string;
  /** Where the unknown key is (the mapping's path), for its "did you mean". */
  readonly unknownAt?: readonly PathSegment[];
}

/**
 * Parses, validates and resolves config text. Pure and synchronous, so tests and `--check` style tooling
 * can validate a config without touching the filesystem or the process environment.
 */
export function parseConfigText(text: string, options: ParseOptions): LoadResult {
  const result = validateConfigText(text, options.env, options.catalog);
  return result.ok ? resolveValidated(result.validated, options) : result;
}

/** A file parsed, interpolated and held to the schema: what the cross-checks take, with their catalog. */
interface ParsedText {
  /** The interpolated data (the schema's output when it accepted the file). */
  readonly data: unknown;
  readonly output: ConfigOutput | undefined;
  readonly substitutions: readonly Substitution[];
  readonly secrets: readonly string[];
  readonly lines: ReadonlyMap<string, number>;
  /** Interpolation and schema issues, less those under a value whose interpolation failed. */
  readonly issues: readonly PathIssue[];
  readonly schemaPaths: ReadonlySet<string>;
  readonly underBadPath: (issue: PathIssue) => boolean;
}

/** The price catalog the cross-checks hold money to, or the issues of the operator's catalog file. */
type CatalogChoice =
  | { readonly ok: true; readonly catalog: PriceCatalog }
  | { readonly ok: false; readonly issues: readonly ConfigIssue[] };

/**
 * Every stage but resolution, with the price catalog already chosen: `catalog` is the built-in one unless
 * given. Pure and synchronous (tests, the built-in config), so it cannot read an operator's `pricing.catalog`;
 * {@linkcode validateConfigSource} does, and is what the loader, `check` and reloads run.
 */
export function validateConfigText(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  catalog: PriceCatalog = defaultCatalog(),
): ValidationResult {
  const parsed = parseText(text, env);
  return "ok" in parsed ? parsed : crossCheck(parsed, { ok: true, catalog });
}

/**
 * Every stage but resolution. The operator's price catalog (`pricing.catalog`) is read after the schema and
 * before the cross-checks, which hold money budgets and `price: catalog` to it; its issues, with their lines,
 * are the config's under `pricing.catalog`. The catalog travels with the validated data, so resolution prices
 * from the very file the checks consulted. Never throws; see {@linkcode parseText} for the cost.
 */
export async function validateConfigSource(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<ValidationResult> {
  const parsed = parseText(text, env);
  if ("ok" in parsed) return parsed;
  const path = stringField(recordField(parsed.data, "pricing"), "catalog");
  if (path === undefined || path === "") return crossCheck(parsed, { ok: true, catalog: defaultCatalog() });
  const read = await checkCatalogFile(path);
  if (read.ok) return crossCheck(parsed, read);
  const line = parsed.lines.get("pricing.catalog");
  return crossCheck(parsed, {
    ok: false,
    issues: read.issues.map((issue) => ({
      path: "pricing.catalog",
      ...(line === undefined ? {} : { line }),
      message: `${path}${issue.line === undefined ? "" : `:${issue.line}`}: ${
        issue.path || "(document)"
      }: ${issue.message}`,
    })),
  });
}

/**
 * YAML, interpolation and schema. Its cost is linear in the size of the text (bounded by
 * {@linkcode MAX_CONFIG_BYTES}), whatever the text holds: alias cycles and bombs, deep nesting, duplicate keys
 * and non-scalar keys are issues, found in one pass before anything walks the data.
 */
function parseText(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
): ParsedText | { ok: false; issues: ConfigIssue[] } {
  if (text.length > MAX_CONFIG_BYTES) return fail([tooLarge()], []);
  const lineCounter = new LineCounter();
  // uniqueKeys: false because the library's check is quadratic; inspectDocument reports duplicates.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, merge: true, uniqueKeys: false });
  const lineAt = (offset: number): number => lineCounter.linePos(offset).line;

  if (doc.errors.length > 0 || doc.warnings.length > 0) {
    return fail(yamlIssues(doc, lineAt, text), secretsInSource(doc, text));
  }
  const tree = inspectDocument(doc, lineAt);
  if (tree.issues.length > 0) return fail(tree.issues, secretsInSource(doc, text));

  // A `${VAR}` that looks like a number stays text where the schema takes only text (`owned_by: ${OWNER}`).
  const interpolation = interpolateDocument(doc, env, takesOnlyText);
  const data = toPlainData(doc, tree);
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
  const secrets = secretsInData(data);
  const parsed = configSchema.safeParse(data);
  const schemaIssues = withEmptyVariables(
    parsed.success ? [] : parsed.error.issues.flatMap((issue) => fromZod(issue, [])),
    interpolation.emptied,
  );
  return {
    data: parsed.success ? parsed.data : data,
    output: parsed.success ? parsed.data : undefined,
    substitutions: interpolation.substitutions,
    secrets: [...secrets, ...substitutedSecrets(interpolation.substitutions, secrets)],
    lines: tree.lines,
    issues: [...interpolation.issues, ...schemaIssues.filter((i) => !underBadPath(i))],
    schemaPaths: new Set(schemaIssues.map((issue) => issue.path.join("."))),
    underBadPath,
  };
}

/**
 * The cross-section checks, against the chosen catalog (none when the operator's could not be read: its
 * issues stand instead), and the verdict. On a rejected file the checks see the raw data and skip what the
 * schema found malformed.
 */
function crossCheck(parsed: ParsedText, catalog: CatalogChoice): ValidationResult {
  const semantic = checkConfig(parsed.data, undefined, catalog.ok ? catalog.catalog : null).filter((issue) =>
    !parsed.underBadPath(issue) && !parsed.schemaPaths.has(issue.path.join("."))
  );
  const issues: PendingIssue[] = [...parsed.issues, ...semantic].map((issue: PathIssue) => ({
    path: shownPath(issue),
    line: locate(parsed.lines, issue.path),
    message: issue.message,
    unknownKey: issue.unknownKey,
    unknownAt: issue.unknownKey === undefined ? undefined : issue.path.slice(0, -1),
  }));
  if (!catalog.ok) return fail([...issues, ...catalog.issues], parsed.secrets);
  if (parsed.output === undefined || issues.length > 0) return fail(issues, parsed.secrets);
  // The built-in catalog is part of the program; only an operator's travels with the data.
  const operators = catalog.catalog.source === BUILTIN_CATALOG_SOURCE ? {} : { catalog: catalog.catalog };
  const lines = startOnlyLines(parsed.lines);
  return {
    ok: true,
    validated: { data: parsed.output, substitutions: parsed.substitutions, ...operators, lines },
  };
}

/**
 * Resolves a validated config; the step a reload runs on the serving thread after a worker validated. Prices
 * come from the catalog the checks used (the operator's, carried in `parsed`), else `options.catalog`, else
 * the built-in one. A service of the config that cannot be set up (a guardrail without its region or
 * credentials) is an issue at its path, as a provider's is, never a throw.
 */
export function resolveValidated(parsed: ValidatedConfig, options: ParseOptions): LoadResult {
  try {
    const config = resolveConfig(parsed.data, options.source, undefined, {
      substitutions: parsed.substitutions,
      env: options.env,
    }, parsed.catalog ?? options.catalog);
    const lines = parsed.lines;
    return { ok: true, config: lines === undefined ? config : Object.freeze({ ...config, lines }) };
  } catch (err) {
    if (!(err instanceof ConfigSetupError)) throw err;
    return { ok: false, issues: [{ path: err.path, message: err.message }] };
  }
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
    return {
      ok: false,
      issues: [{ path: "", message: `cannot read config file${readFailure(err, "the file")}` }],
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
  const validated = await validateConfigSource(read.text, env);
  return validated.ok ? resolveValidated(validated.validated, { source: path, env }) : validated;
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
 * issue, then scrubs secrets from the messages and paths kept (a path holds keys from the file, and a key can
 * hold a value: `api_key:sk-…` with no space after the colon).
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
  // The gateway's one scrubber, at 4 characters as for a provider's own keys: every value here is a secret.
  const scrubber = createScrubber(secrets, { minLength: 4 });
  const out: ConfigIssue[] = kept.map(({ path, line, message, unknownKey, unknownAt }) => {
    const hint = unknownKey === undefined ? "" : suggestion(unknownKey, unknownAt ?? []);
    const text = scrubber.scrub(`${message}${hint}`);
    const where = scrubber.scrub(path);
    return line === undefined ? { path: where, message: text } : { path: where, line, message: text };
  });
  if (sorted.length > kept.length) {
    out.push({
      path: "",
      message: `${sorted.length - kept.length} more issues not shown; fix the above first`,
    });
  }
  return { ok: false, issues: out };
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
