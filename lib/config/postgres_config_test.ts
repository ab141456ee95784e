import assert from "node:assert/strict";
import { isSecretPath } from "./interpolate.ts";
import { parseConfigText } from "./load.ts";

const BASE = `
providers: { local: { type: builtin } }
models: { chat: { type: chat, targets: [{ provider: local, model: echo }] } }
`;

const PASSWORD = "s3cr3t-Pg-pw-27Lm";

function parse(postgres: string, env: Record<string, string> = {}) {
  return parseConfigText(`${BASE}\n${postgres}\n`, { source: "t.yaml", env });
}

Deno.test("postgres config: the contract's keys, with their defaults and units", () => {
  const result = parse(`postgres: { url: "\${DATABASE_URL}", schema: gateway }`, {
    DATABASE_URL: "postgres://gw@127.0.0.1:5432/gw",
  });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  assert.deepEqual(result.config.postgres, {
    url: "postgres://gw@127.0.0.1:5432/gw",
    schema: "gateway",
    pool_size: 4,
    timeout: 5_000,
  });
  const full = parse(
    `postgres: { url: "postgresql://gw:pw@db.internal/gw?sslmode=require", pool_size: 10, timeout: 2s }`,
  );
  assert.ok(full.ok, JSON.stringify(!full.ok && full.issues));
  assert.equal(full.config.postgres?.schema, "gateway");
  assert.equal(full.config.postgres?.pool_size, 10);
  assert.equal(full.config.postgres?.timeout, 2_000);
  // absent: SQLite, as on one node
  const none = parse("");
  assert.ok(none.ok);
  assert.equal(none.config.postgres, null);
});

Deno.test("postgres config: check refuses bad values, naming the key and never the URL", () => {
  const cases: [string, string][] = [
    [`postgres: { url: "mysql://u:${PASSWORD}@host/db" }`, "postgres.url"],
    [`postgres: { url: "postgres://u:${PASSWORD}@" }`, "postgres.url"],
    [`postgres: { url: "postgres://h/db", schema: "Gateway" }`, "postgres.schema"],
    [`postgres: { url: "postgres://h/db", schema: "gw; DROP TABLE usage" }`, "postgres.schema"],
    [`postgres: { url: "postgres://h/db", schema: "" }`, "postgres.schema"],
    [`postgres: { url: "postgres://h/db", pool_size: 0 }`, "postgres.pool_size"],
    [`postgres: { url: "postgres://h/db", timeout: 0 }`, "postgres.timeout"],
    [`postgres: { url: "postgres://h/db", schemas: gw }`, "postgres.schemas"],
    [`postgres: { schema: gw }`, "postgres.url"],
  ];
  for (const [yaml, path] of cases) {
    const result = parse(yaml);
    assert.equal(result.ok, false, yaml);
    if (result.ok) continue;
    assert.ok(result.issues.some((i) => i.path === path), `${yaml}: ${JSON.stringify(result.issues)}`);
    assert.ok(!JSON.stringify(result.issues).includes(PASSWORD), `${yaml} leaks the password`);
  }
});

Deno.test("postgres config: the URL is a secret position and its password is scrubbed; hosts are not", () => {
  assert.equal(isSecretPath(["postgres", "url"]), true);
  assert.equal(isSecretPath(["postgres", "schema"]), false);
  const result = parse(`postgres: { url: "\${DATABASE_URL}" }`, {
    DATABASE_URL: `postgres://gateway:${encodeURIComponent(PASSWORD)}@10.1.2.3:5432/gw`,
  });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  const { scrubber } = result.config;
  assert.equal(
    scrubber.scrub(`password authentication failed: postgres://gateway:${PASSWORD}@10.1.2.3:5432/gw`),
    "password authentication failed: postgres://gateway:***@10.1.2.3:5432/gw",
  );
  assert.equal(scrubber.scrub("connect ECONNREFUSED 10.1.2.3:5432"), "connect ECONNREFUSED 10.1.2.3:5432");
});
