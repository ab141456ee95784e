/**
 * The docs against the code: every key of the config schema (`lib/config/schema.ts`) has a row in
 * `docs/configuration.md` and every row there names a key of the schema; README.md stays a landing page
 * (at most 12 KB); and every relative link between the docs points at a file and a heading that exist.
 *
 * The convention of `docs/configuration.md` (stated at its top): a key is documented by a reference-table row
 * whose first cell is its full dotted path in a code span; map entries and list items are `*`
 * (`models.*.targets.*.price.input`).
 *
 * @module
 */
import assert from "node:assert/strict";
import type { z } from "zod";
import { configSchema } from "../lib/config/schema.ts";

/** The repository root: the nearest folder above this file that holds `deno.json`. */
function repoRoot(): URL {
  let dir = new URL("./", import.meta.url);
  for (let i = 0; i < 8; i++) {
    try {
      Deno.statSync(new URL("deno.json", dir));
      return dir;
    } catch {
      dir = new URL("../", dir);
    }
  }
  throw new Error("no deno.json above tests/docs_test.ts");
}

const ROOT = repoRoot();
const read = (path: string) => Deno.readTextFileSync(new URL(path, ROOT));

/** The parts of a zod 4 schema's definition this walk reads. */
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  in?: z.ZodType;
  out?: z.ZodType;
  left?: z.ZodType;
  right?: z.ZodType;
  getter?: () => z.ZodType;
}

/**
 * Every key path of a schema: each object property as its dotted path, record values and array items as `*`.
 * Wrappers (optional, default, nullable, …) are seen through; every option of a union is walked, so the
 * provider types' keys merge under `providers.*`.
 */
export function schemaKeyPaths(schema: z.ZodType): string[] {
  const out = new Set<string>();
  const walk = (s: z.ZodType | undefined, path: string): void => {
    if (s === undefined) return;
    const def = (s as unknown as { _zod: { def: Def } })._zod.def;
    switch (def.type) {
      case "object":
        for (const [key, value] of Object.entries(def.shape ?? {})) {
          const p = path === "" ? key : `${path}.${key}`;
          out.add(p);
          walk(value, p);
        }
        return;
      case "optional":
      case "nullable":
      case "default":
      case "prefault":
      case "nonoptional":
      case "readonly":
      case "catch":
        return walk(def.innerType, path);
      case "array":
        return walk(def.element, `${path}.*`);
      case "record":
        return walk(def.valueType, `${path}.*`);
      case "union":
        for (const option of def.options ?? []) walk(option, path);
        return;
      case "intersection":
        walk(def.left, path);
        return walk(def.right, path);
      case "pipe":
        walk(def.in, path);
        return walk(def.out, path);
      case "lazy":
        return walk(def.getter?.(), path);
    }
  };
  walk(schema, "");
  return [...out].sort();
}

/** The keys `docs/configuration.md` documents: the first cell of table rows that is a code span. */
export function documentedKeys(markdown: string): string[] {
  const keys = new Set<string>();
  for (const line of markdown.split("\n")) {
    const m = /^\|\s*`([a-z_][a-z0-9_]*(?:\.(?:\*|[a-z_][a-z0-9_]*))*)`\s*\|/.exec(line);
    if (m) keys.add(m[1]);
  }
  return [...keys].sort();
}

/** The reference tables' rows that are option names, not keys (the connection limits' short names). */
const SHORT_NAMES = new Set([
  "header_timeout",
  "body_timeout",
  "keep_alive_timeout",
  "send_timeout",
  "max_connections",
  "websocket_max_duration",
  "websocket_max_duration_grace",
]);

Deno.test("docs: every config schema key has a row in docs/configuration.md, and every row is a key", () => {
  const keys = schemaKeyPaths(configSchema as unknown as z.ZodType);
  assert(keys.length > 100, `the schema walk found only ${keys.length} keys`);
  assert(keys.includes("server.connections.header_timeout"));
  assert(keys.includes("models.*.targets.*.price.input"));
  const documented = documentedKeys(read("docs/configuration.md")).filter((k) => !SHORT_NAMES.has(k));
  const schemaSet = new Set(keys);
  const docSet = new Set(documented);
  assert.deepStrictEqual(
    keys.filter((k) => !docSet.has(k)),
    [],
    "schema keys missing from docs/configuration.md",
  );
  assert.deepStrictEqual(
    documented.filter((k) => !schemaSet.has(k)),
    [],
    "docs/configuration.md rows that are no key",
  );
});

Deno.test("docs: the key walk sees through wrappers, records, arrays and unions", async () => {
  const { z } = await import("zod");
  const schema = z.strictObject({
    a: z.strictObject({ b: z.number().default(1), c: z.string().optional() }).default({ b: 1 }),
    m: z.record(z.string(), z.array(z.strictObject({ d: z.boolean().nullable() }))),
    u: z.discriminatedUnion("t", [
      z.strictObject({ t: z.literal("x"), e: z.string() }),
      z.strictObject({ t: z.literal("y"), f: z.string().transform((s) => s.length) }),
    ]),
  });
  assert.deepStrictEqual(schemaKeyPaths(schema), [
    "a",
    "a.b",
    "a.c",
    "m",
    "m.*.*.d",
    "u",
    "u.e",
    "u.f",
    "u.t",
  ]);
  assert.deepStrictEqual(documentedKeys("| `a.b` | x |\n| `m.*.d`  | y |\n| plain | z |\n`u.e` in text"), [
    "a.b",
    "m.*.d",
  ]);
});

Deno.test("docs: README.md is a landing page of at most 12 KB", () => {
  const size = Deno.statSync(new URL("README.md", ROOT)).size;
  assert(size <= 12 * 1024, `README.md is ${size} bytes; at most ${12 * 1024}: move reference text to docs/`);
  const readme = read("README.md");
  for (const command of ["deno task start", "deno task test"]) {
    assert(readme.includes(command), `README.md no longer mentions ${command}`);
  }
});

/** GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped, spaces to `-`. */
function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
}

function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = anchor(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

Deno.test("docs: relative links in README.md, SECURITY.md, docs/ and bench/README.md resolve", () => {
  const pages = ["README.md", "SECURITY.md", "bench/README.md"];
  for (const entry of Deno.readDirSync(new URL("docs/", ROOT))) {
    if (entry.isFile && entry.name.endsWith(".md")) pages.push(`docs/${entry.name}`);
  }
  const broken: string[] = [];
  for (const page of pages) {
    const text = read(page);
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // http:, https:, mailto:
      const [file, hash] = target.split("#", 2);
      const url = file === "" ? new URL(page, ROOT) : new URL(file, new URL(page, ROOT));
      let body: string;
      try {
        body = Deno.readTextFileSync(url);
      } catch {
        try {
          Deno.statSync(url); // a folder
          continue;
        } catch {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
      }
      if (hash !== undefined && url.pathname.endsWith(".md") && !anchorsOf(body).has(hash)) {
        broken.push(`${page}: ${target} (no such heading)`);
      }
    }
  }
  assert.deepStrictEqual(broken, []);
});
