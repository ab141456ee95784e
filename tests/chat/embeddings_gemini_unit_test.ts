/**
 * `/v1/embeddings` over a Gemini target, in-process over a raw upstream: with `dimensions` Google answers a cut
 * vector it does not normalise (only the full size is), and OpenAI's clients score by dot product on unit
 * vectors, so the answer is L2-normalised, in either encoding, single and batch; a zero vector stays zero;
 * without `dimensions` the vectors are Google's. Google's own `:embedContent` over the same alias answers
 * Google's vector as Google would.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { inProcessGateway } from "../helpers/in_process.ts";
import { type RawRequest, startRawUpstream } from "../helpers/raw_upstream.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

/** A cut gemini-embedding-001 vector: length 0.5099…, not 1. */
const CUT = [0.3, 0.4, 0.1, 0.05];
const NORM = Math.hypot(...CUT);

function answer(request: RawRequest, values: number[]) {
  const body = JSON.parse(request.body);
  const text = request.path.endsWith(":embedContent")
    ? JSON.stringify({ embedding: { values } })
    : JSON.stringify({ embeddings: body.requests.map(() => ({ values })) });
  return { status: 200, headers: { "content-type": "application/json" }, chunks: [text] };
}

Deno.test("embeddings: Gemini vectors cut by dimensions are unit length for an OpenAI client, Google's for a Gemini one", async () => {
  const up = startRawUpstream();
  let values = CUT;
  up.stepFor = (request) => answer(request, values);
  const gw = inProcessGateway(`
providers:
  gem: { type: gemini, base_url: "${up.url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
models:
  emb: { type: embedding, targets: [{ provider: gem, model: gemini-embedding-001, retries: 0 }] }
  chat-unused: { type: chat, targets: [{ provider: gem, model: gemini-2.5-flash }] }
${TEST_TOKENS_YAML}`);
  const post = async (path: string, body: unknown) => {
    const res = await gw.fetch(path, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    return json;
  };
  const embed = (input: string | string[], extra: Record<string, unknown>) =>
    post("/v1/embeddings", { model: "emb", input, ...extra });
  const close = (actual: number[], expected: number[]) =>
    actual.forEach((v, i) => assert.ok(Math.abs(v - expected[i]) < 1e-7, `${actual} ≉ ${expected}`));
  const unit = CUT.map((v) => v / NORM);
  try {
    for (const input of ["hello", ["a", "b"]]) {
      const float = await embed(input, { dimensions: 4, encoding_format: "float" });
      const sent = JSON.parse(up.requests.at(-1)!.body);
      assert.equal((sent.requests?.[0] ?? sent).outputDimensionality, 4);
      for (const item of float.data) {
        close(item.embedding, unit);
        assert.ok(Math.abs(Math.hypot(...item.embedding) - 1) < 1e-12);
      }
      const base64 = await embed(input, { dimensions: 4, encoding_format: "base64" });
      for (const item of base64.data) {
        const bytes = Buffer.from(item.embedding, "base64");
        close(Array.from({ length: 4 }, (_, i) => bytes.readFloatLE(i * 4)), unit);
      }
    }
    // Without `dimensions` the vector is the model's full size, which Google normalises itself: passed as sent.
    assert.deepEqual((await embed("hello", { encoding_format: "float" })).data[0].embedding, CUT);

    // Google's API over the same alias: the vector as Google answers it, its client expecting Google's behaviour.
    const google = await post("/v1beta/models/emb:embedContent", {
      content: { parts: [{ text: "hello" }] },
      outputDimensionality: 4,
    });
    assert.deepEqual(google.embedding.values, CUT);

    // A zero vector has no direction: it stays zero, no NaN.
    values = [0, 0, 0, 0];
    assert.deepEqual(
      (await embed("hello", { dimensions: 4, encoding_format: "float" })).data[0].embedding,
      values,
    );
  } finally {
    await up.stop();
  }
});
