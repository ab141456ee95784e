/**
 * What a config message must never show, when the file is too broken to check (a YAML error, an unknown alias,
 * a cycle): the text written at every secret position of the file. The positions are `isSecretPath`'s
 * (interpolate.ts), the one list the scrubber, `/admin/config` and every other config message use: `token`,
 * `api_key`, `sha256`, the AWS keys, an alert's `secret`, every header value, and the `redis`/`postgres`/alert
 * URLs. What is "written" there is a value, and also the name of an alias (`api_key: *Sup3r…`) or of a tag
 * (`secret_access_key: !Sup3r…`) given instead of one: the YAML library's messages quote both.
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
import { isSecretPath, type PathSegment, SECRET_KEYS } from "./interpolate.ts";

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
        stack.push({ node: pair.value, path: [...path, key] });
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => stack.push({ node: item, path: [...path, i] }));
    }
  }
  for (const m of text.matchAll(SECRET_LINE)) add(m[1]);
  return found;
}
