/**
 * Compiles `catalog.yaml` into `catalog.json`, the form the program loads: the shipped catalog, validated by
 * {@linkcode parseCatalog} exactly as an operator's file is, and written as its parsed entries. Parsing the
 * YAML at start-up (the YAML parser, the safety walk and the schema, on code not yet compiled) took 20–35 ms
 * of the Bun binary's ~100 ms from spawn to first answer; reading the JSON takes well under one. The YAML stays
 * the one place prices are edited (with each entry's source in comments); `catalog_test.ts` fails when the
 * JSON is not what this script makes of it.
 *
 * Usage: `deno task catalog` after editing `catalog.yaml`.
 *
 * @module
 */
import { readFile, writeFile } from "node:fs/promises";
import { BUILTIN_CATALOG_SOURCE, parseCatalog, type PriceCatalog } from "./catalog.ts";

const YAML_URL = new URL("./catalog.yaml", import.meta.url);
/** Where the compiled catalog is written. */
export const CATALOG_JSON_URL: URL = new URL("./catalog.json", import.meta.url);

/** The compiled form of `yamlText`: its parsed catalog, as JSON text ending in a newline. Throws on issues. */
export function compileCatalog(yamlText: string): string {
  const result = parseCatalog(yamlText, BUILTIN_CATALOG_SOURCE);
  if (!result.ok) {
    const issues = result.issues.map((i) => `${i.line ?? "?"}: ${i.path}: ${i.message}`);
    throw new Error(`catalog.yaml is invalid:\n${issues.join("\n")}`);
  }
  const { source: _source, ...catalog }: PriceCatalog = result.catalog;
  return `${JSON.stringify(catalog, null, 2)}\n`;
}

if (import.meta.main) {
  const text = compileCatalog(await readFile(YAML_URL, "utf8"));
  await writeFile(CATALOG_JSON_URL, text);
  console.log(`wrote ${CATALOG_JSON_URL.pathname} (${text.length} bytes)`);
}
