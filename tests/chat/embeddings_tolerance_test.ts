/**
 * What `/v1/embeddings` does with a request one of an alias's targets cannot take, over real sockets: token-id
 * input (what LangChain's `OpenAIEmbeddings` sends by default) on a text-only vendor (Gemini, Bedrock), a
 * `dimensions` a Bedrock family does not offer, a field its translation does not read (`input_type`,
 * `task_type`). That target is left out before routing for one of the alias's that takes the request, whatever
 * the strategy; the 400 comes only when none does, and then no upstream is called. A target configured with
 * `unsupported_params: drop` goes without such a field, and the answer and the usage record name it; a `strict`
 * alias refuses instead. One raw upstream stands behind every provider type.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { json, withMixedVendors } from "../helpers/mixed_vendors.ts";
import type { RawUpstream } from "../helpers/raw_upstream.ts";

const TITAN = "amazon.titan-embed-text-v2:0";

function configFor(url: string): string {
  const target = (provider: string, model: string) =>
    `{ provider: ${provider}, model: "${model}", retries: 0 }`;
  const gemini = target("gemini", "gemini-embedding-001");
  const geminiDrop = target("geminidrop", "gemini-embedding-001");
  const titan = target("bedrock", TITAN);
  const openai = target("openai", "text-embedding-3-small");
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms }
providers:
  openai: { type: openai, base_url: "${url}/oai/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  gemini: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
  geminidrop: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789", unsupported_params: drop }
  bedrock:
    type: bedrock
    region: us-east-1
    base_url: "${url}"
    access_key_id: AKIAQ7EXAMPLEW3RT6YU
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY
models:
  emb-gemini-openai: { type: embedding, targets: [${gemini}, ${openai}] }
  emb-gemini-openai-weighted: { type: embedding, strategy: weighted, targets: [${gemini}, ${openai}] }
  emb-titan-openai: { type: embedding, targets: [${titan}, ${openai}] }
  emb-titan-openai-weighted: { type: embedding, strategy: weighted, targets: [${titan}, ${openai}] }
  emb-gemini-titan: { type: embedding, targets: [${gemini}, ${titan}] }
  emb-titan: { type: embedding, targets: [${titan}] }
  emb-gemini: { type: embedding, targets: [${gemini}] }
  emb-geminidrop: { type: embedding, targets: [${geminiDrop}] }
  emb-strict: { type: embedding, strict: true, targets: [${geminiDrop}, ${openai}] }
  chat-unused: { type: chat, targets: [${openai}] }
${TEST_TOKENS_YAML}`;
}

/** OpenAI's answer with one vector per input. */
function openaiVectors(count: number) {
  return json({
    object: "list",
    data: Array.from(
      { length: count },
      (_, index) => ({ object: "embedding", index, embedding: [index, 0.5] }),
    ),
    model: "text-embedding-3-small",
    usage: { prompt_tokens: 5, total_tokens: 5 },
  });
}

function withGateway(fn: (gw: TestGateway, up: RawUpstream) => Promise<void>) {
  return withMixedVendors(fn, configFor);
}

async function post(gw: TestGateway, path: string, body: Record<string, unknown>) {
  const response = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

Deno.test("embeddings tolerance: token-id input skips a text-only target for one that takes it, every time", async () => {
  await withGateway(async (gw, up) => {
    up.next = openaiVectors(2);
    // LangChain's OpenAIEmbeddings: tiktoken-chunked token arrays.
    const input = [[9906, 1917], [15339, 11, 1917]];
    for (const model of ["emb-gemini-openai", "emb-gemini-openai-weighted"]) {
      for (let i = 0; i < 6; i++) {
        const before = up.requests.length;
        const answer = await post(gw, "/v1/embeddings", { model, input, encoding_format: "float" });
        assert.equal(answer.status, 200, `${model}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.headers.get("x-gateway-provider"), "openai");
        assert.equal(answer.body.data.length, 2);
        assert.equal(up.requests.length, before + 1);
        assert.deepEqual(JSON.parse(up.requests.at(-1)!.body).input, input);
      }
    }
    // No target takes token ids: the first target's 400, and no upstream is called.
    const before = up.requests.length;
    const refused = await post(gw, "/v1/embeddings", { model: "emb-gemini-titan", input });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, "input");
    assert.equal(refused.body.error.code, "unsupported_input");
    assert.equal(up.requests.length, before);
  });
});

Deno.test("embeddings tolerance: dimensions Titan does not offer go to a target that takes them", async () => {
  await withGateway(async (gw, up) => {
    up.next = openaiVectors(1);
    for (const model of ["emb-titan-openai", "emb-titan-openai-weighted"]) {
      for (let i = 0; i < 6; i++) {
        const answer = await post(gw, "/v1/embeddings", { model, input: "hello", dimensions: 1536 });
        assert.equal(answer.status, 200, `${model}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.headers.get("x-gateway-provider"), "openai");
        assert.equal(JSON.parse(up.requests.at(-1)!.body).dimensions, 1536);
      }
    }
    // Google's embedContent over the same alias: outputDimensionality is the same dimensions.
    const viaGemini = await post(gw, "/v1beta/models/emb-titan-openai:embedContent", {
      content: { parts: [{ text: "hello" }] },
      outputDimensionality: 1536,
    });
    assert.equal(viaGemini.status, 200, JSON.stringify(viaGemini.body));
    assert.equal(viaGemini.headers.get("x-gateway-provider"), "openai");
    // Dimensions no target offers: Titan's 400, no upstream called.
    const before = up.requests.length;
    const refused = await post(gw, "/v1/embeddings", {
      model: "emb-titan",
      input: "hello",
      dimensions: 1536,
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, "dimensions");
    assert.equal(refused.body.error.code, "unsupported_dimensions");
    assert.equal(up.requests.length, before);
  });
});

/** The fields a retrieval client adds that Gemini's embeddings translation does not read. */
const RETRIEVAL = { input: "what is a cat?", input_type: "search_query", task_type: "RETRIEVAL_QUERY" };

Deno.test("embeddings tolerance: a field Gemini does not read is refused, or dropped and named, as on chat", async () => {
  await withGateway(async (gw, up) => {
    // unsupported_params: error (the default): the 400 names the first, and no upstream is called.
    const before = up.requests.length;
    const refused = await post(gw, "/v1/embeddings", { model: "emb-gemini", ...RETRIEVAL });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, "input_type");
    assert.equal(refused.body.error.code, "unsupported_parameter");
    assert.equal(up.requests.length, before);
    // unsupported_params: drop: only the text reaches Gemini, and the answer and the usage record say what not.
    up.next = json({ embedding: { values: [0.5, 0.25] } });
    const dropped = await post(gw, "/v1/embeddings", { model: "emb-geminidrop", ...RETRIEVAL });
    assert.equal(dropped.status, 200, JSON.stringify(dropped.body));
    assert.deepEqual(dropped.body.data[0].embedding, [0.5, 0.25]);
    assert.equal(dropped.headers.get("x-gateway-dropped"), "input_type,task_type");
    assert.deepEqual(JSON.parse(up.requests.at(-1)!.body), {
      content: { parts: [{ text: "what is a cat?" }] },
    });
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "emb-geminidrop");
    assert.equal(line.dropped, "input_type,task_type");
    // Nothing left out: no header.
    const whole = await post(gw, "/v1/embeddings", { model: "emb-geminidrop", input: "a", user: "u-1" });
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get("x-gateway-dropped"), null);
  });
});

Deno.test("embeddings tolerance: an OpenAI-compatible target gets every field; a strict alias goes to it", async () => {
  await withGateway(async (gw, up) => {
    up.next = openaiVectors(1);
    for (const model of ["emb-gemini-openai", "emb-strict"]) {
      const answer = await post(gw, "/v1/embeddings", { model, ...RETRIEVAL });
      assert.equal(answer.status, 200, `${model}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.headers.get("x-gateway-provider"), "openai");
      // Chosen before routing: the Gemini target was never tried.
      assert.equal(answer.headers.get("x-gateway-attempts"), "1");
      assert.equal(answer.headers.get("x-gateway-dropped"), null);
      const sent = JSON.parse(up.requests.at(-1)!.body);
      assert.equal(sent.input_type, "search_query");
      assert.equal(sent.task_type, "RETRIEVAL_QUERY");
    }
  });
});

/**
 * What the Gemini API's `:embedContent` carries to a Gemini target beside its texts (`taskType`, `title`) is no
 * field of an OpenAI embeddings request: a `/v1/embeddings` body naming `gemini_fields` (the name the gateway
 * carried them under inside the request once) is a field like any other Gemini does not read, and none of it
 * reaches Google.
 */
const CARRIER = {
  input: "what is a cat?",
  gemini_fields: [{ taskType: "RETRIEVAL_QUERY", title: "Cats" }],
};

Deno.test("embeddings tolerance: a body's gemini_fields is a field Gemini does not read, never its taskType or title", async () => {
  await withGateway(async (gw, up) => {
    // Gemini would answer; under `unsupported_params: error` (the default) it is never asked.
    up.next = json({ embedding: { values: [0.5, 0.25] } });
    const before = up.requests.length;
    const refused = await post(gw, "/v1/embeddings", { model: "emb-gemini", ...CARRIER });
    assert.equal(up.requests.length, before, `Gemini was sent ${up.requests.at(-1)?.body}`);
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.error.param, "gemini_fields");
    assert.equal(refused.body.error.code, "unsupported_parameter");
    // `unsupported_params: drop`: only the text reaches Gemini, and the answer names what it went without.
    const dropped = await post(gw, "/v1/embeddings", { model: "emb-geminidrop", ...CARRIER });
    assert.equal(dropped.status, 200, JSON.stringify(dropped.body));
    assert.equal(dropped.headers.get("x-gateway-dropped"), "gemini_fields");
    assert.deepEqual(JSON.parse(up.requests.at(-1)!.body), {
      content: { parts: [{ text: "what is a cat?" }] },
    });
  });
});
