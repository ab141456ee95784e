/**
 * The response cache's settings as `main.ts check` sees them: every key validated by the schema, and the
 * cross-checks (a Redis store without `redis:`, a cache on an embedding alias, a semantic cache naming an
 * alias that does not embed), each issue at the line of the value to fix; valid settings resolved.
 */
import assert from "node:assert/strict";
import { parseConfigText } from "./load.ts";

const BASE = `
providers:
  up: { type: openai, base_url: "http://127.0.0.1:1/v1" }
tokens:
  - { name: t, sha256: "${"a".repeat(64)}", models: ["*"] }
`;

function issuesOf(text: string, base = BASE): string[] {
  const result = parseConfigText(base + text, { source: "test.yaml", env: {} });
  return result.ok ? [] : result.issues.map((i) => `${i.path}: ${i.message}`);
}

Deno.test("cache config: valid settings resolve, with the top-level ttl as an alias's default", () => {
  const result = parseConfigText(
    BASE + `
cache: { store: memory, max_bytes: 64MiB, ttl: 2h, lock_wait: 5s, timeout: 100ms }
models:
  a: { type: chat, targets: [{ provider: up, model: m }], cache: { scope: shared, cache_n: true } }
  b:
    type: chat
    targets: [{ provider: up, model: m }]
    cache: { ttl: 10m, semantic: { embeddings: e, threshold: 0.9 } }
  e: { type: embedding, targets: [{ provider: up, model: emb }] }
  plain: { type: chat, targets: [{ provider: up, model: m }] }
`,
    { source: "test.yaml", env: {} },
  );
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  const config = result.config;
  assert.equal(config.cache.max_bytes, 64 * 1024 ** 2);
  assert.equal(config.cache.lock_wait, 5_000);
  const a = config.models.get("a")!.cache!;
  assert.equal(a.ttlMs, 7_200_000);
  assert.equal(a.scope, "shared");
  assert.equal(a.n, true);
  assert.equal(a.semantic, null);
  const b = config.models.get("b")!.cache!;
  assert.equal(b.ttlMs, 600_000);
  assert.deepEqual(b.semantic, { embeddings: "e", threshold: 0.9, maxEntries: 10_000, timeoutMs: 1_000 });
  assert.equal(config.models.get("plain")!.cache, null);
});

Deno.test("cache config: an alias's version changes with its targets, not with its cache settings", () => {
  const version = (targets: string, cache: string) => {
    const result = parseConfigText(
      BASE + `models:\n  a: { type: chat, targets: ${targets}, cache: ${cache} }\n`,
      { source: "test.yaml", env: {} },
    );
    assert.ok(result.ok);
    return result.config.models.get("a")!.cache!.version;
  };
  const one = "[{ provider: up, model: m }]";
  assert.equal(version(one, "{}"), version(one, "{ ttl: 5m, scope: shared }"));
  assert.notEqual(version(one, "{}"), version("[{ provider: up, model: other }]", "{}"));
});

Deno.test("cache config: the cross-checks name the value to fix", () => {
  assert.deepEqual(
    issuesOf(
      `cache: { store: redis }\nmodels:\n  a: { type: chat, targets: [{ provider: up, model: m }] }\n`,
    ),
    [
      "cache.store: the redis store needs a redis: section (the fleet's Redis); use store: memory on one node",
    ],
  );
  const issues = issuesOf(`
models:
  emb: { type: embedding, targets: [{ provider: up, model: e }], cache: {} }
  a: { type: chat, targets: [{ provider: up, model: m }], cache: { semantic: { embeddings: a } } }
  b: { type: chat, targets: [{ provider: up, model: m }], cache: { semantic: { embeddings: nowhere } } }
`);
  assert.deepEqual(issues, [
    "models.emb.cache: the response cache serves chat aliases; remove cache: from this embedding alias",
    'models.a.cache.semantic.embeddings: "a" is not an embedding alias (type: embedding)',
    'models.b.cache.semantic.embeddings: "nowhere" is not a model alias',
  ]);
});

Deno.test("cache config: the schema refuses unknown keys and bad values", () => {
  const issues = issuesOf(
    `
cache: { store: disk, ttl: 0, max_bytes: lots, extra: 1 }
models:
  a:
    type: chat
    targets: [{ provider: up, model: m }]
    cache: { scope: everyone, semantic: { embeddings: e, threshold: 1.5 } }
tokens:
  - { name: t, sha256: "${"b".repeat(64)}", models: ["*"], cache: true }
`,
    BASE.replace(/^tokens:[\s\S]*$/m, ""),
  );
  const paths = issues.map((i) => i.split(":")[0]);
  for (
    const path of [
      "cache.store",
      "cache.ttl",
      "cache.max_bytes",
      "cache.extra",
      "models.a.cache.scope",
      "models.a.cache.semantic.threshold",
    ]
  ) {
    assert.ok(paths.includes(path), `${path} in ${JSON.stringify(issues)}`);
  }
  assert.ok(issues.some((i) => i.startsWith("tokens.0.cache")), JSON.stringify(issues));
});
