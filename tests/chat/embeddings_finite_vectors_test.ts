/**
 * `/v1/embeddings` over every provider kind that translates or checks vectors (Bedrock Titan and Cohere, Gemini's
 * `embedContent` and `batchEmbedContents`, an OpenAI-compatible one), in-process over a raw upstream: a vector
 * number a float32 cannot hold — `1e400`, which JSON parses to Infinity, or a finite `3.5e38` beyond float32's
 * range — is the upstream's 502 `upstream_invalid_response` for a float client and a base64 client alike, never
 * a 200 whose vector holds `null` (float) or ±Infinity (base64). The largest float32 still passes.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { inProcessGateway } from "../helpers/in_process.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

function configFor(url: string): string {
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms, eject_after: 1000 }
providers:
  oai: { type: openai, base_url: "${url}/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  gem: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
  br:
    type: bedrock
    region: us-east-1
    base_url: "${url}"
    access_key_id: AKIAQ7EXAMPLEW3RT6YU
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY
models:
  e-oai: { type: embedding, targets: [{ provider: oai, model: m, retries: 0 }] }
  e-gem: { type: embedding, targets: [{ provider: gem, model: text-embedding-004, retries: 0 }] }
  e-titan: { type: embedding, targets: [{ provider: br, model: amazon.titan-embed-text-v2:0, retries: 0 }] }
  e-cohere: { type: embedding, targets: [{ provider: br, model: cohere.embed-english-v3, retries: 0 }] }
  chat-unused: { type: chat, targets: [{ provider: oai, model: m }] }
${TEST_TOKENS_YAML}`;
}

/** Each vendor's answer for `input` whose first vector starts with the JSON number text `n`. */
const VENDORS: { alias: string; input: string | string[]; answer: (n: string) => string }[] = [
  { alias: "e-titan", input: "hi", answer: (n) => `{"embedding":[${n},0.5],"inputTextTokenCount":3}` },
  { alias: "e-cohere", input: "hi", answer: (n) => `{"embeddings":[[${n},0.5]],"id":"x","texts":["hi"]}` },
  { alias: "e-gem", input: "hi", answer: (n) => `{"embedding":{"values":[${n},0.5]}}` },
  {
    alias: "e-gem",
    input: ["a", "b"],
    answer: (n) => `{"embeddings":[{"values":[0.5,0.5]},{"values":[${n},0.5]}]}`,
  },
  {
    alias: "e-oai",
    input: "hi",
    answer: (n) =>
      `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[${n},0.5]}],"model":"m",` +
      `"usage":{"prompt_tokens":1,"total_tokens":1}}`,
  },
];

const FLOAT32_MAX = "3.4028234663852886e38";

Deno.test("embeddings: a number no float32 holds is every vendor's 502, for float and base64 clients; float32's max passes", async () => {
  const up = startRawUpstream();
  const gw = inProcessGateway(configFor(up.url));
  const embed = (alias: string, input: string | string[], encoding: string) =>
    gw.fetch("/v1/embeddings", {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: alias, input, encoding_format: encoding }),
    });
  try {
    for (const { alias, input, answer } of VENDORS) {
      for (const n of ["1e400", "-1e400", "3.5e38"]) {
        for (const encoding of ["float", "base64"]) {
          up.next = { status: 200, headers: { "content-type": "application/json" }, chunks: [answer(n)] };
          const res = await embed(alias, input, encoding);
          const text = await res.text();
          const what = `${alias} ${JSON.stringify(input)} ${n} ${encoding}: ${res.status} ${
            text.slice(0, 160)
          }`;
          assert.equal(res.status, 502, what);
          assert.equal(JSON.parse(text).error.code, "upstream_invalid_response", what);
          assert.equal(gw.records.at(-1)?.status, 502, what);
        }
      }
      // The largest float32 is a vector like any other, the same number in both encodings.
      up.next = {
        status: 200,
        headers: { "content-type": "application/json" },
        chunks: [answer(FLOAT32_MAX)],
      };
      const float = await (await embed(alias, input, "float")).json();
      const first = float.data.find((d: { embedding: number[] }) => d.embedding[0] !== 0.5).embedding[0];
      assert.equal(first, Number(FLOAT32_MAX), alias);
      const base64 = await (await embed(alias, input, "base64")).json();
      const encoded = base64.data.map((d: { embedding: string }) => Buffer.from(d.embedding, "base64"));
      assert.ok(encoded.some((b: Buffer) => b.readFloatLE(0) === Number(FLOAT32_MAX)), alias);
    }
  } finally {
    await up.stop();
  }
});
