/**
 * Property-based fuzz of config files: random mutations of the shipped config and of typical test configs
 * (lines deleted, duplicated and swapped, scalars changed, anchors, aliases, merge keys and tags inserted,
 * odd unicode, deep nesting, huge numbers, secrets in odd places) must each give a clean result: ok, or
 * issues with a string path and message, never a thrown error, and no secret value in any message (an
 * environment variable's value is one when it went into a secret: {@linkcode upKeyIsSecret}).
 *
 * Fixed seed and a bounded number of runs, so a failure reproduces and the run stays within seconds.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseDocument } from "yaml";
import { DEFAULT_CONFIG_TEXT } from "./default_config.ts";
import { interpolateDocument, isSecretPath } from "./interpolate.ts";
import { parseConfigText } from "./load.ts";

const SECRET_ENV = "fuzz-env-secret-value-4711";
const SECRET_KEY = "sk-fuzz-literal-secret-0815";

const SEEDS = [
  DEFAULT_CONFIG_TEXT,
  `server: { port: 8080, max_body_size: 4MiB, timeouts: { first_byte: 30s } }
providers:
  local: { type: builtin }
  up: { type: openai, base_url: "http://127.0.0.1:1/v1", api_key: "${SECRET_KEY}", headers: { X-Key: "\${UP_KEY}" } }
models:
  chat-a: &chat { type: chat, strategy: fallback, targets: [ { provider: up, model: gpt, retries: 1 }, { provider: local, model: echo } ] }
  chat-b: { <<: *chat, owned_by: team }
  embed: { type: embedding, targets: [ { provider: local, model: hash, weight: 2 } ] }
routing: { backoff_base: 100ms, eject_after: 5 }
tokens:
  - { name: web, environment: prod, token: "\${CLIENT_TOKEN}", models: ["chat-*"], expires_at: 2030-01-01 }
  - { name: ci, sha256: ${"ab".repeat(32)}, models: ["*"], budget: { cost: 10, period: day } }
admin_tokens:
  - { name: ops, token: "\${ADMIN_TOKEN:-admin-default-token-value}" }
`,
];

/** Pieces a mutation inserts: YAML features, odd values and things that once crashed the loader. */
const SNIPPETS = [
  "&a",
  "*a",
  "<<: *a",
  "<<: [*a, *a]",
  "!!binary aGVsbG8=",
  "!!set {x, y}",
  "!!omap [x: 1]",
  "!custom x",
  "? [a, b]\n  : 1",
  "a: &x [*x]",
  "b: &y { c: *y }",
  "${MISSING}",
  "${UP_KEY}",
  "$${literal}",
  "${BAD",
  "1e999",
  "-0x1F",
  "99999999999999999999999999",
  ".nan",
  "~",
  "null",
  "''",
  '"\\u0000"',
  "\u202e\u0301\uffff",
  "🦖🦖",
  "\t",
  "---",
  "...",
  "%YAML 1.1",
  "[".repeat(70) + "]".repeat(70),
  "- - - - x",
  "__proto__: { polluted: true }",
  "constructor: x",
  "token: " + SECRET_KEY,
  "api_key: ${UP_KEY}",
];

type Mutation =
  | { kind: "delete"; at: number }
  | { kind: "duplicate"; at: number }
  | { kind: "swap"; at: number; with: number }
  | { kind: "insert"; at: number; indent: number; snippet: string }
  | { kind: "replace-value"; at: number; snippet: string }
  | { kind: "truncate"; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("duplicate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("swap" as const), at: fc.nat(), with: fc.nat() }),
  fc.record({
    kind: fc.constant("insert" as const),
    at: fc.nat(),
    indent: fc.integer({ min: 0, max: 8 }),
    snippet: fc.oneof(fc.constantFrom(...SNIPPETS), fc.string({ maxLength: 20, unit: "grapheme" })),
  }),
  fc.record({
    kind: fc.constant("replace-value" as const),
    at: fc.nat(),
    snippet: fc.oneof(fc.constantFrom(...SNIPPETS), fc.string({ maxLength: 12 }), fc.double().map(String)),
  }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
);

function mutate(text: string, mutations: readonly Mutation[]): string {
  const lines = text.split("\n");
  for (const m of mutations) {
    const at = lines.length === 0 ? 0 : m.at % lines.length;
    switch (m.kind) {
      case "delete":
        lines.splice(at, 1);
        break;
      case "duplicate":
        lines.splice(at, 0, lines[at] ?? "");
        break;
      case "swap": {
        const other = lines.length === 0 ? 0 : m.with % lines.length;
        [lines[at], lines[other]] = [lines[other] ?? "", lines[at] ?? ""];
        break;
      }
      case "insert":
        lines.splice(at, 0, " ".repeat(m.indent) + m.snippet);
        break;
      case "replace-value": {
        const line = lines[at] ?? "";
        const colon = line.indexOf(": ");
        lines[at] = colon < 0 ? `${line} ${m.snippet}` : `${line.slice(0, colon + 2)}${m.snippet}`;
        break;
      }
      case "truncate": {
        const line = lines[at] ?? "";
        lines[at] = line.slice(0, line.length === 0 ? 0 : m.at % line.length);
        break;
      }
    }
  }
  return lines.join("\n");
}

const ENV = { UP_KEY: SECRET_ENV, CLIENT_TOKEN: "fuzz-client-token-value-1234" };

/**
 * Whether `${UP_KEY}` went into a secret in `text` (a value at a secret position), which makes its value a
 * secret of every message. Elsewhere only (a mutation can put it at a provider's or an alias's name) it is no
 * secret: a `${VAR}` value is masked only where it went into one (interpolate.ts, message_secrets.ts), so a
 * model name from `${CHAT_MODEL}` still shows in a message about it. A file YAML cannot read substitutes nothing.
 */
function upKeyIsSecret(text: string): boolean {
  const doc = parseDocument(text, { merge: true, uniqueKeys: false });
  if (doc.errors.length > 0) return false;
  return interpolateDocument(doc, ENV).substitutions.some((s) =>
    s.value === SECRET_ENV && isSecretPath(s.path)
  );
}

Deno.test("fuzz: 10,000 mutated config files each give ok or clean issues, never a throw or a secret", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...SEEDS),
      fc.array(mutation, { minLength: 1, maxLength: 6 }),
      (seed, mutations) => {
        const text = mutate(seed, mutations);
        const result = parseConfigText(text, { source: "fuzz.yaml", env: ENV });
        if (result.ok) return;
        assert.ok(result.issues.length > 0);
        const secrets = [SECRET_KEY, ENV.CLIENT_TOKEN, "admin-default-token-value"];
        if (upKeyIsSecret(text)) secrets.push(SECRET_ENV);
        for (const issue of result.issues) {
          assert.equal(typeof issue.path, "string");
          assert.equal(typeof issue.message, "string");
          assert.ok(issue.message.length > 0);
          assert.ok(issue.line === undefined || Number.isInteger(issue.line));
          for (const secret of secrets) {
            assert.ok(!issue.message.includes(secret), `secret in: ${issue.message}`);
          }
          assert.doesNotMatch(issue.message, /\n\s+at /, "no stack trace");
        }
      },
    ),
    { seed: 20_260_101, numRuns: 10_000 },
  );
});
