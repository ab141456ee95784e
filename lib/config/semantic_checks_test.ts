import assert from "node:assert/strict";
import { type ConfigInput, configSchema } from "./schema.ts";
import { checkConfig } from "./semantic_checks.ts";
import { parseConfigText } from "./load.ts";

function issues(input: ConfigInput, tables?: Parameters<typeof checkConfig>[1]) {
  return checkConfig(configSchema.parse(input), tables).map((i) => ({
    path: i.path.join("."),
    message: i.message,
  }));
}

Deno.test("checkConfig: a valid config has no issues", () => {
  assert.deepEqual(
    issues({
      providers: { local: { type: "builtin" } },
      models: { chat: { type: "chat", targets: [{ provider: "local", model: "echo" }] } },
      tokens: [{ name: "t", token: "0123456789abcdef", models: ["*"], expires_at: "2030-01-01" }],
    }),
    [],
  );
});

Deno.test("checkConfig: an alias type the provider type cannot serve", () => {
  const found = issues(
    {
      providers: { up: { type: "openai", base_url: "http://h/v1" } },
      models: { emb: { type: "embedding", targets: [{ provider: "up", model: "e" }] } },
    },
    {
      serves: { builtin: ["chat", "embedding"], openai: ["chat"] },
      builtinModels: { chat: [], embedding: [], moderation: [] },
    },
  );
  assert.deepEqual(found, [{
    path: "models.emb.targets.0.provider",
    message: 'provider "up" (type openai) cannot serve embedding models',
  }]);
});

Deno.test("checkConfig: moderation aliases are served by openai providers only (not azure, not builtin)", () => {
  const found = issues({
    providers: {
      oa: { type: "openai", base_url: "http://h/v1" },
      az: { type: "azure", base_url: "https://r.openai.azure.com/openai/v1", api_key: "k" },
      local: { type: "builtin" },
    },
    models: {
      mod: {
        type: "moderation",
        targets: [{ provider: "oa", model: "omni-moderation-latest" }, { provider: "az", model: "m" }, {
          provider: "local",
          model: "echo",
        }],
      },
    },
  });
  assert.deepEqual(found, [{
    path: "models.mod.targets.1.provider",
    message: 'provider "az" (type azure) cannot serve moderation models',
  }, {
    path: "models.mod.targets.2.provider",
    message: 'provider "local" (type builtin) cannot serve moderation models',
  }]);
});

Deno.test("checkConfig: base_url that is an endpoint, or carries credentials", () => {
  const found = issues({
    providers: {
      a: { type: "openai", base_url: "https://api.openai.com/v1/chat/completions" },
      b: { type: "openai", base_url: "https://user:pw@h/v1" },
    },
    models: {},
  });
  assert.deepEqual(found.map((i) => i.path), ["providers.a.base_url", "providers.b.base_url"]);
  assert.match(found[0].message, /API root/);
  assert.ok(!found[1].message.includes("pw"));
});

/** Issues of a whole file, as `check` reports them: `path: message`. */
function fileIssues(text: string, env: Record<string, string> = {}): string[] {
  const result = parseConfigText(text, { source: "test.yaml", env });
  return result.ok ? [] : result.issues.map((i) => `${i.path}: ${i.message}`);
}

Deno.test("config: every provider type's base_url is refused with credentials or a query (not only openai's)", () => {
  const providers = [
    'anthropic, api_key: k-123456789, base_url: "https://user:Pr0xyPassw0rd@proxy.example.com"',
    'gemini, api_key: k-123456789, base_url: "https://generativelanguage.googleapis.com/v1beta?key=AIzaSecret123"',
    'azure, api_key: k-123456789, base_url: "https://res.openai.azure.com#frag"',
    'bedrock, region: us-east-1, base_url: "https://u:p4ssw0rdp4ss@bedrock.example.com"',
  ];
  const found = fileIssues(
    `providers:\n${providers.map((p, i) => `  p${i}: { type: ${p} }`).join("\n")}\nmodels: {}\n`,
  );
  assert.deepEqual(found, [
    "providers.p0.base_url: base_url must not contain credentials; use api_key or headers",
    "providers.p1.base_url: base_url must not have a query string or fragment",
    "providers.p2.base_url: base_url must not have a query string or fragment",
    "providers.p3.base_url: base_url must not contain credentials; use api_key or headers",
  ]);
  assert.ok(!found.join("\n").match(/Pr0xyPassw0rd|AIzaSecret123|p4ssw0rdp4ss/));
});

Deno.test("config: a header value Fetch would refuse (line break, NUL, beyond Latin-1) is an issue at its path, everywhere", () => {
  const bad = '"${BAD}"';
  const text = `providers:
  claude: { type: anthropic, api_key: k-123456789, headers: { X-Extra: ${bad} } }
  up: { type: openai, base_url: "https://h/v1", headers: { X-Org: ${bad}, X-Fine: "café ok" } }
guardrails:
  hook: { type: webhook, url: "https://guard.example.com/check", headers: { X-Key: ${bad} } }
alerts:
  - { url: "https://alerts.example.com/hook", headers: { X-Key: ${bad} } }
telemetry:
  otlp: { endpoint: "https://otel.example.com", headers: { X-Key: ${bad} } }
models: {}
`;
  const paths = [
    "providers.claude.headers.X-Extra",
    "providers.up.headers.X-Org",
    "guardrails.hook.headers.X-Key",
    "alerts.0.headers.X-Key",
    "telemetry.otlp.headers.X-Key",
  ];
  for (const value of ["a\r\nInjected: 1", "zero\u0000byte", "caf\u20ac-secret-value"]) {
    const found = fileIssues(text, { BAD: value });
    assert.deepEqual(found.map((i) => i.split(": ")[0]), paths, JSON.stringify(value));
    assert.match(found[0], /Latin-1 text without line breaks or NUL/);
    assert.ok(!found.join("\n").includes(value), "the value is never echoed");
  }
  assert.deepEqual(fileIssues(text, { BAD: "plain-value" }), []);
});

Deno.test("checkConfig: duplicate sha256 compared case-insensitively", () => {
  const found = issues({
    providers: {},
    models: {},
    tokens: [
      { name: "a", sha256: "ab".repeat(32), models: ["*"] },
      { name: "b", sha256: "AB".repeat(32), models: ["*"] },
    ],
  });
  const dup = found.find((i) => i.path === "tokens.1.sha256");
  assert.match(dup?.message ?? "", /same token as tokens\.0 \("a"\)/);
  assert.ok(!dup?.message.toLowerCase().includes("abab"));
});

/** Runs the checks on data the schema has not seen, as the loader does for a rejected file. */
function rawIssues(raw: unknown): string[] {
  return checkConfig(raw).map((i) => `${i.path.join(".")}: ${i.message}`);
}

Deno.test("checkConfig: input of any shape never throws", () => {
  const shapes: unknown[] = [
    undefined,
    null,
    42,
    "text",
    [],
    [{ providers: {} }],
    { providers: null, models: null, tokens: null },
    { providers: [], models: [], tokens: {} },
    { providers: { a: null, b: 5, c: { type: 5 } }, models: { m: null, n: { targets: [null, 5, []] } } },
    { providers: { a: { type: "openai", base_url: 5, headers: [1] } }, models: {}, tokens: [null, 1, []] },
    { providers: { a: { type: "openai", base_url: "not a url", headers: { x: 5 } } }, models: {} },
    { models: { m: { type: "chat", targets: [{ provider: 5, model: null }] } }, tokens: [{ models: "x" }] },
  ];
  for (const raw of shapes) assert.doesNotThrow(() => checkConfig(raw));
  assert.deepEqual(rawIssues({ providers: { a: null }, models: {}, tokens: [5, "x", null] }), []);
});

Deno.test("checkConfig: on raw data, checks what is well-formed and skips the rest", () => {
  const found = rawIssues({
    providers: { local: { type: "builtin" }, odd: { type: 7 }, weird: { type: "anthropic" } },
    models: {
      good: { type: "chat", targets: [{ provider: "local", model: "echo" }] },
      dangling: { type: "chat", targets: [{ provider: "gone", model: "x" }, "not-a-target"] },
      untyped: { type: 3, targets: [{ provider: "local", model: "nope" }] },
      odd: { type: "chat", targets: [{ provider: "odd", model: "x" }, { provider: "weird", model: "x" }] },
      notargets: { type: "chat", targets: "local" },
    },
    tokens: [
      { name: "a", token: "0123456789abcdef", models: ["good", 5, "zzz"], expires_at: 20301231 },
      { name: 5, token: "0123456789abcdef", models: "good" },
      { name: "a", sha256: 12 },
    ],
  });
  assert.deepEqual(found, [
    'models.dangling.targets.0.provider: unknown provider "gone" (defined providers: local, odd, weird)',
    'tokens.0.models.2: "zzz" matches no model alias',
    'tokens.1.token: the same token as tokens.0 ("a"); each token must be unique',
    "tokens.2.name: duplicate token name, also used by tokens.0",
  ]);
});

Deno.test("checkConfig: references are checked only against a section that is a mapping", () => {
  const found = rawIssues({
    providers: ["local"],
    models: { a: { type: "chat", targets: [{ provider: "local", model: "echo" }] } },
    tokens: [{ name: "t", sha256: "ab".repeat(32), models: ["nothing"] }],
  });
  assert.deepEqual(found, ['tokens.0.models.0: "nothing" matches no model alias']);
  assert.deepEqual(rawIssues({ providers: {}, tokens: [{ name: "t", sha256: "x", models: ["a"] }] }), []);
});

Deno.test("checkConfig: inherited keys like constructor are not providers", () => {
  const found = rawIssues({
    providers: {},
    models: { a: { type: "chat", targets: [{ provider: "constructor", model: "x" }] } },
  });
  assert.deepEqual(found, [
    'models.a.targets.0.provider: unknown provider "constructor" (defined providers: none)',
  ]);
});
