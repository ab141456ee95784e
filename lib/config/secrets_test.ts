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
