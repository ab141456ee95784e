/**
 * What the docs tell operators to run must run: a `GATEWAY_TOKEN=…` shown in README.md or docs/ is a token the
 * shipped config accepts (the Docker image serves it: a shorter one stops the container at start).
 *
 * @module
 */
import assert from "node:assert/strict";
import { parseConfigText } from "../../lib/config/load.ts";

const ROOT = new URL("../../", import.meta.url);

/** README.md and every page of docs/, by their path from the repository root. */
function pages(): Map<string, string> {
  const out = new Map<string, string>([["README.md", Deno.readTextFileSync(new URL("README.md", ROOT))]]);
  for (const entry of Deno.readDirSync(new URL("docs/", ROOT))) {
    if (entry.isFile && entry.name.endsWith(".md")) {
      out.set(`docs/${entry.name}`, Deno.readTextFileSync(new URL(`docs/${entry.name}`, ROOT)));
    }
  }
  return out;
}

/** The line of `text` at which index `at` stands (1-based). */
function lineAt(text: string, at: number): number {
  return text.slice(0, at).split("\n").length;
}

Deno.test("docs: every GATEWAY_TOKEN=… shown is a token the shipped config accepts", () => {
  const shipped = Deno.readTextFileSync(new URL("config/gateway.yaml", ROOT));
  let seen = 0;
  for (const [page, text] of pages()) {
    for (const match of text.matchAll(/GATEWAY_TOKEN=("[^"]*"|'[^']*'|[^\s"'`\\]+)/g)) {
      const value = match[1].replace(/^["']|["']$/g, "");
      // An elided one (`gw-…`) stands for a real token, as `token new` prints it.
      if (value.includes("…")) continue;
      seen++;
      const result = parseConfigText(shipped, {
        source: "config/gateway.yaml",
        env: { GATEWAY_TOKEN: value },
      });
      assert.ok(
        result.ok,
        `${page}:${lineAt(text, match.index)}: GATEWAY_TOKEN=${value}: ${
          result.ok ? "" : result.issues.map((i) => `${i.path}: ${i.message}`).join("; ")
        }`,
      );
    }
  }
  assert.ok(seen > 0, "no GATEWAY_TOKEN=… found in the docs");
});
