/**
 * Issues from different stages (interpolation, schema, cross-section checks) in one file are reported
 * together, each once, with its path and line.
 */
import assert from "node:assert/strict";
import { formatIssues, parseConfigText } from "./load.ts";
import type { ConfigIssue } from "./types.ts";

/** Joins lines so that argument N is line N of the file, which keeps expected line numbers readable. */
function doc(...lines: string[]): string {
  return `${lines.join("\n")}\n`;
}

function issuesOf(text: string, env: Record<string, string | undefined> = {}): readonly ConfigIssue[] {
  const result = parseConfigText(text, { source: "test.yaml", env });
  if (result.ok) assert.fail("expected the config to be rejected");
  return result.issues;
}

/** The issues as `line path`, which is what an operator reads first. */
function where(issues: readonly ConfigIssue[]): string[] {
  return issues.map((issue) => `${issue.line} ${issue.path}`);
}

function expectMessage(issues: readonly ConfigIssue[], path: string, message: RegExp) {
  const found = issues.filter((issue) => issue.path === path);
  assert.equal(found.length, 1, `one issue at "${path}" in:\n${formatIssues("test.yaml", issues)}`);
  assert.match(found[0].message, message);
}

Deno.test("combined: wrong type, unset variable, dangling provider and dead token pattern in one file", () => {
  const secret = "client-secret-0123456789abcdef"; // 30 characters
  const text = doc(
    'server: { port: "eighty" }', // 1
    "providers:", // 2
    '  up: { type: openai, base_url: "http://127.0.0.1:1/v1", api_key: "${UPSTREAM_KEY}" }', // 3
    "models:", // 4
    "  chat-a: { type: chat, targets: [ { provider: missing, model: x } ] }", // 5
    "tokens:", // 6
    '  - { name: t, token: "${CLIENT_TOKEN}", models: ["nothing-*"] }', // 7
  );
  const issues = issuesOf(text, { CLIENT_TOKEN: secret });
  assert.deepEqual(where(issues), [
    "1 server.port",
    "3 providers.up.api_key",
    "5 models.chat-a.targets.0.provider",
    "7 tokens.0.models.0",
  ]);
  expectMessage(issues, "server.port", /expected number, received string/);
  expectMessage(issues, "providers.up.api_key", /environment variable UPSTREAM_KEY is not set/);
  expectMessage(
    issues,
    "models.chat-a.targets.0.provider",
    /unknown provider "missing" \(defined providers: up\)/,
  );
  expectMessage(issues, "tokens.0.models.0", /"nothing-\*" matches no model alias/);
  assert.ok(issues.every((issue) => !issue.message.includes(secret)), "the token never appears");
});

Deno.test("combined: several schema issues in one file are reported together, in line order", () => {
  const text = doc(
    "server:", // 1
    "  port: -1", // 2
    "providers:", // 3
    "  up:", // 4
    "    type: openai", // 5
    "    base_url: http://localhost:8000/v1", // 6
    "    api_key: ${UP_KEY}", // 7
    "    retries: 3", // 8
    "models:", // 9
    "  chat:", // 10
    "    type: chat", // 11
    "    targets: []", // 12
  );
  const issues = issuesOf(text);
  assert.deepEqual(where(issues), [
    "2 server.port",
    "7 providers.up.api_key",
    "8 providers.up.retries",
    "12 models.chat.targets",
  ]);
  expectMessage(issues, "server.port", /at least 0/);
  expectMessage(issues, "providers.up.api_key", /UP_KEY/);
  expectMessage(issues, "providers.up.retries", /unknown key/);
  expectMessage(issues, "models.chat.targets", /must not be empty/);
});

Deno.test("combined: semantic issues are all reported together", () => {
  const text = doc(
    "providers:", // 1
    "  local: { type: builtin }", // 2
    "models:", // 3
    "  a:", // 4
    "    type: chat", // 5
    "    targets: [{ provider: nope, model: echo }]", // 6
    "tokens:", // 7
    "  - name: t", // 8
    "    models: [zzz]", // 9
  );
  const issues = issuesOf(text);
  assert.deepEqual(where(issues), ["6 models.a.targets.0.provider", "8 tokens.0", "9 tokens.0.models.0"]);
  expectMessage(issues, "models.a.targets.0.provider", /unknown provider/);
  expectMessage(issues, "tokens.0", /either sha256/);
  expectMessage(issues, "tokens.0.models.0", /matches no model alias/);
});

Deno.test("combined: a path the schema reports gets no second, cross-section issue", () => {
  const text = doc(
    "providers:", // 1
    "  local: { type: builtin }", // 2
    "models:", // 3
    "  a: { type: chat, targets: [{ provider: '', model: echo }] }", // 4
    "tokens:", // 5
    "  - { name: t, sha256: " + "a".repeat(64) + ", models: [''], expires_at: soon }", // 6
  );
  const issues = issuesOf(text);
  assert.deepEqual(where(issues), [
    "4 models.a.targets.0.provider",
    "6 tokens.0.models.0",
    "6 tokens.0.expires_at",
  ]);
  expectMessage(issues, "models.a.targets.0.provider", /^must not be empty$/);
  expectMessage(issues, "tokens.0.models.0", /^must not be empty$/);
  expectMessage(issues, "tokens.0.expires_at", /ISO 8601/);
});

Deno.test("combined: malformed sections are not cross-checked, well-formed ones are", () => {
  const text = doc(
    "providers: [local]", // 1
    "models:", // 2
    "  a: { type: chat, targets: [{ provider: local, model: echo }] }", // 3
    "  b: { type: chat, targets: local }", // 4
    "  c: { type: completion, targets: [{ provider: local, model: echo }] }", // 5
    "tokens:", // 6
    "  - { name: t, sha256: " + "a".repeat(64) + ", models: [a, nothing] }", // 7
    "  - just-a-string", // 8
  );
  const issues = issuesOf(text);
  assert.deepEqual(where(issues), [
    "1 providers",
    "4 models.b.targets",
    "5 models.c.type",
    "7 tokens.0.models.1",
    "8 tokens.1",
  ]);
});

Deno.test("combined: a provider with an invalid type is not also reported as unable to serve", () => {
  const text = doc(
    "server: { port: x }", // 1
    "providers:", // 2
    "  local: { type: skynet }", // 3
    "models:", // 4
    "  a: { type: chat, targets: [{ provider: local, model: echo }] }", // 5
    "  b: { type: chat, targets: [{ provider: '${MISSING}', model: echo }] }", // 6
  );
  const issues = issuesOf(text);
  assert.deepEqual(where(issues), [
    "1 server.port",
    "3 providers.local.type",
    "6 models.b.targets.0.provider",
  ]);
  expectMessage(issues, "models.b.targets.0.provider", /MISSING is not set/);
});
