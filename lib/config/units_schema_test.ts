/**
 * The bounds of durations (units_schema.ts): a timeout that has no "off" is refused at 0, and no duration runs
 * past about a century. Each of these used to pass `check` and then fail at run time: every upstream call a
 * 504 (`first_byte: 0`, `total: 0`), every stream cut after its first chunk (`idle: 0`), retention never run
 * ("Invalid time value"), every Redis cache write refused ("value is not an integer"), none naming the key.
 */
import assert from "node:assert/strict";
import { formatIssues, parseConfigText } from "./load.ts";
import type { ConfigIssue } from "./types.ts";

const PROVIDER =
  'providers: { up: { type: openai, base_url: "http://127.0.0.1:9/v1", api_key: k, PTIMEOUTS } }';
const MODELS = "models: { chat: { type: chat, targets: [{ provider: up, model: m, TTIMEOUTS }] } }";

function config(parts: { server?: string; provider?: string; target?: string; rest?: string }): string {
  return [
    `server: { ${parts.server ?? ""} }`,
    PROVIDER.replace(", PTIMEOUTS", parts.provider ? `, ${parts.provider}` : ""),
    MODELS.replace(", TTIMEOUTS", parts.target ? `, ${parts.target}` : ""),
    parts.rest ?? "",
    "",
  ].join("\n");
}

function issuesOf(text: string): readonly ConfigIssue[] {
  const result = parseConfigText(text, { source: "test.yaml", env: {} });
  return result.ok ? [] : result.issues;
}

function only(text: string): string {
  const issues = issuesOf(text);
  assert.equal(issues.length, 1, formatIssues("test.yaml", issues) || "no issue");
  return `${issues[0].path}: ${issues[0].message}`;
}

Deno.test("durations: an upstream timeout of 0 is refused at server, provider and target", () => {
  for (const key of ["first_byte", "total"]) {
    for (const zero of ["0", "0s", "0ms"]) {
      const timeouts = `timeouts: { ${key}: ${zero} }`;
      const expected = /: must be above 0 \(0 would time out every upstream call at once\)$/;
      assert.match(
        only(config({ server: timeouts })),
        new RegExp(`^server\\.timeouts\\.${key}${expected.source}`),
      );
      assert.match(only(config({ provider: timeouts })), new RegExp(`^providers\\.up\\.timeouts\\.${key}`));
      assert.match(
        only(config({ target: timeouts })),
        new RegExp(`^models\\.chat\\.targets\\.0\\.timeouts\\.${key}: must be above 0`),
      );
    }
  }
  assert.equal(
    only(config({ provider: "timeouts: { idle: 0 }" })),
    "providers.up.timeouts.idle: must be above 0 (0 would cut every stream after its first chunk)",
  );
  // The smallest real timeout is fine.
  assert.deepEqual(issuesOf(config({ server: "timeouts: { first_byte: 1ms, idle: 1, total: 1s }" })), []);
});

Deno.test("durations: a client connection's timeout of 0 is refused, none of them has an off", () => {
  for (const key of ["header_timeout", "body_timeout", "keep_alive_timeout", "send_timeout"]) {
    assert.equal(
      only(config({ server: `connections: { ${key}: 0 }` })),
      `server.connections.${key}: must be above 0 (a connection limit cannot be turned off)`,
    );
  }
  // Where 0 means something, it stays allowed: no grace after SIGTERM, no waiting between retries.
  assert.deepEqual(
    issuesOf(config({
      server: "shutdown_timeout: 0, connections: { websocket_max_duration_grace: 0 }",
      rest: "routing: { backoff_base: 0, backoff_max: 0 }\nusage: { sqlite: none, retention: 0 }",
    })),
    [],
  );
});

Deno.test("durations: a retention, TTL or max_age past 36500d is refused at its key, not failed at run time", () => {
  const cases: [string, string][] = [
    ["usage: { sqlite: none, retention: 200000000d }", "usage.retention"],
    ["responses: { retention: 36501d }", "responses.retention"],
    ["cache: { ttl: 200000000000d }", "cache.ttl"],
    [
      "tokens: [{ name: t, sha256: " + "a".repeat(64) + ", models: ['*'], cache: { max_age: 99999999d } }]",
      "tokens.0.cache.max_age",
    ],
  ];
  for (const [rest, path] of cases) {
    assert.equal(only(config({ rest })), `${path}: must be at most 36500d (about 100 years)`);
  }
  const alias = config({}).replace("model: m }] }", "model: m }], cache: { ttl: 200000000000d } }");
  assert.equal(only(alias), "models.chat.cache.ttl: must be at most 36500d (about 100 years)");
  // Absurdly many digits are one issue too (the number is Infinity), as is the bound in milliseconds.
  assert.match(
    only(config({ rest: `usage: { retention: ${"9".repeat(400)}d }` })),
    /^usage\.retention: must be/,
  );
  assert.equal(
    only(config({ rest: "usage: { retention: 3153600000001 }" })),
    "usage.retention: must be at most 36500d (about 100 years)",
  );
  // A century is the bound, and a timer's own bound still gives its own message alone.
  assert.deepEqual(issuesOf(config({ rest: "usage: { sqlite: none, retention: 36500d }" })), []);
  assert.equal(
    only(config({ server: "timeouts: { total: 200000000d }" })),
    "server.timeouts.total: must be at most 24d (the longest a timer waits)",
  );
});
