/**
 * The words of config issues (issue_messages.ts) as `check`, a reload's log line and `POST /admin/reload` show
 * them: a key from the file that the schema refused is cut where a value may have been written into it.
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

/** Asserts that exactly one issue has `path`, on `line`, and that its message matches. */
function expectIssue(issues: readonly ConfigIssue[], path: string, line: number, message: RegExp) {
  const found = issues.filter((issue) => issue.path === path);
  assert.equal(found.length, 1, `one issue at "${path}" in:\n${formatIssues("test.yaml", issues)}`);
  assert.equal(found[0].line, line, `line of "${path}"`);
  assert.match(found[0].message, message);
}

Deno.test("broken: a value written into a key (no space after ':') is cut from the path and the message", () => {
  const issues = issuesOf(doc(
    "providers:", // 1
    "  up:", // 2
    "    type: openai", // 3
    '    base_url: "http://127.0.0.1:9/v1"', // 4
    "    api_key:sk-proj-SECRET0123456789:", // 5
    '    headers: {Authorization:"Bearer sk-proj-SECRET9876543210", X-Org: org-1}', // 6
    "    timeouts: { total=30s }", // 7
    "models: {}", // 8
  ));
  expectIssue(issues, "providers.up.api_key:…", 5, /^unknown key "api_key:…" \(missing a space after ':'\?/);
  expectIssue(
    issues,
    "providers.up.headers.Authorization:…",
    6,
    /^invalid name: must be a valid header name/,
  );
  expectIssue(issues, "providers.up.timeouts.total=…", 7, /^unknown key "total=…" \(write "key: value"/);
  const printed = formatIssues("test.yaml", issues);
  for (const secret of ["SECRET0123456789", "SECRET9876543210", "30s"]) {
    assert.ok(!printed.includes(secret), printed);
  }
});

Deno.test("broken: a key holding a secret is masked in every issue that shows it whole (a duplicate key)", () => {
  const key = "api_key:sk-proj-SECRET01234567";
  const printed = formatIssues(
    "test.yaml",
    issuesOf(
      doc("providers:", `  up: { type: openai, base_url: "http://h/v1", ${key}, ${key} }`, "models: {}"),
    ),
  );
  assert.match(printed, /duplicate key/);
  assert.ok(!printed.includes("SECRET01234567"), printed);
});

Deno.test("substituted values are shown unless they went into a secret; defaults written in the file always", () => {
  const issues = issuesOf(
    doc(
      "providers:", // 1
      "  local: { type: builtin }", // 2
      '  up: { type: openai, base_url: "http://127.0.0.1:9/v1", headers: { Authorization: "Bearer ${PART}" } }', // 3
      "models:", // 4
      '  chat-default: { type: chat, targets: [{ provider: local, model: "${CHAT_MODEL}" }] }', // 5
      '  other: { type: chat, targets: [{ provider: local, model: "${OTHER_MODEL:-nope}" }] }', // 6
      '  third: { type: chat, targets: [{ provider: local, model: "${PART}" }] }', // 7
      "tokens:", // 8
      '  - { name: t1, environment: "${ENVIRONMENT:-default}", token: "${TOKEN}", models: ["chat-*", "embed-default"] }', // 9
    ),
    { CHAT_MODEL: "hash", PART: "abcd1234", TOKEN: "gw-token-0123456789abcdef" },
  );
  expectIssue(issues, "models.chat-default.targets.0.model", 5, /no chat model "hash" \(available: echo\)$/);
  expectIssue(issues, "models.other.targets.0.model", 6, /no chat model "nope" \(available: echo\)$/);
  expectIssue(issues, "tokens.0.models.1", 9, /^"embed-default" matches no model alias$/);
  // A value that went into a secret (part of a header value) is masked wherever else it shows.
  expectIssue(issues, "models.third.targets.0.model", 7, /no chat model "\*\*\*"/);
  assert.ok(!formatIssues("test.yaml", issues).includes("abcd1234"));
});

Deno.test("did you mean: only a key allowed at that place is suggested", () => {
  const issues = issuesOf(doc(
    "server:", // 1
    "  timout: { total: 5m }", // 2
    "providers:", // 3
    "  oa: { type: openai, base_ur: 'http://h/v1', header: { X-A: b } }", // 4
    "models: {}", // 5
    "usage: { retension: 30d, tokens: 5 }", // 6
  ));
  // `timeout` is a key of a target, not of `server`.
  expectIssue(issues, "server.timout", 2, /^unknown key "timout" \(did you mean "timeouts"\?\)$/);
  expectIssue(issues, "providers.oa.base_ur", 4, /\(did you mean "base_url"\?\)$/);
  expectIssue(issues, "providers.oa.header", 4, /\(did you mean "headers"\?\)$/);
  expectIssue(issues, "usage.retension", 6, /\(did you mean "retention"\?\)$/);
  // `token` is a key elsewhere (of a token), not of `usage`: no suggestion rather than a wrong one.
  expectIssue(issues, "usage.tokens", 6, /^unknown key "tokens"$/);
});

Deno.test("a ${VAR} unquoted inside { } or [ ] is a YAML error that says to quote it; quoted, it loads", () => {
  const admins = (token: string) =>
    doc(
      "providers: { local: { type: builtin } }", // 1
      "models: {}", // 2
      "admin_tokens:", // 3
      `  - { name: ops, token: ${token} }`, // 4
    );
  const env = { ADMIN_TOKEN: "gw-admin-token-0123456789abcdef" };
  const issues = issuesOf(admins("${ADMIN_TOKEN}"), env);
  expectIssue(issues, "", 4, /^YAML: .* \(inside \{ \} or \[ \], quote a \$\{VAR\}: "\$\{VAR\}"\)$/);
  const result = parseConfigText(admins('"${ADMIN_TOKEN}"'), { source: "test.yaml", env });
  assert.ok(result.ok, result.ok ? "" : formatIssues("test.yaml", result.issues));
  // No hint where the error has another cause.
  const other = issuesOf(doc("providers: { local: { type: builtin }", "models: {}"));
  assert.ok(other.every((i) => !i.message.includes("quote a ${VAR}")), formatIssues("test.yaml", other));
});

Deno.test("unions: the branch of the value's kind speaks, not a literal it was never meant to be", () => {
  const issues = issuesOf(doc(
    "providers: { local: { type: builtin } }", // 1
    "models:", // 2
    "  chat:", // 3
    "    type: chat", // 4
    "    targets:", // 5
    '      - { provider: local, model: echo, price: { input: "0.5", output: 2 } }', // 6
    "      - { provider: local, model: echo, price: { input: .inf, output: 2 } }", // 7
    "      - { provider: local, model: echo, price: { input: 1, outptu: 2 } }", // 8
    "      - { provider: local, model: echo, price: catalgo }", // 9
    "tokens:", // 10
    '  - { name: t, sha256: "' + "a".repeat(64) + '", models: ["*"], cache: true }', // 11
  ));
  expectIssue(issues, "models.chat.targets.0.price.input", 6, /^expected number, received string$/);
  expectIssue(issues, "models.chat.targets.1.price.input", 7, /^expected number, received Infinity$/);
  expectIssue(
    issues,
    "models.chat.targets.2.price.outptu",
    8,
    /^unknown key "outptu" \(did you mean "output"\?\)$/,
  );
  expectIssue(issues, "models.chat.targets.2.price.output", 8, /^missing required key "output"$/);
  expectIssue(issues, "models.chat.targets.3.price", 9, /^expected object or "catalog"$/);
  expectIssue(issues, "tokens.0.cache", 11, /^expected false or object$/);
  assert.ok(!issues.some((i) => i.path === "models.chat.targets.0.price"), formatIssues("test.yaml", issues));
});

Deno.test("an empty ${VAR} is named in the issue of the value it left empty", () => {
  const issues = issuesOf(
    doc(
      "providers:", // 1
      '  an: { type: anthropic, api_key: "${AN_KEY}" }', // 2
      '  br: { type: bedrock, region: us-east-1, access_key_id: "${AWS_ID:-}", secret_access_key: s }', // 3
      "models: {}", // 4
      'tokens: [{ name: t, token: "${TOK}", models: ["*"] }]', // 5
    ),
    { AN_KEY: "", TOK: "" },
  );
  expectIssue(
    issues,
    "providers.an.api_key",
    2,
    /^must not be empty \(environment variable AN_KEY is empty\)$/,
  );
  expectIssue(
    issues,
    "providers.br.access_key_id",
    3,
    /^must not be empty \(environment variable AWS_ID is unset or empty\)$/,
  );
  expectIssue(
    issues,
    "tokens.0.token",
    5,
    /^must be at least 16 characters \(environment variable TOK is empty\)$/,
  );
});

Deno.test("a file of several YAML documents is told it must be one, in the words of a config file", () => {
  const issues = issuesOf(doc("providers: { local: { type: builtin } }", "models: {}", "---", "tokens: []"));
  expectIssue(
    issues,
    "",
    3,
    /^YAML: the file must be one YAML document; a second one starts here \(remove the ---\)$/,
  );
  assert.ok(!formatIssues("test.yaml", issues).includes("parseAllDocuments"));
});
