import assert from "node:assert/strict";
import { isSecretPath } from "./interpolate.ts";
import { parseConfigText } from "./load.ts";

const BASE = `
providers: { local: { type: builtin } }
models: { chat: { type: chat, targets: [{ provider: local, model: echo }] } }
`;

const PASSWORD = "s3cr3t-Redis-pw-81xQ";

function parse(redis: string, env: Record<string, string> = {}) {
  return parseConfigText(`${BASE}\n${redis}\n`, { source: "t.yaml", env });
}

Deno.test("redis config: the contract's keys, with their defaults and units", () => {
  const result = parse(`redis: { url: "\${REDIS_URL}" }`, { REDIS_URL: "redis://127.0.0.1:6379" });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  assert.deepEqual(result.config.redis, {
    url: "redis://127.0.0.1:6379",
    key_prefix: "gw:",
    timeout: 50,
    on_failure: "fail_closed",
    expected_replicas: 1,
  });
  const full = parse(
    `redis: { url: "rediss://user:pw@cache.internal:6380/2", key_prefix: "fleet-a:", timeout: 1s, ` +
      `on_failure: fail_open, expected_replicas: 3 }`,
  );
  assert.ok(full.ok, JSON.stringify(!full.ok && full.issues));
  assert.equal(full.config.redis?.timeout, 1000);
  assert.equal(full.config.redis?.on_failure, "fail_open");
  assert.equal(full.config.redis?.expected_replicas, 3);
  // absent: counters in memory, as on one node
  const none = parse("");
  assert.ok(none.ok);
  assert.equal(none.config.redis, null);
});

Deno.test("redis config: check refuses bad values, naming the key and never the URL", () => {
  const cases: [string, string][] = [
    [`redis: { url: "http://:${PASSWORD}@host:6379" }`, "redis.url"],
    [`redis: { url: "redis://:${PASSWORD}@host:6379/db?x=1" }`, "redis.url"],
    [`redis: { url: "redis://:${PASSWORD}@" }`, "redis.url"],
    [`redis: { url: "redis://h:1", on_failure: fail_sometimes }`, "redis.on_failure"],
    [`redis: { url: "redis://h:1", timeout: 0 }`, "redis.timeout"],
    [`redis: { url: "redis://h:1", timeout: soon }`, "redis.timeout"],
    [`redis: { url: "redis://h:1", expected_replicas: 0 }`, "redis.expected_replicas"],
    [`redis: { url: "redis://h:1", key_prefix: "{gw}" }`, "redis.key_prefix"],
    [`redis: { url: "redis://h:1", keyprefix: "gw:" }`, "redis.keyprefix"],
    [`redis: { key_prefix: "gw:" }`, "redis.url"],
  ];
  for (const [yaml, path] of cases) {
    const result = parse(yaml);
    assert.equal(result.ok, false, yaml);
    if (result.ok) continue;
    assert.ok(result.issues.some((i) => i.path === path), `${yaml}: ${JSON.stringify(result.issues)}`);
    assert.ok(!JSON.stringify(result.issues).includes(PASSWORD), `${yaml} leaks the password`);
  }
});

Deno.test("redis config: the URL is a secret position and its password is scrubbed; hosts are not", () => {
  assert.equal(isSecretPath(["redis", "url"]), true);
  assert.equal(isSecretPath(["providers", "p", "url"]), false);
  assert.equal(isSecretPath(["redis", "key_prefix"]), false);
  const result = parse(`redis: { url: "\${REDIS_URL}" }`, {
    REDIS_URL: `redis://gateway:${encodeURIComponent(PASSWORD)}@10.1.2.3:6379/0`,
  });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  const { scrubber } = result.config;
  assert.equal(scrubber.scrub(`ERR invalid password ${PASSWORD}`), "ERR invalid password ***");
  assert.equal(
    scrubber.scrub(`connect redis://gateway:${PASSWORD}@10.1.2.3:6379/0`),
    "connect redis://gateway:***@10.1.2.3:6379/0",
  );
  assert.equal(scrubber.scrub("listening on http://127.0.0.1:6379"), "listening on http://127.0.0.1:6379");
});
