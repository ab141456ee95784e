import assert from "node:assert/strict";
import { globToRegExp } from "./alias_patterns.ts";
import { mergeTimeouts, parseExpiry, resolveConfig, tokenSha256 } from "./resolve.ts";
import { type ConfigInput, configSchema } from "./schema.ts";

function config(input: ConfigInput) {
  return configSchema.parse(input);
}

Deno.test("globToRegExp: anchored, * any run, ? one character", () => {
  const re = globToRegExp("chat-*");
  assert.ok(re.test("chat-"));
  assert.ok(re.test("chat-gpt-4o"));
  assert.ok(!re.test("my-chat-x"));
  assert.ok(globToRegExp("*").test("anything/at@all"));
  assert.ok(globToRegExp("gpt-?").test("gpt-4"));
  assert.ok(!globToRegExp("gpt-?").test("gpt-4o"));
  assert.ok(!globToRegExp("gpt-?").test("gpt-"));
});

Deno.test("globToRegExp: everything else is literal", () => {
  assert.ok(globToRegExp("gpt-4.1").test("gpt-4.1"));
  assert.ok(!globToRegExp("gpt-4.1").test("gpt-4x1"));
  assert.ok(globToRegExp("a+b(c)[d]{e}|f^g$h\\i/j").test("a+b(c)[d]{e}|f^g$h\\i/j"));
  assert.ok(!globToRegExp("a+").test("aa"));
});

Deno.test("tokenSha256: lower-case hex SHA-256", () => {
  assert.equal(tokenSha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});

Deno.test("parseExpiry: a date-only value is valid through that whole UTC day", () => {
  assert.equal(parseExpiry("2026-12-31"), Date.UTC(2027, 0, 1));
  assert.equal(parseExpiry("2026-12-31T12:00:00Z"), Date.UTC(2026, 11, 31, 12));
  assert.equal(parseExpiry("2026-12-31T12:00:00+02:00"), Date.UTC(2026, 11, 31, 10));
  assert.ok(Number.isNaN(parseExpiry("soon")));
});

Deno.test("mergeTimeouts: target over provider over server", () => {
  const server = { first_byte: 1, idle: 2, total: 3 };
  const openai = config({
    providers: { p: { type: "openai", base_url: "http://h/v1", timeouts: { idle: "20s", total: 30 } } },
    models: {},
  }).providers.p;
  assert.deepEqual(mergeTimeouts(server, openai, { total: 300 }), {
    firstByteMs: 1,
    idleMs: 20_000,
    totalMs: 300,
  });
  assert.deepEqual(mergeTimeouts(server, { type: "builtin" }, {}), { firstByteMs: 1, idleMs: 2, totalMs: 3 });
});

const SAMPLE: ConfigInput = {
  server: { timeouts: { first_byte: "5s", idle: "10s", total: "1m" } },
  providers: {
    local: { type: "builtin" },
    up: { type: "openai", base_url: "http://localhost:8000/v1", timeouts: { first_byte: "2s" } },
  },
  models: {
    "chat-a": {
      type: "chat",
      targets: [{ provider: "up", model: "m", timeouts: { total: "30s" } }, {
        provider: "local",
        model: "echo",
      }],
    },
    "chat-b": {
      type: "chat",
      targets: [{ provider: "local", model: "echo" }],
      owned_by: "team",
      created: 42,
    },
    "embed": { type: "embedding", targets: [{ provider: "local", model: "hash" }] },
  },
  tokens: [
    { name: "a", token: "a-long-enough-secret", models: ["chat-*"], expires_at: "2026-01-31" },
    { name: "b", sha256: "AB".repeat(32), models: ["embed", "chat-?"], disabled: true },
  ],
};

Deno.test("resolveConfig: models with merged timeouts and defaults", () => {
  const resolved = resolveConfig(config(SAMPLE), "test.yaml", 1_700_000_000_999);
  assert.equal(resolved.source, "test.yaml");
  const a = resolved.models.get("chat-a");
  assert.equal(a?.ownedBy, "up");
  assert.equal(a?.created, 1_700_000_000);
  assert.deepEqual(a?.targets[0].timeouts, { firstByteMs: 2000, idleMs: 10_000, totalMs: 30_000 });
  assert.deepEqual(a?.targets[1].timeouts, { firstByteMs: 5000, idleMs: 10_000, totalMs: 60_000 });
  assert.equal(a?.targets[0].providerConfig.type, "openai");
  const b = resolved.models.get("chat-b");
  assert.equal(b?.ownedBy, "team");
  assert.equal(b?.created, 42);
  assert.equal(resolved.providers.size, 2);
});

Deno.test("resolveConfig: tokens keyed by lower-case sha256 with expanded aliases", () => {
  const resolved = resolveConfig(config(SAMPLE), "test.yaml", 0);
  const a = resolved.tokens.get(tokenSha256("a-long-enough-secret"));
  assert.deepEqual([...(a?.aliases ?? [])].sort(), ["chat-a", "chat-b"]);
  assert.deepEqual(a?.patterns, ["chat-*"]);
  assert.equal(a?.expiresAt, Date.UTC(2026, 1, 1));
  assert.equal(a?.disabled, false);
  assert.equal(a?.environment, "default");
  const b = resolved.tokens.get("ab".repeat(32));
  assert.deepEqual([...(b?.aliases ?? [])].sort(), ["chat-a", "chat-b", "embed"]);
  assert.equal(b?.expiresAt, null);
  assert.equal(b?.disabled, true);
  assert.ok(!JSON.stringify([...resolved.tokens.values()]).includes("a-long-enough-secret"));
});

Deno.test("resolveConfig: invariants a checked config cannot break throw", () => {
  const unknown = config({
    providers: {},
    models: { m: { type: "chat", targets: [{ provider: "x", model: "y" }] } },
  });
  assert.throws(() => resolveConfig(unknown, "t"), /unknown provider/);
  const neither = config({ providers: {}, models: {}, tokens: [{ name: "n", models: ["*"] }] });
  assert.throws(() => resolveConfig(neither, "t"), /exactly one of sha256 and token/);
});
