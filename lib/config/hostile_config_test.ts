/**
 * Hostile config files: alias cycles and bombs, deep nesting, oversized text, tens of thousands of keys. Each
 * must give a clean result with clear issues (path and line where there is one), quickly, never a thrown
 * error or a stack trace.
 */
import assert from "node:assert/strict";
import { MAX_CONFIG_BYTES, MAX_ISSUES, parseConfigText, readConfigFile } from "./load.ts";
import type { ConfigIssue, LoadResult } from "./types.ts";
import { cpuTimed } from "../../tests/helpers/cpu_time.ts";

const BASE =
  "providers: { local: { type: builtin } }\nmodels:\n  chat: { type: chat, targets: [ { provider: local, model: echo } ] }\n";

function parse(text: string): LoadResult {
  return parseConfigText(text, { source: "test.yaml", env: {} });
}

function issues(text: string): readonly ConfigIssue[] {
  const result = parse(text);
  assert.ok(!result.ok, "expected issues");
  return result.issues;
}

Deno.test("hostile: every shape of self-referencing alias is one issue at the alias, not a RangeError", () => {
  const cases: [string, string, number][] = [
    [`${BASE}server: &s\n  timeouts: *s\n`, "server.timeouts", 5],
    [`${BASE}tokens: &t [*t]\n`, "tokens.0", 4],
    [`${BASE}admin_tokens: &t [{ name: *t }]\n`, "admin_tokens.0.name", 4],
    [`${BASE}server: &s { <<: *s, port: 1 }\n`, "server", 4],
    [`${BASE}routing: &r\n  x: [[[ *r ]]]\n`, "routing.x.0.0.0", 5],
    [`&root\nproviders: *root\n`, "providers", 2],
  ];
  for (const [text, path, line] of cases) {
    assert.deepEqual(issues(text).map((i) => [i.path, i.line]), [[path, line]], text);
    assert.match(issues(text)[0].message, /refers to a value that contains it \(a cycle\)/);
  }
});

Deno.test("hostile: an alias bomb (billion laughs) is one issue at the alias that crosses the bound", () => {
  const lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"];
  for (let i = 1; i < 9; i++) {
    const [name, prev] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
    lines.push(`${name}: &${name} [${`*${prev}, `.repeat(8)}*${prev}]`);
  }
  // What refusing it costs is counted in hostile_config_work_test.ts.
  const found = issues(`${BASE}lols:\n${lines.map((l) => `  ${l}`).join("\n")}\n`);
  assert.equal(found.length, 1);
  assert.match(found[0].path, /^lols\.[a-i]\.\d$/);
  assert.match(found[0].message, /aliases expand to more than 250000 values \(an alias bomb\?\)/);
  // A merge-key bomb too.
  const merges = ["m0: &m0 { k: v }"];
  for (let i = 1; i < 30; i++) {
    merges.push(`m${i}: &m${i} { <<: [*m${i - 1}, *m${i - 1}], x${i}: [*m${i - 1}, *m${i - 1}] }`);
  }
  assert.match(issues(`${BASE}bombs:\n${merges.map((l) => `  ${l}`).join("\n")}\n`)[0].message, /alias bomb/);
});

Deno.test("hostile: many uses of one anchor are fine (no arbitrary alias-count limit)", () => {
  let text =
    "providers: { local: { type: builtin } }\ndefaults: &d { type: chat, targets: [ { provider: local, model: echo } ] }\n";
  text = text.replace("defaults: &d", "x-unused: &d");
  let models = "models:\n";
  for (let i = 0; i < 5_000; i++) models += `  m${i}: { <<: *d, owned_by: team-${i % 7} }\n`;
  const result = parse(`${text.replace("x-unused: &d", "models: {}\nx: &d")}`);
  assert.ok(!result.ok); // "x" is an unknown key; the point is the next one
  const ok = parse(
    `providers: { local: { type: builtin } }\nmodels:\n  m-base: &d { type: chat, targets: [ { provider: local, model: echo } ] }\n${
      models.slice("models:\n".length)
    }`,
  );
  assert.ok(ok.ok, JSON.stringify(ok.ok ? "" : ok.issues.slice(0, 3)));
  assert.equal(ok.config.models.size, 5_001);
  assert.equal(ok.config.models.get("m4999")?.ownedBy, "team-1");
});

Deno.test("hostile: deep nesting is an issue, directly or through aliases", () => {
  assert.match(
    issues(`${BASE}x: ${"[".repeat(100)}${"]".repeat(100)}\n`)[0].message,
    /nested more than 64 levels/,
  );
  assert.match(
    issues(`${BASE}x: ${"[".repeat(50_000)}${"]".repeat(50_000)}\n`)[0].message,
    /^YAML: nested too deeply/,
  );
  const chain = ["l0: &l0 " + "[".repeat(40) + "]".repeat(40)];
  for (let i = 1; i < 5; i++) chain.push(`l${i}: &l${i} ${"[".repeat(40)}*l${i - 1}${"]".repeat(40)}`);
  assert.match(
    issues(`${BASE}deep:\n${chain.map((l) => `  ${l}`).join("\n")}\n`)[0].message,
    /once alias \*l\d is expanded/,
  );
});

Deno.test("hostile: unknown aliases, collection keys and duplicate keys are issues with their line", () => {
  assert.deepEqual(issues(`${BASE}server: *nope\n`).map((i) => [i.path, i.line, i.message]), [
    ["server", 4, "unknown alias *nope: its anchor &nope must come before it"],
  ]);
  assert.deepEqual(issues(`${BASE}server:\n  ? [a, b]\n  : 1\n`).map((i) => [i.path, i.line]), [[
    "server",
    5,
  ]]);
  assert.deepEqual(issues(`${BASE}server:\n  port: 1\n  port: 2\n`).map((i) => [i.path, i.line, i.message]), [
    ["server.port", 6, 'duplicate key "port"'],
  ]);
});

Deno.test("hostile: text over the size bound is refused before parsing, as is a file, read no further", async () => {
  const huge = `${BASE}#${"x".repeat(MAX_CONFIG_BYTES)}\n`;
  const [refused, ms] = cpuTimed(() => issues(huge));
  assert.deepEqual(refused, [{
    path: "",
    message: "config file is larger than 4 MiB (4194304 bytes); not parsed",
  }]);
  assert.ok(ms < 100, `${Math.round(ms)} ms`);
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, huge);
    const read = await readConfigFile(file);
    assert.ok(!read.ok && /larger than 4 MiB/.test(read.issues[0].message));
    await Deno.writeTextFile(file, `${BASE}#${"x".repeat(MAX_CONFIG_BYTES - BASE.length - 3)}\n`);
    assert.ok((await readConfigFile(file)).ok, "a file just under the bound is read");
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("hostile: 100,000 keys (1-2 MB), or 8,000 broken entries, are checked in under 5 s; 100 issues + a count", () => {
  const shapes: Record<string, string> = {
    "unknown top-level keys": BASE +
      Array.from({ length: 100_000 }, (_, i) => `unknown_${i}: ${i}\n`).join(""),
    "unknown server keys": `server:\n${
      Array.from({ length: 100_000 }, (_, i) => `  k${i}: ${i}\n`).join("")
    }${BASE}`,
    "models with a bad provider": "providers: { local: { type: builtin } }\nmodels:\n" +
      Array.from({ length: 8_000 }, (_, i) => `  m${i}: { type: chat, targets: [ { provider: p${i} } ] }\n`)
        .join(""),
    "tokens with patterns that match nothing": BASE + "tokens:\n" +
      Array.from(
        { length: 8_000 },
        (_, i) => `  - { name: t${i}, sha256: ${i.toString(16).padStart(64, "0")}, models: [x${i}] }\n`,
      )
        .join(""),
  };
  for (const [name, text] of Object.entries(shapes)) {
    assert.ok(text.length > 400_000 && text.length <= MAX_CONFIG_BYTES, `${name}: ${text.length} bytes`);
    const [found, elapsed] = cpuTimed(() => issues(text));
    assert.ok(elapsed < 5_000, `${name}: ${Math.round(elapsed)} ms`);
    assert.equal(found.length, MAX_ISSUES + 1, name);
    assert.match(found[MAX_ISSUES].message, /^\d+ more issues not shown/, name);
  }
});

Deno.test("hostile: 8,000 aliases and 8,000 tokens with their own patterns load in under 5 s", () => {
  let text = "providers: { local: { type: builtin } }\nmodels:\n";
  for (let i = 0; i < 8_000; i++) {
    text += `  m${i}: { type: chat, targets: [ { provider: local, model: echo } ] }\n`;
  }
  text += "tokens:\n";
  for (let i = 0; i < 8_000; i++) {
    text += `  - { name: t${i}, sha256: ${i.toString(16).padStart(64, "0")}, models: [m${i}, "m${i}*"] }\n`;
  }
  const [result, elapsed] = cpuTimed(() => parse(text));
  assert.ok(result.ok, JSON.stringify(result.ok ? "" : result.issues.slice(0, 3)));
  assert.ok(elapsed < 5_000, `${Math.round(elapsed)} ms`);
  const token = result.config.tokens.get((7).toString(16).padStart(64, "0"));
  const expected = Array.from({ length: 8_000 }, (_, i) => `m${i}`).filter((a) => a.startsWith("m7"));
  assert.deepEqual([...token!.aliases].sort(), expected.sort());
});

Deno.test("hostile: an alias or a tag written where a secret goes is not echoed by the YAML messages", () => {
  const secret = "Sup3rSecretValue0123";
  const cases = [
    // Unknown aliases: the file is parsed, the tree walk refuses it.
    `providers:\n  oa: { type: openai, base_url: "http://x/v1", headers: { X-Key: *${secret} } }\nmodels: {}\n`,
    `providers:\n  oa:\n    type: anthropic\n    api_key: *${secret}\nmodels: {}\n`,
    `telemetry:\n  otlp: { headers: { Authorization: *${secret} } }\n${BASE}`,
    // Unknown tags: a YAML warning quotes the tag.
    `providers:\n  oa:\n    type: bedrock\n    secret_access_key: !${secret}\nmodels: {}\n`,
    `alerts:\n  - { url: "https://h/x", secret: !${secret} }\nproviders: {}\nmodels: {}\n`,
    `${BASE}guardrails:\n  g: { type: webhook, url: "https://h/x", headers: { X-Key: !${secret} } }\n`,
    // A YAML error after a header value written plainly.
    `providers:\n  oa: { type: openai, base_url: "http://x/v1", headers: { X-Key: ${secret}, "X-Other: 1 }\n`,
  ];
  for (const text of cases) {
    const found = issues(text);
    const printed = found.map((i) => `${i.line}: ${i.path}: ${i.message}`).join("\n");
    assert.ok(!printed.includes("Sup3rSecret"), `secret leaked:\n${printed}`);
    assert.ok(found.every((i) => i.line !== undefined), printed);
  }
});

Deno.test("hostile: a __proto__ name is refused wherever it is written, never an entry that vanishes", () => {
  const text = [
    "providers:", // 1
    "  local: { type: builtin }", // 2
    "  __proto__: { type: builtin }", // 3
    "models:", // 4
    "  chat: { type: chat, targets: [{ provider: local, model: echo }] }", // 5
    "  __proto__: { type: chat, targets: [{ provider: nowhere, model: echo }], typo_key: 1 }", // 6
    "teams:", // 7
    "  __proto__: { limits: { rpm: 1 }, bogus: 2 }", // 8
    "guardrails:", // 9
    "  __proto__: { type: pii }", // 10
    "server: { __proto__: { port: 1 } }", // 11
    "", // 12
  ].join("\n");
  const found = issues(text);
  assert.deepEqual(found.map((i) => [i.path, i.line]), [
    ["providers.__proto__", 3],
    ["models.__proto__", 6],
    ["teams.__proto__", 8],
    ["guardrails.__proto__", 10],
    ["server.__proto__", 11],
  ]);
  for (const issue of found) {
    assert.match(issue.message, /^"__proto__" cannot be a name or key \(JavaScript's/);
  }
  // A token's name is a value, not a key: refused by the schema alike, as the admin API's tokens are.
  const token = `${BASE}tokens: [{ name: __proto__, sha256: ${"a".repeat(64)}, models: ["*"] }]\n`;
  assert.deepEqual(issues(token).map((i) => [i.path, i.line]), [["tokens.0.name", 4]]);
  // Other names of Object.prototype are ordinary names.
  const ordinary = "providers: { constructor: { type: builtin } }\nmodels:\n" +
    "  toString: { type: chat, targets: [{ provider: constructor, model: echo }] }\n";
  assert.ok(parse(ordinary).ok);
});
