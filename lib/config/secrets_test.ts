import assert from "node:assert/strict";
import { parseConfigText } from "./load.ts";
import { configSecrets } from "./secrets.ts";
import { configSchema } from "./schema.ts";

const YAML = `
providers:
  oai:
    type: openai
    base_url: "https://\${PROXY_HOST}/v1"
    api_key: sk-file-key-0123456789
    headers: { X-Proxy-Auth: "Bearer \${PROXY_TOKEN}", X-Pass: "p:\${PROXY_PASS}", OpenAI-Organization: org-Abc123XyZ }
  aws: { type: bedrock, region: us-east-1 }
models:
  chat: { type: chat, targets: [{ provider: oai, model: m }] }
tokens:
  - { name: a, token: "\${CLIENT_TOKEN}", models: ["*"] }
  - { name: b, sha256: "${"ab".repeat(32)}", models: ["*"] }
admin_tokens:
  - { name: ops, token: admin-token-0123456789 }
`;

const ENV = {
  PROXY_HOST: "proxy.example.com",
  PROXY_PASS: "pw-98765X",
  PROXY_TOKEN: "pxy_Hn4Jq8Lm2Vb6Tc9Zr3Wk",
  CLIENT_TOKEN: "client-token-Q1w2E3r4T5",
  AWS_ACCESS_KEY_ID: "AKIAQ7EXAMPLEW3RT6YU",
  AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
  AWS_SESSION_TOKEN: "FwoGZXIvYXdzEJr//////////wEaDOpSession",
  UNUSED: "not-in-the-config-at-all",
};

Deno.test("config secrets: keys, header values, tokens, AWS fallbacks and ${VAR} secrets; not hashes or hosts", () => {
  const result = parseConfigText(YAML, { source: "t.yaml", env: ENV });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  const { scrubber } = result.config;
  for (
    const secret of [
      "sk-file-key-0123456789",
      "Bearer pxy_Hn4Jq8Lm2Vb6Tc9Zr3Wk",
      ENV.PROXY_TOKEN,
      "org-Abc123XyZ",
      ENV.CLIENT_TOKEN,
      "admin-token-0123456789",
      ENV.AWS_ACCESS_KEY_ID,
      ENV.AWS_SECRET_ACCESS_KEY,
      ENV.AWS_SESSION_TOKEN,
      ENV.PROXY_PASS,
    ]
  ) {
    assert.equal(scrubber.scrub(`«${secret}»`), "«***»", secret);
  }
  for (
    const plain of [
      "ab".repeat(32),
      "proxy.example.com",
      "us-east-1",
      ENV.UNUSED,
      "https://proxy.example.com/v1",
    ]
  ) {
    assert.equal(scrubber.scrub(`x ${plain} y`), `x ${plain} y`, plain);
  }
});

Deno.test("config secrets: AWS environment credentials only count when a Bedrock provider falls back to them", () => {
  const cfg = configSchema.parse({
    providers: {
      aws: {
        type: "bedrock",
        region: "us-east-1",
        access_key_id: "AKIACONFIG0123",
        secret_access_key: "cfg/secret/0123456789",
      },
    },
    models: { chat: { type: "chat", targets: [{ provider: "aws", model: "m" }] } },
  });
  const secrets = configSecrets(cfg, { env: ENV });
  assert.deepEqual(secrets.sort(), ["AKIACONFIG0123", "cfg/secret/0123456789"]);
});

// A Bedrock guardrail falls back to the environment's credentials as a Bedrock provider does
// (lib/aws/identity.ts): a service that quotes them back must find them masked, with no Bedrock provider at all.
Deno.test("config secrets: AWS environment credentials count when a Bedrock guardrail falls back to them", () => {
  const guardrail = {
    type: "bedrock",
    guardrail_identifier: "gid",
    guardrail_version: "1",
    region: "us-east-1",
  };
  const parse = (bed: Record<string, unknown>) =>
    configSchema.parse({
      providers: { local: { type: "builtin" } },
      guardrails: { bed },
      models: {
        chat: { type: "chat", targets: [{ provider: "local", model: "echo" }], guardrails: ["bed"] },
      },
    });
  assert.deepEqual(
    configSecrets(parse(guardrail), { env: ENV }).sort(),
    [ENV.AWS_ACCESS_KEY_ID, ENV.AWS_SECRET_ACCESS_KEY, ENV.AWS_SESSION_TOKEN].sort(),
  );
  // Its own key pair written in the config: the environment's is not its identity, so not a secret of it.
  const own = parse({
    ...guardrail,
    access_key_id: "AKIACONFIG0123",
    secret_access_key: "cfg/secret/0123456789",
  });
  assert.deepEqual(configSecrets(own, { env: ENV }).sort(), ["AKIACONFIG0123", "cfg/secret/0123456789"]);
});

Deno.test("config secrets: OTEL_EXPORTER_OTLP_HEADERS values are masked when telemetry sends them", () => {
  const yaml = (headers: string) => `
providers:
  local: { type: builtin }
models:
  chat: { type: chat, targets: [{ provider: local, model: echo }] }
telemetry:
  otlp: { endpoint: "http://127.0.0.1:4318"${headers} }
`;
  const env = {
    OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20otlp-Zk8qW3nR7vT2pL9x, x-team=obs-Qm4Hd7",
  };
  const fromEnv = parseConfigText(yaml(""), { source: "t.yaml", env });
  assert.ok(fromEnv.ok, JSON.stringify(!fromEnv.ok && fromEnv.issues));
  // Decoded, as telemetry sends them: the whole value and, as the scrubber masks runs, the key within it.
  for (const secret of ["Bearer otlp-Zk8qW3nR7vT2pL9x", "otlp-Zk8qW3nR7vT2pL9x", "obs-Qm4Hd7"]) {
    assert.equal(fromEnv.config.scrubber.scrub(`«${secret}»`), "«***»", secret);
  }
  // With headers in the file, the variable is not sent, so not a secret (the file's value is).
  const fromFile = parseConfigText(yaml(`, headers: { x-key: file-Hd83kLq0 }`), { source: "t.yaml", env });
  assert.ok(fromFile.ok, JSON.stringify(!fromFile.ok && fromFile.issues));
  assert.equal(fromFile.config.scrubber.scrub("«file-Hd83kLq0»"), "«***»");
  assert.equal(fromFile.config.scrubber.scrub("«obs-Qm4Hd7»"), "«obs-Qm4Hd7»");
});

Deno.test("config secrets: a ${VAR} value used only outside secret fields is never a secret", () => {
  const yaml = `
providers:
  local:
    type: openai
    base_url: http://\${UPSTREAM_HOST}:8000/v1
    api_key: \${LOCAL_KEY}
models:
  chat: { type: chat, targets: [{ provider: local, model: "\${UPSTREAM_HOST}-model" }] }
`;
  const result = parseConfigText(yaml, {
    source: "t.yaml",
    env: { UPSTREAM_HOST: "upstream", LOCAL_KEY: "fake-upstream-key" },
  });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  const { scrubber } = result.config;
  assert.equal(scrubber.scrub("The upstream stream ended."), "The upstream stream ended.");
  assert.equal(scrubber.scrub("key fake-upstream-key refused"), "key *** refused");
});

Deno.test("config secrets: a ${VAR} value substituted into part of a secret field is masked on its own", () => {
  // "swordfishes" alone is neither a run nor two words of "swordfishes-suffix": only its substitution makes it one.
  const yaml = `
providers:
  p:
    type: openai
    base_url: "http://\${HOST_WORD}:8000/v1"
    api_key: "\${KEY_PART}-suffix"
    headers: { X-Proxy-Auth: "Bearer \${PROXY_WORD}" }
  q:
    type: openai
    base_url: "http://\${BOTH_WORD}:8000/v1"
    api_key: "key-\${BOTH_WORD}"
models:
  chat: { type: chat, targets: [{ provider: p, model: m }] }
`;
  const env = {
    HOST_WORD: "hostname",
    KEY_PART: "swordfishes",
    PROXY_WORD: "passwordish",
    BOTH_WORD: "sharedword",
  };
  const result = parseConfigText(yaml, { source: "t.yaml", env });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  const { scrubber } = result.config;
  for (const secret of ["swordfishes-suffix", env.KEY_PART, env.PROXY_WORD, env.BOTH_WORD]) {
    assert.equal(scrubber.scrub(`x ${secret} y`), "x *** y", secret);
  }
  assert.equal(scrubber.scrub(`x ${env.HOST_WORD} y`), `x ${env.HOST_WORD} y`);
});

Deno.test("config secrets: of a redis or postgres URL, only ${VAR} values inside the password count", () => {
  const yaml = `
providers: { local: { type: builtin } }
models: { chat: { type: chat, targets: [{ provider: local, model: echo }] } }
redis: { url: "redis://:\${REDIS_PW}@\${REDIS_HOST}:6379" }
postgres: { url: "postgres://gateway:pw-\${PG_WORD}@\${PG_HOST}:5432/usage" }
`;
  const env = {
    REDIS_PW: "cachebox-pw-Zq81Lm",
    REDIS_HOST: "cachebox",
    PG_WORD: "swordfishes",
    PG_HOST: "databases",
  };
  const result = parseConfigText(yaml, { source: "t.yaml", env });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  const { scrubber } = result.config;
  for (const secret of [env.REDIS_PW, env.PG_WORD, `pw-${env.PG_WORD}`]) {
    assert.equal(scrubber.scrub(`x ${secret} y`), "x *** y", secret);
  }
  for (const plain of [env.REDIS_HOST, env.PG_HOST, "gateway"]) {
    assert.equal(scrubber.scrub(`x ${plain} y`), `x ${plain} y`, plain);
  }
});

Deno.test("config secrets: a ${VAR} value in an anchored string counts where an alias makes it a secret", () => {
  // Interpolated where the anchor is (a model name), a secret where the alias is (an api_key).
  const yaml = `
models:
  chat: { type: chat, targets: [{ provider: p, model: &part "\${KEY_PART}-suffix" }] }
providers:
  p: { type: openai, base_url: "http://h:8000/v1", api_key: *part }
`;
  const result = parseConfigText(yaml, { source: "t.yaml", env: { KEY_PART: "swordfishes" } });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  assert.equal(result.config.scrubber.scrub("x swordfishes y"), "x *** y");
});

Deno.test("config secrets: an alert webhook's secret, header values and URL path are masked, its host is not", () => {
  const yaml = `
providers: { local: { type: builtin } }
models: { chat: { type: chat, targets: [{ provider: local, model: echo }] } }
alerts:
  - url: "http://127.0.0.1:41234/services/T0AB12/B0CD34/Xy9zQw8Lm"
    secret: "whsec-Hd83kLq0"
    headers: { x-api-key: "hk-Pq71Zm04" }
    budget_thresholds: [80]
`;
  const result = parseConfigText(yaml, { source: "t.yaml", env: {} });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  const { scrubber } = result.config;
  for (const secret of ["whsec-Hd83kLq0", "hk-Pq71Zm04", "/services/T0AB12/B0CD34/Xy9zQw8Lm"]) {
    assert.ok(!scrubber.scrub(`x ${secret} y`).includes(secret), secret);
  }
  // The listen address of a gateway on the same host stays readable in its logs.
  assert.equal(scrubber.scrub("listening on http://127.0.0.1:8080"), "listening on http://127.0.0.1:8080");
});
