/**
 * What the docs tell operators to run must run:
 *
 * - a `GATEWAY_TOKEN=…` shown in README.md or docs/ is a token the shipped config accepts (the Docker image
 *   serves it: a shorter one stops the container at start);
 * - every YAML config example that is a whole file (top-level `providers:` and `models:`) passes what `check`
 *   holds a file to (schema, cross-checks, provider setup), and so does every one that defines providers only
 *   (a `providers:` section, or provider entries as providers.md shows them), given an alias per provider.
 *   `${VAR}` is given a value (`${VAR:-default}` keeps its default) and a `sha256: <…>` placeholder a hash.
 *
 * @module
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { parseConfigText } from "../../lib/config/load.ts";
import { setUpState } from "../../lib/reload.ts";

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

/** A fenced YAML block of a page: its text and the line its first line is on. */
interface Example {
  readonly where: string;
  readonly text: string;
}

function yamlExamples(): Example[] {
  const out: Example[] = [];
  for (const [page, text] of pages()) {
    for (const match of text.matchAll(/^```ya?ml\n([\s\S]*?)^```/gm)) {
      out.push({ where: `${page}:${lineAt(text, match.index) + 1}`, text: match[1] });
    }
  }
  return out;
}

const PROVIDER_TYPES = new Set(["openai", "azure", "anthropic", "gemini", "bedrock", "builtin"]);

/** Whether `data` is a map of provider entries alone (`claude: { type: anthropic, … }`), as providers.md shows them. */
function providerEntries(data: unknown): data is Record<string, unknown> {
  if (typeof data !== "object" || data === null || Array.isArray(data)) return false;
  const values = Object.values(data);
  return values.length > 0 &&
    values.every((v) =>
      typeof v === "object" && v !== null && PROVIDER_TYPES.has(String((v as { type?: unknown }).type))
    );
}

/**
 * The example as a file `check` would be given, or undefined for a fragment of one (a section other than
 * providers). Providers without models get one alias each, so the file is whole and every provider is set up;
 * bare provider entries go under `providers:` first.
 */
function asConfigFile(example: string): string | undefined {
  let text = example;
  if (!/^providers:/m.test(text)) {
    let data: unknown;
    try {
      data = parse(text);
    } catch {
      return undefined; // not YAML on its own (a part of a file, with `…` in it): no config to check
    }
    if (!providerEntries(data)) return undefined;
    text = `providers:\n${text.replace(/^/gm, "  ")}`;
  }
  if (/^models:/m.test(text)) return text;
  const providers = Object.keys((parse(text) as { providers: Record<string, unknown> }).providers);
  const aliases = providers.map((p) => `  doc-${p}: { type: chat, targets: [{ provider: ${p}, model: m }] }`);
  return `${text}\nmodels:\n${aliases.join("\n")}\n`;
}

Deno.test("docs: every YAML config example with providers passes check once its ${VARS} are set", () => {
  let checked = 0;
  const failures: string[] = [];
  for (const example of yamlExamples()) {
    const file = asConfigFile(example.text);
    if (file === undefined) continue;
    checked++;
    // A distinct hash for each `sha256: <…>` placeholder: two equal ones are refused as one token twice.
    let placeholders = 0;
    const text = file.replace(
      /(sha256:\s*)<[^>\n]*>/g,
      (_, key: string) => `${key}${(++placeholders).toString(16).padStart(64, "0")}`,
    );
    const env: Record<string, string> = {};
    for (const [, name] of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
      env[name] = `doc-example-${name.toLowerCase().replaceAll("_", "-")}-0123456789`;
    }
    const parsed = parseConfigText(text, { source: example.where, env });
    const setUp = parsed.ok ? setUpState(parsed.config, env) : parsed;
    if (!setUp.ok) {
      failures.push(`${example.where}: ${setUp.issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`);
    }
  }
  assert.deepEqual(failures, [], "config examples that fail check");
  // configuration.md's and spend_control.md's whole files, endpoints.md's providers, providers.md's entries.
  assert.ok(checked >= 7, `only ${checked} config examples found in the docs`);
});

Deno.test("docs: the shipped config's example says what a second target does, as configuration.md does", () => {
  // It said "today only the first target serves", which was false: a fallback target serves when the first
  // fails. The shipped file is the one every operator copies, so it must agree with the reference.
  const shipped = Deno.readTextFileSync(new URL("config/gateway.yaml", ROOT));
  const reference = pages().get("docs/configuration.md") ?? "";
  const said = /^\s*#\s+- provider: ollama\s+#\s*(.+)$/m.exec(shipped)?.[1];
  const meant = /^\s+- \{ provider: ollama,[^\n]*# (.+)$/m.exec(reference)?.[1];
  assert.ok(said !== undefined && meant !== undefined, "the second target's comment was not found");
  assert.ok(
    said.endsWith(meant),
    `config/gateway.yaml says "${said}"; docs/configuration.md says "${meant}"`,
  );
});
