/**
 * `/v1/embeddings` over an OpenAI-compatible upstream, in-process over a raw upstream: the upstream is asked
 * for the client's encoding. A base64 client's batch whose float JSON would pass
 * `server.upstream_limits.max_body_size` is served in base64, well under it (the vendor billed it either way);
 * a float client gets the upstream's floats as printed; a server that answers floats to a base64 request is
 * converted.
 */
import assert from "node:assert/strict";
import { encodeFloat32Base64 } from "../../lib/encoding/float32_base64.ts";
import { inProcessGateway } from "../helpers/in_process.ts";
import { type RawRequest, startRawUpstream } from "../helpers/raw_upstream.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

const DIMS = 256;
const INPUTS = 40;
// Nine decimals, as OpenAI prints a float32; not one of them is exact in float32.
const VECTOR = Array.from({ length: DIMS }, (_, i) => Number((Math.sin(i + 1) * 0.05).toFixed(9)));

/** An OpenAI answer to `request` in the encoding it asked for, or in floats when `ignoreEncoding`. */
function answer(request: RawRequest, ignoreEncoding: boolean) {
  const body = JSON.parse(request.body);
  const base64 = body.encoding_format === "base64" && !ignoreEncoding;
  const embedding = base64 ? encodeFloat32Base64(VECTOR) : VECTOR;
  const count = Array.isArray(body.input) ? body.input.length : 1;
  const data = Array.from({ length: count }, (_, index) => ({ object: "embedding", index, embedding }));
  const text = JSON.stringify({
    object: "list",
    data,
    model: "m",
    usage: { prompt_tokens: 3, total_tokens: 3 },
  });
  return { status: 200, headers: { "content-type": "application/json" }, chunks: [text] };
}

Deno.test("embeddings: the upstream is asked for the client's encoding, so a base64 batch whose floats are over the upstream limit is served", async () => {
  const up = startRawUpstream();
  // 40 × 256 floats are about 120 KB of JSON, in base64 about 55 KB: the limit sits between.
  const gw = inProcessGateway(`
server: { upstream_limits: { max_body_size: 80KiB } }
providers:
  oai: { type: openai, base_url: "${up.url}/v1", api_key: "sk-upstream-key-abcdef0123456789" }
models:
  emb: { type: embedding, targets: [{ provider: oai, model: m, retries: 0 }] }
  chat-unused: { type: chat, targets: [{ provider: oai, model: m }] }
${TEST_TOKENS_YAML}`);
  const embed = async (input: string | string[], encoding?: string) => {
    const res = await gw.fetch("/v1/embeddings", {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "emb", input, ...(encoding ? { encoding_format: encoding } : {}) }),
    });
    return { status: res.status, body: await res.json() };
  };
  const asked = () => JSON.parse(up.requests.at(-1)!.body).encoding_format;
  const batch = Array.from({ length: INPUTS }, (_, i) => `chunk ${i}`);
  try {
    up.stepFor = (request) => answer(request, false);
    const large = await embed(batch, "base64");
    assert.equal(large.status, 200, JSON.stringify(large.body).slice(0, 300));
    assert.equal(asked(), "base64");
    assert.equal(large.body.data.length, INPUTS);
    assert.equal(large.body.data[INPUTS - 1].embedding, encodeFloat32Base64(VECTOR));

    // A float client asks floats and gets them as the upstream printed them, not float32's float64 spelling.
    for (const encoding of ["float", undefined]) {
      const float = await embed("a", encoding);
      assert.equal(asked(), "float");
      assert.deepEqual(float.body.data[0].embedding, VECTOR);
    }

    // A server that ignores the parameter and answers floats: a base64 client still gets base64.
    up.stepFor = (request) => answer(request, true);
    const converted = await embed("a", "base64");
    assert.equal(asked(), "base64");
    assert.equal(converted.body.data[0].embedding, encodeFloat32Base64(VECTOR));
  } finally {
    await up.stop();
  }
});
