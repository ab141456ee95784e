/**
 * What a config message must never show, when the file is too broken to check (a YAML error, an unknown alias,
 * a cycle): the text written at every secret position of the file. The positions are `isSecretPath`'s
 * (interpolate.ts), the one list the scrubber, `/admin/config` and every other config message use: `token`,
 * `api_key`, `sha256`, the AWS keys, an alert's `secret`, every header value, and the `redis`/`postgres`/alert
 * URLs. What is "written" there is a value, and also the name of an alias (`api_key: *Sup3r…`) or of a tag
 * (`secret_access_key: !Sup3r…`) given instead of one: the YAML library's messages quote both.
 *
 * A key can hold a secret too, when the space after a colon is missing: `{ api_key:sk-… }` is, to YAML, the key
 * `api_key:sk-…` with no value, and `{Authorization:"Bearer sk-…"}` a header of that name. Issues show such keys
 * cut (`shownKey`, issue_messages.ts); as a second line of defence what follows a secret key's name in a key, and
 * every key of a `headers` map that is no header name, are secrets of the messages too ({@linkcode secretsInKey}).
 *
 * The walk is over the document as far as the parser built it (a broken file still has most of its nodes); it
 * never follows an alias, keeps its own stack and goes no deeper than {@linkcode MAX_SECRET_DEPTH}, so a
 * hostile file (thousands of levels deep) costs one pass. For the lines the parser
 * could not place in the tree at all, the raw text is read too, for `key: value` lines whose key is one of
 * `SECRET_KEYS`.
 *
 * @module
 */
import { type Document, isAlias, isMap, isPair, isScalar, isSeq, type Node } from "yaml";
import { HEADER_NAME } from "./header_map.ts";
import { isSecretPath, type PathSegment, SECRET_KEYS, type Substitution } from "./interpolate.ts";

/** `key: value` (block or flow) whose key is a secret key; the value as written, up to a delimiter. */
const SECRET_LINE = new RegExp(
  `(?:^|[\\s{,])["']?(?:${[...SECRET_KEYS].join("|")})["']?\\s*:\\s*["']?([^\\s"',}\\]#]+)`,
  "gm",
);

/**
 * Deepest a secret position lies: `guardrails.NAME.headers.HEADER` is 4 keys deep; an anchored copy kept under
 * an extension key, or a list of them, adds a level or two.
 */
const MAX_SECRET_DEPTH = 8;

/** The text at every secret position of `doc`, and of `text` where the document lost it. */
export function secretsInSource(doc: Document, text: string): string[] {
  const found: string[] = [];
  const add = (written: string | null | undefined) => {
    if (typeof written !== "string") return;
    const bare = written.replace(/^[*!&]+/, "");
    if (bare !== "") found.push(written, bare);
  };
  const stack: { node: unknown; path: PathSegment[] }[] = [{ node: doc.contents, path: [] }];
  while (stack.length > 0) {
    const { node, path } = stack.pop()!;
    if (node === null || node === undefined) continue;
    const secret = path.length > 0 && isSecretPath(path);
    if (secret && typeof (node as Node).tag === "string") add((node as Node).tag);
    if (isAlias(node)) {
      if (secret) add(node.source);
    } else if (isScalar(node)) {
      if (secret) {
        add(typeof node.source === "string" ? node.source : undefined);
        add(node.value === null || node.value === undefined ? undefined : String(node.value));
      }
    } else if (path.length >= MAX_SECRET_DEPTH) {
      continue;
    } else if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        // A collection as a key is an issue of its own; its text is never built (a merge in it may throw).
        const key = isScalar(pair.key) ? String(pair.key.value) : "";
        found.push(...secretsInKey(key, path[path.length - 1] === "headers"));
        stack.push({ node: pair.value, path: [...path, key] });
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => stack.push({ node: item, path: [...path, i] }));
    }
  }
  for (const m of text.matchAll(SECRET_LINE)) add(m[1]);
  return found;
}

/** `api_key:sk-…`, `token = …`: a secret key's name, then `:`, `=` or whitespace, then what was meant as its value. */
const SECRET_IN_KEY = new RegExp(
  `^\\s*["']?(?:${[...SECRET_KEYS].join("|")})["']?\\s*[:=\\s]\\s*(.+)$`,
  "is",
);

/**
 * What a mapping key holds that must not be shown: the value after a secret key's name (`api_key:sk-…`), and, in
 * a `headers` map, the whole of a key that is no header name (`Authorization:"Bearer sk-…"`) and what follows its
 * first `:`, `=` or whitespace, with and without quotes.
 */
export function secretsInKey(key: string, inHeaders: boolean): string[] {
  const found: string[] = [];
  const add = (text: string | undefined) => {
    const trimmed = text?.trim() ?? "";
    if (trimmed === "") return;
    found.push(trimmed);
    const bare = trimmed.replace(/^["']+|["']+$/g, "").trim();
    if (bare !== "" && bare !== trimmed) found.push(bare);
  };
  add(SECRET_IN_KEY.exec(key)?.[1]);
  if (inHeaders && !HEADER_NAME.test(key)) {
    add(key);
    const end = key.search(/[:=\s]/);
    if (end >= 0) add(key.slice(end + 1));
  }
  return found;
}

/**
 * Every value that must not appear in a message, in plain data: secret fields anywhere, and what keys hold
 * ({@linkcode secretsInKey}). The data may share objects (aliases), so each object is visited at most twice:
 * once as a header map, once as anything else.
 */
export function secretsInData(data: unknown): string[] {
  const found: string[] = [];
  const seen = [new Set<object>(), new Set<object>()];
  const stack: { value: unknown; key: PathSegment | undefined; inHeaders: boolean }[] = [
    { value: data, key: undefined, inHeaders: false },
  ];
  while (stack.length > 0) {
    const { value, key, inHeaders } = stack.pop()!;
    if (typeof key === "string") found.push(...secretsInKey(key, inHeaders));
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
 * The `${VAR}` values (and used defaults) that went into a secret, to mask on their own: into a value at a secret
 * position (`Bearer ${TOKEN}`), or into a string that is one of `secrets` (an anchored string used at a secret
 * position). Where a value went decides, as for the config's own secrets (secrets.ts), so a model name, an
 * environment or a default written in the file (`${CHAT_MODEL:-echo}`, `${ENVIRONMENT:-default}`) is never
 * masked out of a message about something else (`"embed-***" matches no model alias`).
 */
export function substitutedSecrets(
  substitutions: readonly Substitution[],
  secrets: readonly string[],
): string[] {
  const whole = new Set(secrets);
  return substitutions.flatMap(({ value, path, into }) =>
    isSecretPath(path) || whole.has(into) ? [value] : []
  );
}
