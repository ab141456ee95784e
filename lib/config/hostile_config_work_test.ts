/**
 * What refusing an alias bomb costs, counted rather than timed (tests/helpers/work_meter.ts): the blocks of the
 * config loader's code that ran and the characters its string searches went over. A bomb (each level nine
 * aliases of the one before, 9⁹ values once expanded) must be refused from the document as written: the sizes
 * aliases add are computed once per node, so the loader never walks the values it refuses to expand. The CPU
 * time bound this replaced measured the machine as much as the code.
 *
 * The bound is a count with a reason: fewer blocks than the {@linkcode MAX_ALIAS_EXPANSION} values that a walk
 * through the expansion would have to visit, at least a block each, before it could know it crossed that bound.
 * (The bombs here take about two thousand.)
 *
 * @module
 */
import assert from "node:assert/strict";
import { startWorkMeter } from "../../tests/helpers/work_meter.ts";

// Before the loader is first called: block coverage counts only code compiled after it started.
const meter = await startWorkMeter();
const { parseConfigText } = await import("./load.ts");
const { MAX_ALIAS_EXPANSION } = await import("./yaml_tree.ts");

/** Every module of lib/config: the code whose work is counted. */
const MODULES: URL[] = [];
for await (const entry of Deno.readDir(new URL("./", import.meta.url))) {
  if (entry.isFile && entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
    MODULES.push(new URL(`./${entry.name}`, import.meta.url));
  }
}

const BASE =
  "providers: { local: { type: builtin } }\nmodels:\n  chat: { type: chat, targets: [ { provider: local, model: echo } ] }\n";

/** Nine levels of nine aliases of the level before: the billion laughs. */
function laughs(): string {
  const lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"];
  for (let i = 1; i < 9; i++) {
    const [name, prev] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
    lines.push(`${name}: &${name} [${`*${prev}, `.repeat(8)}*${prev}]`);
  }
  return `${BASE}lols:\n${lines.map((l) => `  ${l}`).join("\n")}\n`;
}

/** Thirty levels of merge keys, each merging the level before twice and listing it twice. */
function merges(): string {
  const lines = ["m0: &m0 { k: v }"];
  for (let i = 1; i < 30; i++) {
    lines.push(`m${i}: &m${i} { <<: [*m${i - 1}, *m${i - 1}], x${i}: [*m${i - 1}, *m${i - 1}] }`);
  }
  return `${BASE}bombs:\n${lines.map((l) => `  ${l}`).join("\n")}\n`;
}

Deno.test("hostile work: an alias bomb is refused without walking what it expands to", async () => {
  for (const [name, bomb] of [["billion laughs", laughs()], ["merge keys", merges()]]) {
    const issues: string[] = [];
    const work = await meter.measure(MODULES, () => {
      const result = parseConfigText(bomb, { source: "test.yaml", env: {} });
      if (!result.ok) issues.push(...result.issues.map((i) => i.message));
    });
    assert.equal(issues.length, 1, `${name}: ${issues}`);
    assert.match(issues[0], /an alias bomb/, name);
    assert.ok(
      work.blocks < MAX_ALIAS_EXPANSION,
      `${name}: ${work.blocks} blocks, as many as the values expanding would visit (${MAX_ALIAS_EXPANSION})`,
    );
  }
});
