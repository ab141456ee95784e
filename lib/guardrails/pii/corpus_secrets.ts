/**
 * Test corpus of the credential recognizers. Every key is generated from a seeded random source in its issuer's
 * documented shape (most carry `TEST`, `FAKE` or `EXAMPLE` as well); none is or was a live credential.
 *
 * @module
 */

import {
  b64url,
  BASE32_UPPER,
  BASE62,
  BASE64,
  BASE64URL,
  type Case,
  type Corpus,
  embed,
  embedAll,
  random,
  randomString,
} from "./corpus_gen.ts";

const rng = random(0x5eed_0002);
const r = (alphabet: string, n: number) => randomString(rng, alphabet, n);
const times = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));

const openai = times(42, (i) => {
  const prefix = ["sk-", "sk-proj-", "sk-svcacct-", "sk-admin-"][i % 4];
  const body = i % 4 === 0
    ? r(BASE62, 20) + "T3BlbkFJ" + r(BASE62, 20)
    : r(BASE64URL, 60 + i * 2) + "T3BlbkFJ";
  return prefix + body;
});
const anthropic = times(
  42,
  (i) =>
    (i % 5 === 4 ? "sk-ant-admin01-" : "sk-ant-api03-") + r(BASE64URL, 80) + "Test" + r(BASE62, 9) + "AA",
);
const google = times(42, () => "AIzaSy" + r(BASE64URL, 29) + "T3st");
const awsIds = [
  "AKIAIOSFODNN7EXAMPLE",
  ...times(41, (i) => ["AKIA", "ASIA", "ABIA", "ACCA"][i % 4] + "FAKE" + r(BASE32_UPPER, 12)),
];
/** 40 base64 characters with a `/` or `+` in them (most random ones have one). */
const awsSecretsSlashed = times(30, (i) => {
  const s = r(BASE64, 38);
  return s.slice(0, 10 + i) + (i % 2 ? "/" : "+") + "x" + s.slice(10 + i);
});
const awsSecretsPlain = times(12, () => "Tst" + r(BASE62, 37));
const github = times(
  42,
  (i) =>
    i % 6 === 5
      ? "github_pat_11" + r(BASE62, 20) + "_" + r(BASE62, 55) + "Te5t"
      : ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"][i % 5] + r(BASE62, 32) + "T3st",
);
const slack = times(42, (i) => {
  const kind = "abposr"[i % 6];
  const ids = `${rng.int(1e11, 9e11)}-${rng.int(1e12, 9e12)}`;
  return `xox${kind}-${ids}-` + (i % 2 ? r(BASE62, 24) : r("0123456789abcdef", 32));
});

function makeJwt(i: number): string {
  const algs = ["HS256", "RS256", "ES256", "HS512", "PS384", "EdDSA"];
  const alg = i === 41 ? "none" : algs[i % algs.length];
  const header = i % 3 === 0 ? { alg, typ: "JWT" } : { typ: "JWT", alg, kid: `key-${i}` };
  const payload = { sub: `user-${1000 + i}`, name: "Test User", iat: 1_700_000_000 + i, admin: i % 2 === 0 };
  const sigLength = alg === "none" ? 0 : alg.startsWith("HS") ? 43 : 86;
  return `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}.${r(BASE64URL, sigLength)}`;
}
const jwts = times(42, makeJwt);

function pem(label: string, lines: number, withEnd: boolean, headers = ""): string {
  const body = times(lines, () => r(BASE64, 64)).join("\n") + "\n" + r(BASE64, 40) + "==";
  const end = withEnd ? `\n-----END ${label}-----` : "";
  return `-----BEGIN ${label}-----\n${headers}${body}${end}`;
}
const labels = [
  "PRIVATE KEY",
  "RSA PRIVATE KEY",
  "EC PRIVATE KEY",
  "OPENSSH PRIVATE KEY",
  "ENCRYPTED PRIVATE KEY",
];
const keys = times(42, (i) => {
  if (i % 7 === 6) return pem("PGP PRIVATE KEY BLOCK", 3, true, "Version: Test 1.0\n\n");
  const headers = i % 5 === 1 ? "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,ABCDEF0123456789\n\n" : "";
  return pem(labels[i % labels.length], 1 + (i % 4), i % 4 !== 3, headers);
});
/** Cases of PEM keys: a key without its END line runs to the end of the text, so it is put last. */
const keyCases: Case[] = keys.map((k, i) =>
  k.includes("-----END") ? embed(k, i) : { text: `Here is my key, it got cut:\n${k}`, value: k }
);

/** Values no credential recognizer should report, whatever its type. */
const GENERIC = [
  "uuid 550e8400-e29b-41d4-a716-446655440000",
  "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
  "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
  "blob SGVsbG8gV29ybGQhIFRoaXMgaXMgYSB0ZXN0IG9mIGJhc2U2NCBlbmNvZGluZw==",
  "password: hunter2",
  "Authorization: Bearer <token>",
  "OPENAI_API_KEY=${OPENAI_API_KEY}",
  "process.env.AWS_SECRET_ACCESS_KEY",
  "key: sk-...",
  "token: ghp_...",
  "api_key = 'your-api-key-here'",
  "secret: changeme",
  "https://example.com/a/b/c",
  "semver 1.22.333",
  "john.doe@example.com",
  "+1 415 555 2671",
  "4111 1111 1111 1111",
  "10.0.0.1",
  "path src/components/forms/InputFieldHelpers",
  "camelCaseIdentifierNameForTheTestSuite42",
  "SCREAMING_SNAKE_CASE_CONSTANT_NAME_123",
  "kebab-case-identifier-name-for-the-test-suite",
  "lorem ipsum dolor sit amet consectetur adipiscing elit",
  "-----BEGIN PUBLIC KEY-----",
  "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUTestTestTestTestTestTestTestTestTestTestTest\n-----END CERTIFICATE-----",
  "eyJhbGciOiJIUzI1NiJ9",
  "base64url dGVzdC10b2tlbi1mb3ItdGhlLWNvcnB1cy1vbmx5LW5vdC1yZWFs",
  "ids 12345678-1234-1234-1234-123456789012",
  "hex 0x4d2f8a1b9c3e7f60d5a4b3c2e1f0a9b8c7d6e5f4",
];

/** A few samples of each type, as look-alikes of the others. */
const SAMPLES: Readonly<Record<string, readonly string[]>> = {
  OPENAI_API_KEY: openai.slice(0, 3),
  ANTHROPIC_API_KEY: anthropic.slice(0, 3),
  GOOGLE_API_KEY: google.slice(0, 3),
  AWS_ACCESS_KEY_ID: awsIds.slice(1, 4),
  AWS_SECRET_ACCESS_KEY: awsSecretsSlashed.slice(0, 3),
  GITHUB_TOKEN: [github[0], github[5], github[11]],
  SLACK_TOKEN: slack.slice(0, 3),
  JWT: jwts.slice(0, 3),
  PRIVATE_KEY: keys.slice(0, 2),
};

const SPECIFIC: Readonly<Record<string, readonly string[]>> = {
  OPENAI_API_KEY: [
    "sk-this-is-not-a-real-key-at-all",
    "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "sk-proj-abc123",
    "sk-...",
    `task-${r(BASE62, 40)}`,
    `risk-${r(BASE62, 30)}`,
    `sk-${r(BASE62, 19)}`,
    `sk-proj-${r(BASE62, 19)}`,
    `sk_live_${r(BASE62, 24)}`,
    "scikit sk-learn",
    `disk-${r(BASE62, 30)}`,
    "sk-ALLUPPERCASE1234567890ABCDEFGH",
    "sk-alllowercase1234567890abcdefgh",
    "sk-NoDigitsHereAtAllJustLettersMixed",
    `pk-proj-${r(BASE62, 40)}`,
    `ask-${r(BASE62, 30)}`,
    "sk-proj-THIS-IS-A-PLACEHOLDER-VALUE",
    `sk-ant-api03-${r(BASE62, 60)}`,
    "sk-or-v1-aaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "mask-layer-config-value-long",
  ],
  ANTHROPIC_API_KEY: [
    "sk-ant-api03-short",
    "sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    `sk-ant-api-${r(BASE62, 60)}`,
    "sk-ant-...",
    `task-ant-api03-${r(BASE62, 60)}`,
    "sk-ant-api03-alllowercaseletters-only-here",
    `sk-ant-API03-${r(BASE62, 60)}`,
    "sk-anthropic-key",
    `sk-ant-api03-${r(BASE62, 19)}`,
    "sk-ant-api03-NO-DIGITS-IN-THIS-PLACEHOLDER-Value",
    "ANTHROPIC_API_KEY=sk-ant-xxxx",
    `sk_ant_api03_${r(BASE62, 60)}`,
    "sk-ant-api03-<your-key>",
  ],
  GOOGLE_API_KEY: [
    `AIza${r(BASE62, 34)}`,
    `AIza${r(BASE62, 36)}`,
    `AIZA${r(BASE62, 35)}`,
    `aiza${r(BASE62, 35)}`,
    `xAIza${r(BASE62, 35)}`,
    "AIzaallowercaseletterswithoutanydigitss",
    `AIza${r(BASE62, 20)}.${r(BASE62, 14)}`,
    "AIzaSy...",
    "AIza_YOUR_API_KEY_HERE",
    `AIza${r(BASE62, 35)}_x`,
    "AIzaSyNODIGITSANDNOLOWERCASELETTERSXYZ",
  ],
  AWS_ACCESS_KEY_ID: [
    "AKIA0123456789ABCDEF",
    "AKIA1OSFODNN8EXAMPL9",
    "akiaiosfodnn7example",
    `AKIA${r(BASE32_UPPER, 15)}`,
    `AKIA${r(BASE32_UPPER, 17)}`,
    `AKIB${r(BASE32_UPPER, 16)}`,
    `xAKIA${r(BASE32_UPPER, 16)}`,
    `AKIA${r(BASE32_UPPER, 16)}_x`,
    "AKIAXXXXXXXXXXXXXXX",
    "AKIA...",
    `ASIA${r(BASE32_UPPER, 10)}`,
    `AIDA${r(BASE32_UPPER, 16)}`,
    `AROA${r(BASE32_UPPER, 16)}`,
  ],
  AWS_SECRET_ACCESS_KEY: [
    `plain ${r(BASE62, 40)}`,
    `glued_${r(BASE64, 38)}/x`,
    `padded ${r(BASE64, 38)}/x=`,
    `long ${r(BASE64, 41)}/`,
    `short ${r(BASE64, 37)}/x`,
    "path src/components/forms/inputFieldHelper",
    "path a/b/c/d/e/f/g/h/iAAAAAAAAAAAAAAAA1234",
    "lower abcdefghij/klmnopqrst/uvwxyz012345678",
    "digits 0123456789/0123456789/0123456789012",
    `dash-${r(BASE64, 38)}/x`,
    `${r(BASE64, 38)}/x-suffix`,
    `\n${r(BASE64, 64)}\n${r(BASE64, 38)}/x`,
  ],
  GITHUB_TOKEN: [
    `ghp_${r(BASE62, 20)}`,
    `ghx_${r(BASE62, 36)}`,
    `xghp_${r(BASE62, 36)}`,
    "ghp_abcdefghijklmnopqrstuvwxyzabcdefghij",
    `ghp_${r(BASE62, 35)}`,
    `gh_${r(BASE62, 36)}`,
    "github_pat_short",
    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    `ghp_${r(BASE62, 36)}_x`,
    "GITHUB_TOKEN=ghp_...",
    "github_pat_<your-token>",
    `github_pat_${r(BASE62, 30)}`,
  ],
  SLACK_TOKEN: [
    "xoxb-your-bot-token-here",
    `xoxc-${r(BASE62, 30)}1`,
    "xoxb-123",
    `xoxb-${r("abcdefghij", 30)}`,
    `axoxb-123456789012-${r(BASE62, 24)}`,
    `xapp-1-A0123-${r(BASE62, 24)}`,
    `xoxb_123456789012_${r(BASE62, 24)}`,
    "xoxp-...",
    "SLACK_TOKEN=xoxb-xxxx",
    `xoxb-${r(BASE62, 9)}1`,
    "xox-123456789012-abcdefghijkl",
  ],
  JWT: [
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0",
    `eyJ${r(BASE64URL, 30)}.${r(BASE64URL, 30)}.${r(BASE64URL, 43)}`,
    `${b64url('{"typ":"JWT"}')}.${b64url('{"sub":"1"}')}.${r(BASE64URL, 43)}`,
    `${b64url('{"alg":"HS256"}')}.${b64url("[1,2,3]")}.${r(BASE64URL, 43)}`,
    `${b64url('{"alg":"HS256"}')}.${b64url('{"sub":"1"}')}.${r(BASE64URL, 43)}.${r(BASE64URL, 20)}.${
      r(BASE64URL, 22)
    }`,
    `${b64url('{"alg":"HS256"}')}.${b64url('{"sub":"1"}')}.`,
    `${b64url('{"alg":"none"}')}.${b64url('{"a":1}')}.abc`,
    `x${b64url('{"alg":"HS256"}')}.${b64url('{"sub":"1"}')}.${r(BASE64URL, 43)}`,
    "abc.def.ghi",
    "www.example.com",
    `${b64url('{"alg":42}')}.${b64url('{"sub":"1"}')}.${r(BASE64URL, 43)}`,
    '{"alg":"HS256","typ":"JWT"}',
    `eyJhbGciOiJIUzI1NiJ9.${b64url("not json")}.${r(BASE64URL, 43)}`,
    "eyJ.eyJ.eyJ",
  ],
  PRIVATE_KEY: [
    "the file starts with -----BEGIN PRIVATE KEY----- and ends with the END line",
    "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIB...\n",
    `-----BEGIN PUBLIC KEY-----\n${r(BASE64, 64)}\n${r(BASE64, 64)}\n-----END PUBLIC KEY-----`,
    `-----BEGIN CERTIFICATE-----\n${r(BASE64, 64)}\n${r(BASE64, 64)}\n-----END CERTIFICATE-----`,
    `-----begin private key-----\n${r(BASE64, 64)}\n${r(BASE64, 64)}\n-----end private key-----`,
    `BEGIN RSA PRIVATE KEY\n${r(BASE64, 64)}\n${r(BASE64, 64)}`,
    "-----BEGIN PRIVATE KEY-----\n<your key here>",
    `-----BEGIN OPENSSH PUBLIC KEY-----\n${r(BASE64, 64)}\n${r(BASE64, 64)}`,
    "ssh-rsa AAAAB3NzaC1yc2E test@host",
  ],
};

/** The corpus of each credential type: its samples, and generic, specific and other types' look-alikes. */
function corpus(type: string, matches: readonly Case[]): Corpus {
  const others = Object.entries(SAMPLES).filter(([t]) => t !== type).flatMap(([, v]) => v);
  return { matches, lookalikes: embedAll([...GENERIC, ...SPECIFIC[type], ...others]) };
}

const awsSecretCases: Case[] = [
  ...awsSecretsSlashed.map(embed),
  ...awsSecretsPlain.map((s, i) => {
    const text = [
      `aws_secret_access_key = ${s}`,
      `export AWS_SECRET_ACCESS_KEY=${s}`,
      `"SecretAccessKey": "${s}"`,
      `aws_access_key_id=${awsIds[i]}\naws_secret_access_key=${s}`,
      `${awsIds[i]} ${s}`,
      `key ${awsIds[i]}, secret ${s}`,
    ][i % 6];
    return { text, value: s };
  }),
];

export const SECRET_CORPORA: Readonly<Record<string, Corpus>> = {
  OPENAI_API_KEY: corpus("OPENAI_API_KEY", openai.map(embed)),
  ANTHROPIC_API_KEY: corpus("ANTHROPIC_API_KEY", anthropic.map(embed)),
  GOOGLE_API_KEY: corpus("GOOGLE_API_KEY", google.map(embed)),
  AWS_ACCESS_KEY_ID: corpus("AWS_ACCESS_KEY_ID", awsIds.map(embed)),
  AWS_SECRET_ACCESS_KEY: corpus("AWS_SECRET_ACCESS_KEY", awsSecretCases),
  GITHUB_TOKEN: corpus("GITHUB_TOKEN", github.map(embed)),
  SLACK_TOKEN: corpus("SLACK_TOKEN", slack.map(embed)),
  JWT: corpus("JWT", jwts.map(embed)),
  PRIVATE_KEY: corpus("PRIVATE_KEY", keyCases),
};
