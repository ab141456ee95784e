/**
 * The boundaries of docs/architecture.md, held by reading the imports of `lib/`: no import cycle; providers
 * never import the server, http, auth, policy, routing or usage; routing, policy and usage never import
 * providers; and only `lib/runtime/` touches `Deno.*` or `Bun.*`. Tests beside the source (`*_test.ts`) are
 * left out: they may reach across layers to set up what they test, and `Deno.test` is how they run.
 *
 * @module
 */
import assert from "node:assert/strict";

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
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
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
  providers: ["http", "server", "serve", "auth", "policy", "routing", "usage", "cli", "reload"],
  routing: ["providers"],
  policy: ["providers"],
  usage: ["providers"],
};

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

Deno.test("architecture: only lib/runtime/ uses the Deno and Bun globals", async () => {
  assert.deepEqual(runtimeGlobalsOutsideRuntime(await readLib()), []);
});
