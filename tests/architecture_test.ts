/**
 * The boundaries of docs/architecture.md, held by reading the imports of `lib/`: no import cycle; providers
 * never import the server, a client API (`lib/api/`) or its plumbing (`lib/http/`), auth, policy, routing or
 * usage; a client API never imports another, and the plumbing never imports a client API; routing, policy and
 * usage never import providers; nothing outside `lib/providers/` reaches into a vendor's folder; nothing
 * outside `lib/providers/` and `lib/config/` decides by a provider's `type` (the capability table answers);
 * only `lib/runtime/` touches `Deno.*` or `Bun.*`; and no file in `lib/` is over 400 lines. Tests beside the source (`*_test.ts`, and their
 * `*_test_helpers.ts`) are left out of the import rules:
 * they may reach across layers to set up what they test, and `Deno.test` is how they run.
 *
 * @module
 */
import assert from "node:assert/strict";
import { PROVIDER_TYPES } from "../lib/config/provider_capabilities.ts";

/** One module and the `lib/` modules it imports (paths relative to the repository root). */
export interface ModuleInfo {
  path: string;
  imports: string[];
  /** The source without comments, for the runtime-globals rule. */
  code: string;
}

const LIB = new URL("../lib/", import.meta.url);

/** Relative import specifiers of `source`: static, `export … from`, side-effect and dynamic imports. */
export function importSpecifiers(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.[^"']+)["']/gm;
  for (const match of source.matchAll(pattern)) found.push(match[1]);
  return found;
}

/** The source without block and line comments (JSDoc names `Deno.serve` often; code must not). */
export function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}

function resolve(from: string, specifier: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const segment of specifier.split("/")) {
    if (segment === "..") parts.pop();
    else if (segment !== ".") parts.push(segment);
  }
  return parts.join("/");
}

/** Every non-test module under `lib/`, with its imports. */
async function readLib(): Promise<ModuleInfo[]> {
  const modules: ModuleInfo[] = [];
  const walk = async (dir: URL, prefix: string) => {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isDirectory) await walk(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`);
      else if (entry.name.endsWith(".ts") && !/_test(?:_helpers)?\.ts$/.test(entry.name)) {
        const path = `lib/${prefix}${entry.name}`;
        const source = await Deno.readTextFile(new URL(entry.name, dir));
        modules.push({
          path,
          imports: importSpecifiers(source).map((s) => resolve(path, s)).filter((p) => p.startsWith("lib/")),
          code: withoutComments(source),
        });
      }
    }
  };
  await walk(LIB, "");
  return modules.sort((a, b) => a.path.localeCompare(b.path));
}

/** The layer of a module: its folder under `lib/`, or its own name for a top-level file (`server`). */
export function layerOf(path: string): string {
  const rest = path.slice("lib/".length);
  const slash = rest.indexOf("/");
  return slash < 0 ? rest.replace(/\.ts$/, "") : rest.slice(0, slash);
}

/** Which layers a layer must not import. */
export const FORBIDDEN: Readonly<Record<string, readonly string[]>> = {
  // A provider speaks to its vendor: never to a client API (`api`) or its plumbing (`http`).
  providers: [
    "http",
    "api",
    "answer",
    "server",
    "serve",
    "auth",
    "policy",
    "routing",
    "usage",
    "cli",
    "reload",
  ],
  routing: ["providers"],
  policy: ["providers"],
  usage: ["providers"],
  // The plumbing serves every client API and knows none of them; the server binds the handlers.
  http: ["api", "answer"],
  // The answer runner takes each client API's wire format as functions; it imports none of them.
  answer: ["api"],
  // The response cache keeps and finds answers in the chat form; the runner (`answer`) attaches it to requests,
  // so it knows no request, client API, provider, policy or route.
  cache: ["http", "api", "answer", "server", "serve", "providers", "policy", "routing", "usage", "auth"],
};

/** The client API of a module under `lib/api/<api>/`, or null. */
function clientApiOf(path: string): string | null {
  const match = /^lib\/api\/([^/]+)\//.exec(path);
  return match === null ? null : match[1];
}

/**
 * Imports from one client API's folder into another's, as `from → to`: each client API owns its schema,
 * translation, native passthrough and stream events, and what two of them share lives below them (`lib/http/`,
 * `lib/usage/`, `lib/streams/`, …), so a change to one API's wire format cannot reach another's.
 */
export function crossApiImports(modules: readonly ModuleInfo[]): string[] {
  const out: string[] = [];
  for (const module of modules) {
    const own = clientApiOf(module.path);
    if (own === null) continue;
    for (const target of module.imports) {
      const other = clientApiOf(target);
      if (other !== null && other !== own) out.push(`${module.path} → ${target}`);
    }
  }
  return out;
}

/** Imports that go the wrong way, as `from → to`. */
export function forbiddenImports(modules: readonly ModuleInfo[]): string[] {
  const out: string[] = [];
  for (const module of modules) {
    const banned = FORBIDDEN[layerOf(module.path)] ?? [];
    for (const target of module.imports) {
      if (banned.includes(layerOf(target))) out.push(`${module.path} → ${target}`);
    }
  }
  return out;
}

/**
 * Imports from outside `lib/providers/` into a vendor's folder (`lib/providers/<vendor>/…`, `shared/`), as
 * `from → to`. The rest of the gateway sees providers through the top-level modules only: the contract
 * (`types.ts`), the registry and the capability table, so a vendor's internals can change without it.
 */
export function vendorFolderImports(modules: readonly ModuleInfo[]): string[] {
  const out: string[] = [];
  for (const module of modules) {
    if (layerOf(module.path) === "providers") continue;
    for (const target of module.imports) {
      if (/^lib\/providers\/[^/]+\//.test(target)) out.push(`${module.path} → ${target}`);
    }
  }
  return out;
}

/** The layers that may read a provider entry's `type`: the providers, and the config that defines the entries. */
// The price catalog is keyed by provider type as the capability table is (a price is data, not behaviour).
const READS_PROVIDER_TYPE = ["providers", "config", "pricing"];

/**
 * Ways code decides by what a provider is rather than by the capability table: its entry's `type` or
 * `native_responses`, a comparison with a provider type's name, a `case` of one, or a test for an optional
 * `Provider` method (`responses`, `messages`, `countInputTokens`) instead of calling it.
 */
function providerTypePatterns(types: readonly string[]): RegExp[] {
  const name = `["'](?:${types.join("|")})["']`;
  const method = "(?:responses|messages|countInputTokens)";
  return [
    /\bproviderConfig\s*\??\.\s*(?:type|native_responses)\b/,
    /\.\s*native_responses\b/,
    /\{[^}]*\b(?:type|native_responses)\b[^}]*\}\s*=\s*[\w.?]*providerConfig\b/,
    new RegExp(`\\btype\\s*[!=]==?\\s*${name}`),
    new RegExp(`${name}\\s*[!=]==?\\s*[\\w.?]*\\btype\\b`),
    new RegExp(`\\bcase\\s+${name}\\s*:`),
    new RegExp(`(?:\\bprovider|\\.get\\([^)]*\\))\\s*\\??\\.\\s*${method}\\b(?!\\s*(?:\\?\\.\\s*)?\\()`),
    new RegExp(`["']${method}["']\\s+in\\s+provider\\b`),
  ];
}

/**
 * Modules outside `lib/providers/` and `lib/config/` whose code (not comments) decides by a provider's type, as
 * `path: the matched text`. What a target speaks is asked of `lib/providers/capabilities.ts`.
 */
export function providerTypeReads(
  modules: readonly ModuleInfo[],
  types: readonly string[] = PROVIDER_TYPES,
): string[] {
  const patterns = providerTypePatterns(types);
  const out: string[] = [];
  for (const module of modules) {
    if (READS_PROVIDER_TYPE.includes(layerOf(module.path))) continue;
    for (const pattern of patterns) {
      const found = module.code.match(pattern);
      if (found) {
        out.push(`${module.path}: ${found[0]}`);
        break; // one finding per module is enough to point at it
      }
    }
  }
  return out;
}

/** Every import cycle, each as the modules along it (Tarjan's strongly connected components). */
export function importCycles(modules: readonly ModuleInfo[]): string[][] {
  const graph = new Map(modules.map((m) => [m.path, m.imports]));
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      const selfLoop = (graph.get(node) ?? []).includes(node);
      if (component.length > 1 || selfLoop) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

/** Modules outside `lib/runtime/` whose code (not comments) uses the `Deno` or `Bun` globals. */
export function runtimeGlobalsOutsideRuntime(modules: readonly ModuleInfo[]): string[] {
  return modules
    .filter((m) => layerOf(m.path) !== "runtime" && /\b(?:Deno|Bun)\s*\.\s*[A-Za-z_]/.test(m.code))
    .map((m) => m.path);
}

Deno.test("architecture: the checks find what they look for (a cycle, a wrong-way import, a runtime global)", () => {
  const modules: ModuleInfo[] = [
    { path: "lib/a/x.ts", imports: ["lib/b/y.ts"], code: "" },
    { path: "lib/b/y.ts", imports: ["lib/a/x.ts"], code: "" },
    { path: "lib/providers/p.ts", imports: ["lib/policy/q.ts"], code: "" },
    { path: "lib/policy/q.ts", imports: [], code: "const port = Deno.env.get('PORT');" },
    { path: "lib/runtime/r.ts", imports: [], code: "Deno.serve(() => new Response());" },
  ];
  assert.deepEqual(importCycles(modules), [["lib/a/x.ts", "lib/b/y.ts"]]);
  assert.deepEqual(forbiddenImports(modules), ["lib/providers/p.ts → lib/policy/q.ts"]);
  assert.deepEqual(runtimeGlobalsOutsideRuntime(modules), ["lib/policy/q.ts"]);
  assert.deepEqual(
    importSpecifiers(`import { a } from "./a.ts";\nexport { b } from "../b.ts";\nawait import("./c.ts");`),
    [
      "./a.ts",
      "../b.ts",
      "./c.ts",
    ],
  );
  assert.equal(withoutComments("/** Deno.serve */\nconst x = 1; // Bun.serve"), "\nconst x = 1; ");
});

Deno.test("architecture: lib/ has no import cycle", async () => {
  const cycles = importCycles(await readLib());
  assert.deepEqual(cycles, [], `import cycles:\n${cycles.map((c) => c.join(" ↔ ")).join("\n")}`);
});

Deno.test("architecture: no import goes the wrong way between layers", async () => {
  assert.deepEqual(forbiddenImports(await readLib()), []);
});

Deno.test("architecture: the client-API checks find what they look for (one API importing another, plumbing importing an API)", () => {
  const modules: ModuleInfo[] = [
    {
      path: "lib/api/messages/create.ts",
      imports: ["lib/api/responses/input_tokens.ts", "lib/http/x.ts"],
      code: "",
    },
    { path: "lib/api/messages/count_tokens.ts", imports: ["lib/api/messages/create.ts"], code: "" },
    { path: "lib/http/endpoints.ts", imports: ["lib/api/chat/stream.ts"], code: "" },
    { path: "lib/answer/runner.ts", imports: ["lib/api/chat/stream.ts"], code: "" },
  ];
  assert.deepEqual(crossApiImports(modules), [
    "lib/api/messages/create.ts → lib/api/responses/input_tokens.ts",
  ]);
  assert.deepEqual(forbiddenImports(modules), [
    "lib/http/endpoints.ts → lib/api/chat/stream.ts",
    "lib/answer/runner.ts → lib/api/chat/stream.ts",
  ]);
});

Deno.test("architecture: no client API imports another", async () => {
  assert.deepEqual(crossApiImports(await readLib()), []);
});

Deno.test("architecture: the provider checks find what they look for (a vendor import, type reads)", () => {
  const modules: ModuleInfo[] = [
    {
      path: "lib/http/a.ts",
      imports: ["lib/providers/bedrock/messages.ts", "lib/providers/types.ts"],
      code: "",
    },
    { path: "lib/http/b.ts", imports: [], code: 'if (target.providerConfig.type !== "openai") return;' },
    { path: "lib/http/c.ts", imports: [], code: "const native = config.native_responses;" },
    { path: "lib/http/d.ts", imports: [], code: 'return type === "anthropic" || x;' },
    { path: "lib/http/e.ts", imports: [], code: "if (provider.responses) return native(target, provider);" },
    {
      path: "lib/http/f.ts",
      imports: [],
      code: "targets.some((t) => providers.get(t.provider)?.countInputTokens);",
    },
    { path: "lib/routing/g.ts", imports: [], code: 'switch (kind) { case "bedrock": return 1; }' },
    { path: "lib/providers/inbound_user.ts", imports: ["lib/api/messages/native.ts"], code: "" },
    {
      path: "lib/http/ok.ts",
      imports: ["lib/providers/capabilities.ts"],
      code:
        'if (item.type === "message" && dialect === "anthropic") await provider.responses?.(body, call);\n' +
        "const answer = await provider.messages(body, call); const n = ctx.services.responses.get(id);",
    },
    { path: "lib/config/secrets.ts", imports: [], code: 'p.type === "bedrock"' },
    { path: "lib/providers/registry.ts", imports: [], code: 'case "openai": return 1;' },
  ];
  assert.deepEqual(vendorFolderImports(modules), ["lib/http/a.ts → lib/providers/bedrock/messages.ts"]);
  assert.deepEqual(forbiddenImports(modules), [
    "lib/providers/inbound_user.ts → lib/api/messages/native.ts",
  ]);
  assert.deepEqual(providerTypeReads(modules, ["openai", "anthropic", "bedrock"]), [
    "lib/http/b.ts: providerConfig.type",
    "lib/http/c.ts: .native_responses",
    'lib/http/d.ts: type === "anthropic"',
    "lib/http/e.ts: provider.responses",
    "lib/http/f.ts: .get(t.provider)?.countInputTokens",
    'lib/routing/g.ts: case "bedrock":',
  ]);
});

Deno.test("architecture: nothing outside lib/providers/ imports a vendor's folder", async () => {
  assert.deepEqual(vendorFolderImports(await readLib()), []);
});

Deno.test("architecture: nothing outside lib/providers/ and lib/config/ decides by a provider's type", async () => {
  assert.deepEqual(providerTypeReads(await readLib()), []);
});

Deno.test("architecture: only lib/runtime/ uses the Deno and Bun globals", async () => {
  assert.deepEqual(runtimeGlobalsOutsideRuntime(await readLib()), []);
});

/** The most lines a file in `lib/` may have (issue 21; tests beside the source included). */
const MAX_LINES = 400;

/** Every `.ts` file under `lib/` (tests included) with its number of lines. */
async function libFileLengths(): Promise<{ path: string; lines: number }[]> {
  const files: { path: string; lines: number }[] = [];
  const walk = async (dir: URL, prefix: string) => {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isDirectory) await walk(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`);
      else if (entry.name.endsWith(".ts")) {
        files.push({
          path: `lib/${prefix}${entry.name}`,
          lines: lineCount(await Deno.readTextFile(new URL(entry.name, dir))),
        });
      }
    }
  };
  await walk(LIB, "");
  return files;
}

/** Lines as `wc -l` counts them for a file that ends with a newline, and one more for a last line without. */
export function lineCount(source: string): number {
  if (source === "") return 0;
  const newlines = source.split("\n").length - 1;
  return source.endsWith("\n") ? newlines : newlines + 1;
}

Deno.test("architecture: lines are counted as wc -l counts them", () => {
  assert.equal(lineCount(""), 0);
  assert.equal(lineCount("a\n"), 1);
  assert.equal(lineCount("a\nb"), 2);
  assert.equal(lineCount("a\n\nb\n"), 3);
});

Deno.test(`architecture: no file in lib/ is over ${MAX_LINES} lines`, async () => {
  const long = (await libFileLengths()).filter((f) => f.lines > MAX_LINES).map((f) =>
    `${f.path}: ${f.lines}`
  );
  assert.deepEqual(long.sort(), []);
});
