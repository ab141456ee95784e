/**
 * `${VAR}` interpolation of config values, so secrets and per-host settings come from the environment instead
 * of the file.
 *
 * Syntax (a subset of the shell's, on purpose):
 * - `${NAME}`: the variable's value; an unset variable is an issue, an empty one is used as is.
 * - `${NAME:-default}`: the value, or `default` when the variable is unset **or empty** (shell semantics).
 *   The default runs up to the first `}` and is not itself interpolated.
 * - `$${`: a literal `${`. Any other `$` is literal.
 *
 * Only string scalar values are interpolated, never mapping keys. A plain (unquoted) scalar that consists of
 * exactly one `${...}` and whose result looks like an integer, a decimal or `true`/`false` becomes that
 * number or boolean, so `port: ${PORT:-8080}` works, as `port: 8080` would; quoted (`"${PORT}"`) it stays a
 * string. Where the key takes only text (`keepsText`, the loader's question to the schema: `owned_by`, a model
 * name, an environment) the value stays the text it is, so `owned_by: ${OWNER}` with OWNER=007 is "007", not
 * the number 7 that the schema would refuse. Values under secret keys (`token`, `api_key`, `sha256`, header
 * values) always stay strings, and an unquoted all-digit secret that YAML would read as a number is kept as
 * the text written.
 *
 * Issue messages name the variable, never its value. Each substitution is reported with where it went (the
 * value's path, the string it ended up in and its offset there), so that only values that went into a secret
 * become secrets of the config (`secrets.ts`) and are masked in its messages (`message_secrets.ts`), never a
 * host or model name, or a default written in the file, that went anywhere else.
 *
 * @module
 */
import { type Document, isMap, isScalar, isSeq, type Node, Scalar } from "yaml";

/** A segment of a config path: a mapping key or a sequence index. */
export type PathSegment = string | number;

/** An interpolation problem at one config value. */
export interface InterpolationIssue {
  readonly path: readonly PathSegment[];
  readonly message: string;
}

/** The outcome of interpolating one string. */
export interface StringInterpolation {
  /** The string with every expression replaced (unset variables without default become ""). */
  readonly value: string;
  /** True when the text contained at least one `${...}` expression (or a `$${` escape). */
  readonly changed: boolean;
  /** True when the text is exactly one `${...}` expression and nothing else. */
  readonly wholeExpression: boolean;
  /** The strings that were substituted in (variable values and used defaults). */
  readonly substituted: readonly string[];
  /** Where each of `substituted` starts in `value`, in the same order. */
  readonly offsets: readonly number[];
  /** Problems, without a path; they never contain a substituted value. */
  readonly problems: readonly string[];
  /** Each variable that gave nothing: `X is empty` (`${X}`), `X is unset or empty` (`${X:-}`). */
  readonly empty: readonly string[];
}

/** One non-empty string substituted into a config value, and where it went. */
export interface Substitution {
  /** The substituted string (a variable's value or a used default). */
  readonly value: string;
  /** The path of the config value it went into (where the node is defined, for an anchored one). */
  readonly path: readonly PathSegment[];
  /** The whole interpolated string it went into. */
  readonly into: string;
  /** Where `value` starts in `into`. */
  readonly start: number;
}

/** The outcome of interpolating a whole document in place. */
export interface DocumentInterpolation {
  readonly issues: readonly InterpolationIssue[];
  /** Every substitution with where it went, for telling values that went into secrets from the rest. */
  readonly substitutions: readonly Substitution[];
  /**
   * The values that came out empty because their variables gave nothing, with those variables (as
   * {@linkcode StringInterpolation.empty} says them): an issue there ("must not be empty") names them.
   */
  readonly emptied: readonly {
    readonly path: readonly PathSegment[];
    readonly variables: readonly string[];
  }[];
}

const EXPRESSION = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([^]*))?$/;

/** Keys whose values are secrets: never retyped, never printed. */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  "token",
  "api_key",
  "sha256",
  "access_key_id",
  "secret_access_key",
  "session_token",
  // An alert webhook's HMAC key.
  "secret",
]);

/**
 * Interpolates `${VAR}` and `${VAR:-default}` in one string. Pure: the environment is passed in, which keeps
 * tests hermetic and lets callers decide what the environment is.
 */
export function interpolateString(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
): StringInterpolation {
  let out = "";
  let changed = false;
  let expressions = 0;
  const substituted: string[] = [];
  const offsets: number[] = [];
  const problems: string[] = [];
  const empty: string[] = [];
  let i = 0;
  while (i < text.length) {
    const dollar = text.indexOf("$", i);
    if (dollar < 0) {
      out += text.slice(i);
      break;
    }
    out += text.slice(i, dollar);
    if (text.startsWith("$${", dollar)) {
      out += "${";
      changed = true;
      i = dollar + 3;
      continue;
    }
    if (!text.startsWith("${", dollar)) {
      out += "$";
      i = dollar + 1;
      continue;
    }
    changed = true;
    expressions++;
    const close = text.indexOf("}", dollar + 2);
    if (close < 0) {
      problems.push("unterminated ${ (write $${ for a literal ${)");
      break;
    }
    const expr = text.slice(dollar + 2, close);
    i = close + 1;
    const m = EXPRESSION.exec(expr);
    if (!m) {
      problems.push("invalid ${...} expression; expected ${NAME} or ${NAME:-default}");
      continue;
    }
    const [, name, fallback] = m;
    if (fallback?.includes("${")) {
      problems.push(`nested \${...} in the default of ${name} is not supported`);
      continue;
    }
    const value = env[name];
    if (fallback !== undefined && (value === undefined || value === "")) {
      if (fallback !== "") {
        substituted.push(fallback);
        offsets.push(out.length);
      } else empty.push(`${name} is unset or empty`);
      out += fallback;
    } else if (value === undefined) {
      problems.push(`environment variable ${name} is not set (use \${${name}:-default} to give a default)`);
    } else {
      if (value !== "") {
        substituted.push(value);
        offsets.push(out.length);
      } else empty.push(`${name} is empty`);
      out += value;
    }
  }
  const wholeExpression = expressions === 1 && /^\$\{[^}]*\}$/.test(text);
  return { value: out, changed, wholeExpression, substituted, offsets, problems, empty };
}

/**
 * Interpolates every string scalar value of a parsed YAML document in place, walking the node tree so that
 * each issue gets the path of the value it came from. Anchored nodes are interpolated once, where defined
 * (so `keepsText` is asked of that path). `keepsText` says which values take only text and are never retyped;
 * without it every whole-expression plain scalar is.
 */
export function interpolateDocument(
  doc: Document,
  env: Readonly<Record<string, string | undefined>>,
  keepsText: (path: readonly PathSegment[]) => boolean = () => false,
): DocumentInterpolation {
  const issues: InterpolationIssue[] = [];
  const substitutions: Substitution[] = [];
  const emptied: { path: readonly PathSegment[]; variables: readonly string[] }[] = [];
  const walk = (node: unknown, path: PathSegment[]): void => {
    if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        walk(pair.value, [...path, key]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => walk(item, [...path, index]));
    } else if (isScalar(node) && typeof node.value !== "string" && isSecretPath(path)) {
      // An all-digit sha256 or token is a number to YAML; a secret is always the text as written.
      if (node.type === Scalar.PLAIN && typeof node.source === "string") node.value = node.source;
    } else if (isScalar(node) && typeof node.value === "string") {
      const result = interpolateString(node.value, env);
      if (!result.changed) return;
      result.substituted.forEach((value, k) =>
        substitutions.push({ value, path, into: result.value, start: result.offsets[k] })
      );
      for (const message of result.problems) issues.push({ path, message });
      if (result.value === "" && result.empty.length > 0) emptied.push({ path, variables: result.empty });
      node.value = result.wholeExpression && node.type === Scalar.PLAIN && !isSecretPath(path) &&
          !keepsText(path)
        ? retype(result.value)
        : result.value;
    }
  };
  walk(doc.contents as Node | null, []);
  return { issues, substitutions, emptied };
}

/**
 * True for values that hold secrets: `token`, `api_key`, `sha256`, any header value, and `redis.url` and
 * `postgres.url` (they may carry a password).
 */
export function isSecretPath(path: readonly PathSegment[]): boolean {
  const last = path[path.length - 1];
  return (typeof last === "string" && SECRET_KEYS.has(last)) || path[path.length - 2] === "headers" ||
    (path.length === 2 && (path[0] === "redis" || path[0] === "postgres") && last === "url") ||
    // A webhook URL often carries its key in the path (Slack's, for one): never shown whole.
    (path.length === 3 && path[0] === "alerts" && last === "url");
}

function retype(value: string): string | number | boolean {
  if (value === "true") return true;
  if (value === "false") return false;
  if (/^[-+]?\d+$/.test(value)) {
    const n = Number(value);
    return Number.isSafeInteger(n) ? n : value;
  }
  if (/^[-+]?(\d+\.\d*|\.\d+)$/.test(value)) return Number(value);
  return value;
}
