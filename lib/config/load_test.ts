import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { formatIssues, loadConfigFile, parseConfigText } from "./load.ts";
import { tokenSha256 } from "./resolve.ts";
import type { ConfigIssue, ResolvedConfig } from "./types.ts";

/** Joins lines so that argument N is line N of the file, which keeps expected line numbers readable. */
function doc(...lines: string[]): string {
  return `${lines.join("\n")}\n`;
}

/** A valid config; tests append to it, so its lines stay where they are (1-9). */
const BASE = [
  "providers:", // 1
  "  local:", // 2
  "    type: builtin", // 3
  "models:", // 4
  "  chat-default:", // 5
  "    type: chat", // 6
  "    targets:", // 7
  "      - provider: local", // 8
  "        model: echo", // 9
];

function issuesOf(text: string, env: Record<string, string | undefined> = {}): readonly ConfigIssue[] {
  const result = parseConfigText(text, { source: "test.yaml", env });
  if (result.ok) assert.fail("expected the config to be rejected");
  return result.issues;
}

function configOf(text: string, env: Record<string, string | undefined> = {}): ResolvedConfig {
  const result = parseConfigText(text, { source: "test.yaml", env });
  if (!result.ok) assert.fail(`expected a valid config, got:\n${formatIssues("test.yaml", result.issues)}`);
  return result.config;
}

/** Asserts that exactly one issue has `path`, on `line`, and that its message matches. */
function expectIssue(
  issues: readonly ConfigIssue[],
  path: string,
  line: number | undefined,
  message?: RegExp,
) {
  const found = issues.filter((issue) => issue.path === path);
  assert.equal(found.length, 1, `one issue at "${path}" in:\n${formatIssues("test.yaml", issues)}`);
  assert.equal(found[0].line, line, `line of "${path}"`);
  if (message) assert.match(found[0].message, message);
}

Deno.test("shipped config/gateway.yaml loads without issues and needs no environment", async () => {
  const text = await readFile(new URL("../../config/gateway.yaml", import.meta.url), "utf8");
  const config = configOf(text);
  assert.equal(config.server.host, "127.0.0.1");
  assert.equal(config.server.port, 8080);
  assert.equal(config.providers.get("local")?.type, "builtin");
  assert.equal(config.models.get("chat-default")?.type, "chat");
  assert.equal(config.models.get("chat-default")?.targets[0].model, "echo");
  assert.equal(config.models.get("embed-default")?.type, "embedding");
  assert.equal(config.models.get("embed-default")?.targets[0].model, "hash");
  const token = config.tokens.get(tokenSha256("gw-local-dev-token-change-me"));
  assert.equal(token?.name, "dev-default");
  assert.equal(token?.environment, "development");
  assert.ok(token?.aliases.has("chat-default") && token.aliases.has("embed-default"));
  const withEnv = configOf(text, { GATEWAY_TOKEN: "a-token-from-the-environment" });
  assert.ok(withEnv.tokens.has(tokenSha256("a-token-from-the-environment")));
});

Deno.test("broken: YAML syntax error is an issue with its line", () => {
  const issues = issuesOf(doc(...BASE, "tokens:", "  - name: a", "\tmodels: [x]"));
  expectIssue(issues, "", 12, /^YAML: Tabs are not allowed/);
});

Deno.test("broken: duplicate YAML key", () => {
  const issues = issuesOf(doc(...BASE, "providers:", "  other:", "    type: builtin"));
  expectIssue(issues, "providers", 10, /^duplicate key "providers"$/);
});

Deno.test("broken: unknown top-level key, with a suggestion", () => {
  const issues = issuesOf(doc(...BASE, "tokenz: []"));
  expectIssue(issues, "tokenz", 10, /unknown key "tokenz" \(did you mean "tokens"\?\)/);
});

Deno.test("broken: unknown nested key (base_ur typo) points at the key itself", () => {
  const text = doc(
    "providers:", // 1
    "  openai:", // 2
    "    type: openai", // 3
    "    base_ur: https://api.openai.com/v1", // 4
    "models: {}", // 5
  );
  const issues = issuesOf(text);
  expectIssue(issues, "providers.openai.base_ur", 4, /unknown key "base_ur" \(did you mean "base_url"\?\)/);
  expectIssue(issues, "providers.openai.base_url", 2, /missing required key "base_url"/);
});

Deno.test("broken: port given as a string", () => {
  const issues = issuesOf(doc(...BASE, "server:", "  host: 0.0.0.0", '  port: "8080"'));
  expectIssue(issues, "server.port", 12, /expected number, received string/);
});

Deno.test("broken: port out of range", () => {
  const issues = issuesOf(doc(...BASE, "server:", "  port: 70000"));
  expectIssue(issues, "server.port", 11, /at most 65535/);
});

Deno.test("broken: missing models points at the parent (the document's first key)", () => {
  const issues = issuesOf(doc("# gateway", "providers:", "  local:", "    type: builtin"));
  expectIssue(issues, "models", 2, /missing required key "models"/);
});

Deno.test("broken: openai provider without base_url points at the provider", () => {
  const text = doc("providers:", "  remote:", "    type: openai", "    api_key: abc", "models: {}");
  expectIssue(issuesOf(text), "providers.remote.base_url", 2, /missing required key "base_url"/);
});

/** An alias entry under `models:` in five lines: name, type, targets, provider, model. */
function alias(name: string, type: string, provider: string, model: string): string[] {
  return [
    `  ${name}:`,
    `    type: ${type}`,
    "    targets:",
    `      - provider: ${provider}`,
    `        model: ${model}`,
  ];
}

Deno.test("broken: target names an unknown provider", () => {
  const issues = issuesOf(doc(...BASE, ...alias("chat-2", "chat", "lcoal", "echo")));
  expectIssue(
    issues,
    "models.chat-2.targets.0.provider",
    13,
    /unknown provider "lcoal" \(defined providers: local\)/,
  );
});

Deno.test("broken: builtin target with a model the builtin provider does not have for that type", () => {
  const issues = issuesOf(doc(...BASE, ...alias("embed", "embedding", "local", "echo")));
  expectIssue(issues, "models.embed.targets.0.model", 14, /no embedding model "echo" \(available: hash\)/);
});

Deno.test("broken: empty targets list", () => {
  const text = doc(...BASE, "  chat-2:", "    type: chat", "    targets: []");
  expectIssue(issuesOf(text), "models.chat-2.targets", 12, /must not be empty/);
});

Deno.test("broken: invalid provider type", () => {
  const text = doc(...BASE).replace("type: builtin", "type: skynet");
  expectIssue(issuesOf(text), "providers.local.type", 3, /type must be one of "builtin", "openai"/);
});

Deno.test("broken: invalid alias type", () => {
  const text = doc(...BASE).replace("type: chat", "type: completion");
  expectIssue(issuesOf(text), "models.chat-default.type", 6, /"chat"\|"embedding"/);
});

Deno.test("broken: bad duration string", () => {
  const text = doc(...BASE, "server:", "  timeouts:", "    idle: 30 parsecs");
  expectIssue(issuesOf(text), "server.timeouts.idle", 12, /expected a duration such as/);
});

Deno.test("broken: a timeout longer than a timer keeps (24.8 days) is refused; a retention of 90d is not a timer", () => {
  const text = doc(...BASE, "server:", "  timeouts:", "    total: 25d", "usage:", "  retention: 90d");
  const issues = issuesOf(text);
  expectIssue(issues, "server.timeouts.total", 12, /at most 24d/);
  assert.equal(issues.length, 1, formatIssues("test.yaml", issues));
  assert.equal(
    configOf(doc(...BASE, "server:", "  timeouts:", "    total: 24d")).server.timeouts.total,
    24 * 86_400_000,
  );
});

Deno.test("broken: bad alias name", () => {
  const issues = issuesOf(doc(...BASE, ...alias("-leading-dash", "chat", "local", "echo")));
  expectIssue(issues, "models.-leading-dash", 10, /invalid alias name/);
});

const TOKENS_AT_10 = [...BASE, "tokens:"]; // entries start on line 11

Deno.test("broken: token with neither sha256 nor token", () => {
  const text = doc(...TOKENS_AT_10, "  - name: ci", "    models: [chat-default]");
  expectIssue(issuesOf(text), "tokens.0", 11, /either sha256 .* or token/);
});

Deno.test("broken: token with both sha256 and token", () => {
  const text = doc(
    ...TOKENS_AT_10,
    "  - name: ci",
    "    models: ['*']",
    "  - name: both",
    `    sha256: ${"ab".repeat(32)}`,
    "    token: a-long-enough-token-value",
    "    models: ['*']",
  );
  const issues = issuesOf(text);
  expectIssue(issues, "tokens.1", 13, /not both/);
  expectIssue(issues, "tokens.0", 11, /either sha256/);
});

Deno.test("broken: sha256 that is not 64 hex characters", () => {
  const text = doc(...TOKENS_AT_10, "  - name: ci", `    sha256: ${"g".repeat(64)}`, "    models: ['*']");
  expectIssue(issuesOf(text), "tokens.0.sha256", 12, /must be 64 hex characters/);
});

Deno.test("broken: token pattern that matches no alias", () => {
  const text = doc(
    ...TOKENS_AT_10,
    "  - name: ci",
    `    sha256: ${"0".repeat(64)}`,
    "    models:",
    "      - chat-*",
    "      - emb?d*",
  );
  expectIssue(issuesOf(text), "tokens.0.models.1", 15, /"emb\?d\*" matches no model alias/);
});

Deno.test("broken: duplicate token hashes, one as sha256 and one as token", () => {
  const secret = "a-long-enough-token-value";
  const text = doc(
    ...TOKENS_AT_10,
    "  - name: first", // 11
    `    sha256: ${tokenSha256(secret).toUpperCase()}`, // 12
    "    models: ['*']", // 13
    "  - name: second", // 14
    "    token: ${CI_TOKEN}", // 15
    "    models: ['*']", // 16
  );
  const issues = issuesOf(text, { CI_TOKEN: secret });
  expectIssue(issues, "tokens.1.token", 15, /same token as tokens\.0 \("first"\)/);
  assert.ok(issues.every((i) => !i.message.includes(secret) && !i.message.includes(tokenSha256(secret))));
});

Deno.test("broken: duplicate token names", () => {
  const text = doc(
    ...TOKENS_AT_10,
    "  - name: ci",
    `    sha256: ${"1".repeat(64)}`,
    "    models: ['*']",
    "  - name: ci",
    `    sha256: ${"2".repeat(64)}`,
    "    models: ['*']",
  );
  expectIssue(issuesOf(text), "tokens.1.name", 14, /duplicate token name, also used by tokens\.0/);
});

Deno.test("broken: expires_at that is not a date", () => {
  const text = doc(
    ...TOKENS_AT_10,
    "  - name: ci",
    `    sha256: ${"1".repeat(64)}`,
    "    models: ['*']",
    "    expires_at: next tuesday",
  );
  expectIssue(issuesOf(text), "tokens.0.expires_at", 14, /ISO 8601 date/);
});

Deno.test("broken: unset environment variable without default names the variable and the path", () => {
  const text = doc(
    "providers:", // 1
    "  openai:", // 2
    "    type: openai", // 3
    "    base_url: ${OPENAI_BASE_URL:-https://api.openai.com/v1}", // 4
    "    api_key: ${OPENAI_API_KEY}", // 5
    "models: {}", // 6
  );
  const issues = issuesOf(text, { OPENAI_BASE_URL: "" });
  expectIssue(issues, "providers.openai.api_key", 5, /environment variable OPENAI_API_KEY is not set/);
  assert.equal(issues.length, 1, "the default for OPENAI_BASE_URL was used, also for an empty value");
  const config = configOf(text, { OPENAI_API_KEY: "" }); // empty counts as set for ${VAR}
  const provider = config.providers.get("openai");
  assert.equal(provider?.type === "openai" && provider.base_url, "https://api.openai.com/v1");
  assert.equal(provider?.type === "openai" && provider.api_key, "");
});

Deno.test("broken: base_url with a query string", () => {
  const text = doc(
    "providers:",
    "  up:",
    "    type: openai",
    "    base_url: http://localhost:8000/v1?key=1",
    "models: {}",
  );
  expectIssue(issuesOf(text), "providers.up.base_url", 4, /query string/);
});

Deno.test("broken: empty file", () => {
  const issues = issuesOf("# nothing here\n");
  expectIssue(issues, "", undefined, /mapping/);
});

Deno.test("secrets never appear in any message", () => {
  const secret = "sk-live-0123456789abcdef-SECRET";
  const env = { SECRET: secret };
  const schemaBroken = doc(
    "server:",
    "  host: ${SECRET}",
    "  port: ${SECRET}",
    "  timeouts: { idle: '${SECRET}' }",
    "providers:",
    "  local:",
    "    type: ${SECRET}",
    "  up:",
    "    type: openai",
    "    base_url: ${SECRET}",
    "    headers: { '${SECRET}': x }",
    "models:",
    "  chat:",
    "    type: ${SECRET}",
    "    targets: [{ provider: local, model: echo }]",
    "tokens:",
    "  - name: ${SECRET}",
    `    token: ${secret}`,
    "    models: ['*']",
    "    expires_at: ${SECRET}",
    `  - name: b`,
    `    sha256: ${secret}`,
    "    models: ['*']",
  );
  const semanticBroken = doc(
    ...BASE,
    "  a:",
    "    type: chat",
    "    targets: [{ provider: '${SECRET}', model: echo }]",
    "  b:",
    "    type: embedding",
    "    targets: [{ provider: local, model: '${SECRET}' }]",
    "tokens:",
    "  - name: t",
    "    token: ${SECRET}",
    "    models: ['${SECRET}']",
    "  - name: u",
    `    sha256: ${tokenSha256(secret)}`,
    "    models: ['*']",
  );
  const yamlBroken = doc("tokens:", `  - token: ${secret}`, "\t  name: x", `api_key: ${secret}`);
  for (const text of [schemaBroken, semanticBroken, yamlBroken]) {
    const issues = issuesOf(text, env);
    assert.ok(issues.length > 0);
    const printed = formatIssues("test.yaml", issues);
    assert.ok(!printed.includes(secret), `secret leaked:\n${printed}`);
    assert.ok(!printed.includes(tokenSha256(secret)), `hash leaked:\n${printed}`);
  }
});

Deno.test("a whole-value ${VAR} in a plain scalar is retyped; quoted stays a string", () => {
  const config = configOf(doc(...BASE, "server:", "  port: ${PORT:-8081}"));
  assert.equal(config.server.port, 8081);
  const issues = issuesOf(doc(...BASE, "server:", '  port: "${PORT}"'), { PORT: "9000" });
  expectIssue(issues, "server.port", 11, /expected number/);
});

Deno.test("$${ is a literal ${", () => {
  const config = configOf(doc(...BASE, "    description: costs $${PRICE} per call"));
  assert.equal(config.models.get("chat-default")?.alias, "chat-default");
});

Deno.test("loadConfigFile: a missing file is one issue with an empty path", async () => {
  const result = await loadConfigFile("/nonexistent/gateway.yaml", {});
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.equal(result.issues.length, 1);
  assert.equal(result.issues[0].path, "");
  assert.equal(result.issues[0].line, undefined);
  assert.match(result.issues[0].message, /cannot read config file \(file not found\)/);
});

Deno.test("loadConfigFile: reads and resolves the shipped file", async () => {
  const path = new URL("../../config/gateway.yaml", import.meta.url).pathname;
  const result = await loadConfigFile(path, {});
  assert.equal(result.ok, true);
  if (result.ok) assert.equal(result.config.source, path);
});

Deno.test("formatIssues: one line per issue, line and path optional", () => {
  const text = formatIssues("gw.yaml", [
    { path: "server.port", line: 3, message: "must be at most 65535" },
    { path: "", message: "cannot read config file" },
    { path: "", line: 1, message: "YAML: bad" },
  ]);
  assert.equal(
    text,
    "gw.yaml:3: server.port: must be at most 65535\ngw.yaml: (document): cannot read config file\ngw.yaml:1: (document): YAML: bad",
  );
});

Deno.test("an unquoted all-digit sha256 stays the text written, not a number", () => {
  const config = configOf(
    doc(...BASE, "tokens:", "  - name: ci", `    sha256: ${"1".repeat(64)}`, "    models: ['*']"),
  );
  assert.equal([...config.tokens.keys()][0], "1".repeat(64));
});

Deno.test("broken: a merge key that is not a mapping", () => {
  const issues = issuesOf(doc(...BASE, "server:", "  <<: 5"));
  assert.equal(issues.length, 1);
  expectIssue(issues, "server", 11, /^<< \(merge\) needs a mapping/);
});
