/**
 * A credential the gateway sends in a header is held to what HTTP can send (header_map.ts): a key with a
 * pasted em dash, or a `${VAR}` with a line break inside, used to pass `check` and then make every request a
 * 502 "could not be reached" with nothing sent upstream. The issue names the key's path, never its value.
 */
import assert from "node:assert/strict";
import { formatIssues, parseConfigText } from "./load.ts";
import { setUpState } from "../reload.ts";

const SECRET = "sk-pasted\u2014key-0123456789";

function providerWith(entry: string): string {
  return [
    "providers:",
    `  up: ${entry}`,
    "models:",
    "  chat: { type: chat, targets: [{ provider: up, model: m }] }",
    "",
  ].join("\n");
}

function check(text: string, env: Record<string, string> = {}): string | null {
  const result = parseConfigText(text, { source: "test.yaml", env });
  return result.ok ? null : formatIssues("test.yaml", result.issues);
}

const ENTRIES: [string, string][] = [
  ["openai", '{ type: openai, base_url: "http://127.0.0.1:9/v1", api_key: "${KEY}" }'],
  ["anthropic", '{ type: anthropic, api_key: "${KEY}" }'],
  ["gemini", '{ type: gemini, api_key: "${KEY}" }'],
  ["azure", '{ type: azure, base_url: "https://r.openai.azure.com/openai/v1", api_key: "${KEY}" }'],
];

Deno.test("header credential: an api_key HTTP cannot send is refused at its path, for every provider type", () => {
  for (const [type, entry] of ENTRIES) {
    for (const key of [SECRET, "sk-abc\ndef-0123456789", "sk-abc\r\ndef", "sk-\u0000nul"]) {
      const printed = check(providerWith(entry), { KEY: key });
      assert.ok(printed !== null, `${type}: ${JSON.stringify(key)} passed`);
      assert.match(
        printed,
        /^test\.yaml:2: providers\.up\.api_key: must be Latin-1 text without line breaks or NUL characters: it is sent in an HTTP header/,
      );
      assert.equal(printed.split("\n").length, 1, printed);
      assert.ok(!printed.includes("sk-") && !printed.includes("0123456789"), printed);
    }
    // HTTP drops line breaks and spaces at a value's end: a key read from a file ending in a newline works.
    assert.equal(check(providerWith(entry), { KEY: "sk-from-a-file-0123456789\n" }), null, type);
    // Latin-1 is what HTTP sends: a key with é is odd but sendable.
    assert.equal(check(providerWith(entry), { KEY: "sk-caf\u00e9-0123456789" }), null, type);
  }
});

Deno.test("header credential: Bedrock's access key id and session token are held to it; the secret key is not sent", () => {
  const bedrock = (fields: string) => providerWith(`{ type: bedrock, region: us-east-1, ${fields} }`);
  const pair = 'secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"';
  let printed = check(bedrock(`access_key_id: "\${ID}", ${pair}`), { ID: "AKIAIOSFODNN7EXAMPLE\n" });
  // SigV4 writes the id inside Authorization, so even a line break at its end breaks every call.
  assert.match(printed ?? "", /providers\.up\.access_key_id: must have no spaces or line breaks/);
  printed = check(bedrock(`access_key_id: AKIAIOSFODNN7EXAMPLE, ${pair}, session_token: "\${TOK}"`), {
    TOK: "FwoGZXIvYXdzE\u2014token",
  });
  assert.match(printed ?? "", /providers\.up\.session_token: must be Latin-1 text/);
  assert.ok(!(printed ?? "").includes("FwoGZXIvYXdzE"), printed ?? "");
  assert.equal(check(bedrock(`access_key_id: AKIAIOSFODNN7EXAMPLE, ${pair}`)), null);
});

Deno.test("header credential: a guardrail service's api_key and AWS credentials are held to it too", () => {
  const withGuardrail = (entry: string) =>
    `${providerWith("{ type: builtin }").replace("model: m", "model: echo")}guardrails:\n  g: ${entry}\n`;
  const cases: [string, string][] = [
    ["openai_moderation", '{ type: openai_moderation, api_key: "${KEY}" }'],
    [
      "azure_content_safety",
      '{ type: azure_content_safety, endpoint: "https://r.cognitiveservices.azure.com", api_key: "${KEY}" }',
    ],
  ];
  for (const [type, entry] of cases) {
    const printed = check(withGuardrail(entry), { KEY: SECRET });
    assert.match(printed ?? "", /guardrails\.g\.api_key: must be Latin-1 text/, type);
    assert.equal(check(withGuardrail(entry), { KEY: "sk-fine-0123456789" }), null, type);
  }
  const aws = withGuardrail(
    '{ type: bedrock, guardrail_identifier: abc123, guardrail_version: "1", region: us-east-1, ' +
      'access_key_id: "AKIA EXAMPLE", secret_access_key: "s" }',
  );
  assert.match(check(aws) ?? "", /guardrails\.g\.access_key_id: must have no spaces or line breaks/);
});

/** What `check` prints for `text` once its providers and guardrails are set up under `env`, or null. */
function checkSetUp(text: string, env: Record<string, string>): string | null {
  const result = parseConfigText(text, { source: "test.yaml", env });
  if (!result.ok) return formatIssues("test.yaml", result.issues);
  const setUp = setUpState(result.config, env);
  return setUp.ok ? null : formatIssues("test.yaml", setUp.issues);
}

Deno.test("header credential: AWS_* variables a Bedrock provider or guardrail falls back to are held to the same rules, named, never printed", () => {
  // They were taken as they were: an AWS_ACCESS_KEY_ID ending in a line break (a `$(cat file)`), or a session
  // token with a pasted em dash, passed check and made every call a 502 with nothing sent; an AWS_REGION with a
  // `/` or `@` went into the host name of every call.
  const provider = providerWith("{ type: bedrock }");
  const guardrail = `${providerWith("{ type: builtin }").replace("model: m", "model: echo")}guardrails:\n` +
    '  g: { type: bedrock, guardrail_identifier: abc123, guardrail_version: "1" }\n';
  const good = {
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "AKIAIOSFODNN7EXAMPLE",
    AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  };
  for (const [text, at] of [[provider, "providers.up"], [guardrail, "guardrails.g"]]) {
    assert.equal(checkSetUp(text, good), null, at);
    // A region's first part may be longer than two letters: the European Sovereign Cloud's.
    assert.equal(checkSetUp(text, { ...good, AWS_REGION: "eusc-de-east-1" }), null, at);
    assert.equal(checkSetUp(text, { ...good, AWS_SESSION_TOKEN: "FwoGZXIvYXdzEtoken\n" }), null, at);
    const bad: [Record<string, string>, RegExp][] = [
      [
        { AWS_ACCESS_KEY_ID: "AKIAIOSFODNN7EXAMPLE\n" },
        /AWS_ACCESS_KEY_ID must have no spaces or line breaks/,
      ],
      [{ AWS_SESSION_TOKEN: "FwoGZXIvYXdzE\u2014token" }, /AWS_SESSION_TOKEN must be Latin-1 text/],
      [{ AWS_REGION: "us-east-1.evil.example/x" }, /AWS_REGION must be an AWS region such as us-east-1/],
      [{ AWS_REGION: "", AWS_DEFAULT_REGION: "EU WEST" }, /AWS_DEFAULT_REGION must be an AWS region/],
    ];
    for (const [vars, message] of bad) {
      const printed = checkSetUp(text, { ...good, ...vars });
      assert.ok(printed !== null, `${at}: ${JSON.stringify(vars)} passed`);
      assert.match(printed, new RegExp(`^test\\.yaml(:\\d+)?: ${at.replace(".", "\\.")}: `), printed);
      assert.match(printed, message);
      for (const value of Object.values(vars)) {
        if (value.length > 4) assert.ok(!printed.includes(value.trim()), printed);
      }
    }
  }
});
