import assert from "node:assert/strict";
import { isMap, isScalar, parseDocument } from "yaml";
import { interpolateDocument, interpolateString, isSecretPath } from "./interpolate.ts";

Deno.test("interpolateString: whole value, embedded and several per string", () => {
  const env = { A: "alpha", B: "beta" };
  assert.equal(interpolateString("${A}", env).value, "alpha");
  assert.equal(interpolateString("x-${A}-y", env).value, "x-alpha-y");
  assert.equal(interpolateString("${A}${B}/${A}", env).value, "alphabeta/alpha");
  assert.deepEqual(interpolateString("${A}${B}", env).substituted, ["alpha", "beta"]);
});

Deno.test("interpolateString: text without expressions is unchanged; a lone $ is literal", () => {
  const result = interpolateString("cost $5 and $HOME and $", {});
  assert.equal(result.value, "cost $5 and $HOME and $");
  assert.equal(result.changed, false);
  assert.deepEqual(result.problems, []);
});

Deno.test("interpolateString: $${ escapes a literal ${", () => {
  const result = interpolateString("$${A} and $${ and ${A}", { A: "x" });
  assert.equal(result.value, "${A} and ${ and x");
  assert.deepEqual(result.problems, []);
  assert.equal(result.wholeExpression, false);
});

Deno.test("interpolateString: unset variable without default is a problem naming it", () => {
  const result = interpolateString("Bearer ${OPENAI_API_KEY}", {});
  assert.equal(result.problems.length, 1);
  assert.match(result.problems[0], /^environment variable OPENAI_API_KEY is not set/);
  assert.equal(result.value, "Bearer ");
});

Deno.test("interpolateString: an empty variable counts as set for ${VAR}", () => {
  const result = interpolateString("[${A}]", { A: "" });
  assert.equal(result.value, "[]");
  assert.deepEqual(result.problems, []);
});

Deno.test("interpolateString: ${VAR:-default} uses the default when unset or empty", () => {
  assert.equal(interpolateString("${A:-d}", {}).value, "d");
  assert.equal(interpolateString("${A:-d}", { A: "" }).value, "d");
  assert.equal(interpolateString("${A:-d}", { A: "v" }).value, "v");
  assert.equal(interpolateString("${A:-}", {}).value, "");
  assert.equal(interpolateString("${A:-http://h:1/v1}", {}).value, "http://h:1/v1");
  assert.deepEqual(interpolateString("${A:-}", {}).problems, []);
});

Deno.test("interpolateString: malformed expressions are problems that do not echo the text", () => {
  assert.match(interpolateString("${A", {}).problems[0], /unterminated/);
  assert.match(interpolateString("${1A}", {}).problems[0], /invalid/);
  assert.match(interpolateString("${A-x}", {}).problems[0], /invalid/);
  const secretDefault = interpolateString("${A:-sk-${B}}", { B: "b" });
  assert.match(secretDefault.problems[0], /nested/);
  assert.ok(!secretDefault.problems[0].includes("sk-"));
});

Deno.test("interpolateString: wholeExpression only for exactly one expression", () => {
  assert.equal(interpolateString("${A}", { A: "1" }).wholeExpression, true);
  assert.equal(interpolateString("${A:-8080}", {}).wholeExpression, true);
  assert.equal(interpolateString(" ${A}", { A: "1" }).wholeExpression, false);
  assert.equal(interpolateString("${A}${A}", { A: "1" }).wholeExpression, false);
});

Deno.test("interpolateString: problems never contain the values", () => {
  const env = { SECRET: "sk-do-not-print" };
  const result = interpolateString("${SECRET} ${MISSING} ${bad name}", env);
  assert.equal(result.problems.length, 2);
  for (const p of result.problems) assert.ok(!p.includes("sk-do-not-print"));
});

function valueAt(text: string, env: Record<string, string>, key: string): unknown {
  const doc = parseDocument(text);
  interpolateDocument(doc, env);
  return (doc.toJS() as Record<string, unknown>)[key];
}

Deno.test("interpolateDocument: plain whole-expression numbers and booleans are retyped", () => {
  assert.equal(valueAt("port: ${P}\n", { P: "9000" }, "port"), 9000);
  assert.equal(valueAt("ratio: ${P}\n", { P: "0.5" }, "ratio"), 0.5);
  assert.equal(valueAt("on: ${P:-true}\n", {}, "on"), true);
  assert.equal(valueAt("port: '${P}'\n", { P: "9000" }, "port"), "9000");
  assert.equal(valueAt("port: x${P}\n", { P: "9000" }, "port"), "x9000");
  assert.equal(valueAt("api_key: ${P}\n", { P: "9000" }, "api_key"), "9000");
  assert.equal(valueAt("token: 0123456789012345\n", {}, "token"), "0123456789012345");
});

Deno.test("interpolateDocument: a value whose key takes only text is never retyped", () => {
  const doc = parseDocument("owned_by: ${P}\nport: ${P}\n");
  interpolateDocument(doc, { P: "007" }, (path) => path[0] === "owned_by");
  assert.deepEqual(doc.toJS(), { owned_by: "007", port: 7 });
});

Deno.test("interpolateDocument: issues carry the value's path; keys are not interpolated", () => {
  const doc = parseDocument("a:\n  - x: ${NOPE}\n  - ${ALSO}\n${KEY}: 1\n");
  const result = interpolateDocument(doc, { KEY: "k" });
  assert.deepEqual(result.issues.map((i) => i.path), [["a", 0, "x"], ["a", 1]]);
  assert.ok(
    isMap(doc.contents) && doc.contents.items.some((p) => isScalar(p.key) && p.key.value === "${KEY}"),
  );
});

Deno.test("interpolateDocument: reports where each substituted value went", () => {
  const doc = parseDocument('a: x-${A}-${B:-fb}\nb: [{ api_key: "${A}" }]\nc: ${C:-}\n');
  const result = interpolateDocument(doc, { A: "one" });
  assert.deepEqual(result.substitutions, [
    { value: "one", path: ["a"], into: "x-one-fb", start: 2 },
    { value: "fb", path: ["a"], into: "x-one-fb", start: 6 },
    { value: "one", path: ["b", 0, "api_key"], into: "one", start: 0 },
  ]);
});

Deno.test("isSecretPath: token, api_key, sha256 and header values", () => {
  assert.equal(isSecretPath(["tokens", 0, "token"]), true);
  assert.equal(isSecretPath(["providers", "p", "api_key"]), true);
  assert.equal(isSecretPath(["tokens", 1, "sha256"]), true);
  assert.equal(isSecretPath(["providers", "p", "headers", "Authorization"]), true);
  assert.equal(isSecretPath(["providers", "p", "base_url"]), false);
});
