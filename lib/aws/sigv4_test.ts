/**
 * SigV4 against AWS's published signature test suite (aws-sig-v4-test-suite: credentials AKIDEXAMPLE, region
 * us-east-1, service "service", 20150830T123600Z). Each vector's canonical request, string to sign and
 * Authorization header are copied from the suite; the requests start from the suite's unencoded paths.
 */
import assert from "node:assert/strict";
import {
  type AwsCredentials,
  canonicalUri,
  computeSignature,
  sha256Hex,
  signatureFromParts,
  signRequest,
} from "./sigv4.ts";

const CREDENTIALS: AwsCredentials = {
  accessKeyId: "AKIDEXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
};
const DATE = "20150830T123600Z";
const SCOPE = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request";
const EMPTY_HASH = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const TOKEN =
  "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfI" +
  "eoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDv" +
  "p75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9F" +
  "X9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";

interface Vector {
  name: string;
  method: string;
  path: string;
  query?: string;
  headers: [string, string][];
  body?: string;
  creq: string;
  sts: string;
  authz: string;
}

const host: [string, string] = ["Host", "example.amazonaws.com"];
const date: [string, string] = ["X-Amz-Date", DATE];
const sig = (signedHeaders: string, signature: string) =>
  `AWS4-HMAC-SHA256 Credential=${SCOPE}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
const sts = (hash: string) => `AWS4-HMAC-SHA256\n${DATE}\n20150830/us-east-1/service/aws4_request\n${hash}`;

const VECTORS: Vector[] = [
  {
    name: "get-vanilla",
    method: "GET",
    path: "/",
    headers: [host, date],
    creq: `GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY_HASH}`,
    sts: sts("bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"),
    authz: sig("host;x-amz-date", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
  },
  {
    name: "get-vanilla-query-order-key-case",
    method: "GET",
    path: "/",
    query: "?Param2=value2&Param1=value1",
    headers: [host, date],
    creq: `GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\n` +
      `host;x-amz-date\n${EMPTY_HASH}`,
    sts: sts("816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0"),
    authz: sig("host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
  },
  {
    name: "get-vanilla-utf8-query",
    method: "GET",
    path: "/",
    query: "?ሴ=bar",
    headers: [host, date],
    creq:
      `GET\n/\n%E1%88%B4=bar\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY_HASH}`,
    sts: sts("eb30c5bed55734080471a834cc727ae56beb50e5f39d1bff6d0d38cb192a7073"),
    authz: sig("host;x-amz-date", "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"),
  },
  {
    name: "get-utf8",
    method: "GET",
    path: "/ሴ",
    headers: [host, date],
    creq:
      `GET\n/%E1%88%B4\n\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY_HASH}`,
    sts: sts("2a0a97d02205e45ce2e994789806b19270cfbbb0921b278ccf58f5249ac42102"),
    authz: sig("host;x-amz-date", "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),
  },
  {
    name: "get-space (normalize-path)",
    method: "GET",
    path: "/example space/",
    headers: [host, date],
    creq:
      `GET\n/example%20space/\n\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY_HASH}`,
    sts: sts("63ee75631ed7234ae61b5f736dfc7754cdccfedbff4b5128a915706ee9390d86"),
    authz: sig("host;x-amz-date", "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"),
  },
  {
    name: "get-slashes (normalize-path)",
    method: "GET",
    path: "//example//",
    headers: [host, date],
    creq:
      `GET\n/example/\n\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY_HASH}`,
    sts: sts("cb96b4ac96d501f7c5c15bc6d67b3035061cfced4af6585ad927f7e6c985c015"),
    authz: sig("host;x-amz-date", "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84"),
  },
  {
    name: "get-header-value-trim",
    method: "GET",
    path: "/",
    headers: [host, ["My-Header1", " value1"], ["My-Header2", ' "a   b   c"'], date],
    creq:
      `GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:"a b c"\nx-amz-date:${DATE}\n\n` +
      `host;my-header1;my-header2;x-amz-date\n${EMPTY_HASH}`,
    sts: sts("a726db9b0df21c14f559d0a978e563112acb1b9e05476f0a6a1c7d68f28605c7"),
    authz: sig(
      "host;my-header1;my-header2;x-amz-date",
      "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
    ),
  },
  {
    name: "get-header-key-duplicate",
    method: "GET",
    path: "/",
    headers: [host, ["My-Header1", "value2"], ["My-Header1", "value2"], ["My-Header1", "value1"], date],
    creq: `GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value2,value2,value1\nx-amz-date:${DATE}\n\n` +
      `host;my-header1;x-amz-date\n${EMPTY_HASH}`,
    sts: sts("dc7f04a3abfde8d472b0ab1a418b741b7c67174dad1551b4117b15527fbe966c"),
    authz: sig(
      "host;my-header1;x-amz-date",
      "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
    ),
  },
  {
    name: "post-vanilla",
    method: "POST",
    path: "/",
    headers: [host, date],
    creq: `POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:${DATE}\n\nhost;x-amz-date\n${EMPTY_HASH}`,
    sts: sts("553f88c9e4d10fc9e109e2aeb65f030801b70c2f6468faca261d401ae622fc87"),
    authz: sig("host;x-amz-date", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
  },
  {
    name: "post-x-www-form-urlencoded",
    method: "POST",
    path: "/",
    headers: [["Content-Type", "application/x-www-form-urlencoded"], host, date],
    body: "Param1=value1",
    creq: `POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\n` +
      `x-amz-date:${DATE}\n\ncontent-type;host;x-amz-date\n` +
      "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
    sts: sts("42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281"),
    authz: sig(
      "content-type;host;x-amz-date",
      "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
    ),
  },
  {
    name: "post-sts-header-before (session token signed)",
    method: "POST",
    path: "/",
    headers: [host, date, ["X-Amz-Security-Token", TOKEN]],
    creq: `POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:${DATE}\nx-amz-security-token:${TOKEN}\n\n` +
      `host;x-amz-date;x-amz-security-token\n${EMPTY_HASH}`,
    sts: sts("c237e1b440d4c63c32ca95b5b99481081cb7b13c7e40434868e71567c1a882f6"),
    authz: sig(
      "host;x-amz-date;x-amz-security-token",
      "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead",
    ),
  },
];

for (const v of VECTORS) {
  Deno.test(`sigv4 test suite: ${v.name}`, async () => {
    const parts = await signatureFromParts({
      method: v.method,
      path: v.path,
      query: v.query ?? "",
      headers: v.headers,
      payloadHash: await sha256Hex(v.body ?? ""),
      amzDate: DATE,
      region: "us-east-1",
      service: "service",
      credentials: CREDENTIALS,
    });
    assert.equal(parts.canonicalRequest, v.creq);
    assert.equal(parts.stringToSign, v.sts);
    assert.equal(
      `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/${parts.credentialScope}, SignedHeaders=${parts.signedHeaders}, ` +
        `Signature=${parts.signature}`,
      v.authz,
    );
  });
}

Deno.test("sigv4: signRequest on a URL matches the suite (post-x-www-form-urlencoded)", async () => {
  const headers = await signRequest({
    method: "POST",
    url: "https://example.amazonaws.com/",
    headers: [["Content-Type", "application/x-www-form-urlencoded"]],
    body: "Param1=value1",
    region: "us-east-1",
    service: "service",
    credentials: CREDENTIALS,
    date: new Date("2015-08-30T12:36:00Z"),
  });
  assert.equal(headers["x-amz-date"], DATE);
  assert.equal(headers["content-type"], "application/x-www-form-urlencoded");
  assert.equal(headers.authorization, VECTORS.find((v) => v.name === "post-x-www-form-urlencoded")!.authz);
  assert.equal(headers["x-amz-security-token"], undefined);
});

Deno.test("sigv4: a session token is sent and signed", async () => {
  const headers = await signRequest({
    method: "POST",
    url: "https://example.amazonaws.com/",
    headers: [],
    body: "",
    region: "us-east-1",
    service: "service",
    credentials: { ...CREDENTIALS, sessionToken: TOKEN },
    date: new Date("2015-08-30T12:36:00Z"),
  });
  assert.equal(headers["x-amz-security-token"], TOKEN);
  assert.equal(headers.authorization, VECTORS.find((v) => v.name.startsWith("post-sts"))!.authz);
});

Deno.test("sigv4: bedrock model ids with ':' are encoded once on the wire and twice in the canonical URI", async () => {
  // AWS's own SignatureDoesNotMatch message for Converse shows the canonical URI
  // /model/us.anthropic.claude-sonnet-4-20250514-v1%253A0/converse-stream for a request sent with %3A.
  assert.equal(
    canonicalUri("/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"),
    "/model/us.anthropic.claude-sonnet-4-20250514-v1%253A0/converse-stream",
  );
  const body = '{"messages":[{"role":"user","content":[{"text":"Hello"}]}]}';
  const parts = await computeSignature({
    method: "POST",
    url:
      "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
    headers: [["content-type", "application/json"]],
    body,
    region: "us-east-1",
    service: "bedrock",
    credentials: CREDENTIALS,
    date: new Date("2015-08-30T12:36:00Z"),
  });
  assert.equal(
    parts.canonicalRequest,
    [
      "POST",
      "/model/anthropic.claude-3-5-sonnet-20240620-v1%253A0/converse",
      "",
      "content-type:application/json",
      "host:bedrock-runtime.us-east-1.amazonaws.com",
      `x-amz-date:${DATE}`,
      "",
      "content-type;host;x-amz-date",
      await sha256Hex(body),
    ].join("\n"),
  );
  assert.equal(parts.credentialScope, "20150830/us-east-1/bedrock/aws4_request");
  assert.match(parts.signature, /^[0-9a-f]{64}$/);
  // An inference-profile ARN's '/' and ':' are segment-internal once encoded, so they double-encode too.
  assert.equal(
    canonicalUri("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.x-v1%3A0/converse"),
    "/model/arn%253Aaws%253Abedrock%253Aus-east-1%253A123%253Ainference-profile%252Fus.x-v1%253A0/converse",
  );
});
