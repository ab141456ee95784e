/**
 * Embeddings over InvokeModel. Bodies follow AWS's model-parameter pages: Titan Text Embeddings V2
 * (`{inputText, dimensions: 1024|512|256, normalize}` → `{embedding, inputTextTokenCount}`), Cohere Embed v3
 * (`{texts ≤ 96, input_type}` → `{embeddings: [[…]], response_type: "embeddings_floats"}`) and v4
 * (`embedding_types`, `output_dimension` 256/512/1024/1536 → `{embeddings: {float: [[…]]}}`).
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import {
  bedrockEmbed,
  COHERE_BATCH,
  embeddingFamily,
  type InvokeJson,
  TITAN_CONCURRENCY,
} from "./embeddings.ts";
import type { EmbeddingRequest, JsonObject } from "../../openai/types.ts";

const embedReq = (fields: Partial<EmbeddingRequest> & JsonObject): EmbeddingRequest => ({
  model: "a",
  input: "x",
  ...fields,
});

function recorder(answer: (body: JsonObject) => JsonObject, headers: Record<string, string> = {}) {
  const bodies: JsonObject[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const invoke: InvokeJson = async (body) => {
    bodies.push(body);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise((r) => setTimeout(r, 2));
    inFlight--;
    return { json: answer(body), headers: new Headers(headers) };
  };
  return { bodies, invoke, max: () => maxInFlight };
}

Deno.test("bedrock embeddings: family from model id, profile prefixes and ARNs", () => {
  assert.deepEqual(embeddingFamily("amazon.titan-embed-text-v2:0"), { kind: "titan", version: 2 });
  assert.deepEqual(embeddingFamily("amazon.titan-embed-text-v1"), { kind: "titan", version: 1 });
  assert.deepEqual(embeddingFamily("amazon.titan-embed-g1-text-02"), { kind: "titan", version: 1 });
  assert.deepEqual(embeddingFamily("cohere.embed-english-v3"), { kind: "cohere", version: 3 });
  assert.deepEqual(embeddingFamily("cohere.embed-multilingual-v3"), { kind: "cohere", version: 3 });
  assert.deepEqual(embeddingFamily("us.cohere.embed-v4:0"), { kind: "cohere", version: 4 });
  assert.deepEqual(
    embeddingFamily("arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0"),
    { kind: "titan", version: 2 },
  );
  assert.equal(embeddingFamily("amazon.titan-embed-image-v1"), null);
  assert.equal(embeddingFamily("anthropic.claude-3-haiku-20240307-v1:0"), null);
});

Deno.test("bedrock embeddings: Titan v2, one call per input, bounded concurrency, order kept", async () => {
  const rec = recorder((body) => ({
    embedding: [String(body.inputText).length, 0.5],
    inputTextTokenCount: 2,
  }));
  const inputs = Array.from({ length: 10 }, (_, i) => "x".repeat(i + 1));
  const result = await bedrockEmbed(
    "aws",
    "amazon.titan-embed-text-v2:0",
    embedReq({ input: inputs, dimensions: 512 }),
    rec.invoke,
  );
  assert.equal(rec.bodies.length, 10);
  assert.ok(rec.max() <= TITAN_CONCURRENCY && rec.max() > 1, `max in flight ${rec.max()}`);
  assert.deepEqual(rec.bodies[0], { inputText: "x", normalize: true, dimensions: 512 });
  assert.deepEqual(result.data.map((d) => d.embedding), inputs.map((s) => [s.length, 0.5]));
  assert.deepEqual(result.data.map((d) => d.index), [...inputs.keys()]);
  assert.deepEqual(result.usage, { prompt_tokens: 20, total_tokens: 20 });
});

Deno.test("bedrock embeddings: a call that reports no count leaves the request's to the gateway, not charged 0", async () => {
  // Titan: the count in the body, else the header; here the second text's call has neither.
  const titan = recorder((body) => ({
    embedding: [1, 0],
    ...(body.inputText === "counted" ? { inputTextTokenCount: 3 } : {}),
  }));
  const told: number[] = [];
  const result = await bedrockEmbed(
    "aws",
    "amazon.titan-embed-text-v2:0",
    embedReq({ input: ["counted", "uncounted"] }),
    titan.invoke,
    (part) => told.push(part.tokens),
  );
  assert.deepEqual(result.usage, { prompt_tokens: 0, total_tokens: 0 });
  assert.deepEqual(told.toSorted(), [0, 3]);
  // Cohere: batches of 96, the second without its header.
  let calls = 0;
  const cohere: InvokeJson = (body) => {
    const headers = new Headers(calls++ === 0 ? { "x-amzn-bedrock-input-token-count": "5" } : {});
    return Promise.resolve({ json: { embeddings: (body.texts as string[]).map(() => [1]) }, headers });
  };
  const inputs = Array.from({ length: COHERE_BATCH + 1 }, (_, i) => String(i));
  const batched = await bedrockEmbed("aws", "cohere.embed-english-v3", embedReq({ input: inputs }), cohere);
  assert.deepEqual(batched.usage, { prompt_tokens: 0, total_tokens: 0 });
});

Deno.test("bedrock embeddings: Titan v1 takes inputText only", async () => {
  const rec = recorder(() => ({ embedding: [1], inputTextTokenCount: 1 }));
  await bedrockEmbed("aws", "amazon.titan-embed-text-v1", embedReq({ input: "hi" }), rec.invoke);
  assert.deepEqual(rec.bodies, [{ inputText: "hi" }]);
});

Deno.test("bedrock embeddings: Cohere v3 in batches of 96, search_document unless the client says otherwise", async () => {
  const rec = recorder(
    (body) => ({
      embeddings: (body.texts as string[]).map((t) => [Number(t)]),
      id: "x",
      response_type: "embeddings_floats",
      texts: body.texts,
    }),
    { "x-amzn-bedrock-input-token-count": "5" },
  );
  const inputs = Array.from({ length: 200 }, (_, i) => String(i));
  const result = await bedrockEmbed(
    "aws",
    "cohere.embed-english-v3",
    embedReq({ input: inputs }),
    rec.invoke,
  );
  assert.deepEqual(rec.bodies.map((b) => (b.texts as string[]).length), [COHERE_BATCH, COHERE_BATCH, 8]);
  assert.equal(rec.bodies[0].input_type, "search_document");
  assert.deepEqual(result.data.map((d) => d.embedding), inputs.map((s) => [Number(s)]));
  assert.deepEqual(result.usage, { prompt_tokens: 15, total_tokens: 15 });
  const query = recorder((body) => ({ embeddings: (body.texts as string[]).map(() => [1]) }));
  await bedrockEmbed(
    "aws",
    "cohere.embed-english-v3",
    embedReq({ input: "q", input_type: "search_query" }),
    query.invoke,
  );
  assert.deepEqual(query.bodies, [{ texts: ["q"], input_type: "search_query" }]);
});

Deno.test("bedrock embeddings: Cohere v4 asks for floats and passes dimensions; by-type answers parse", async () => {
  const rec = recorder((body) => ({
    embeddings: { float: (body.texts as string[]).map(() => [0.1, 0.2]) },
    response_type: "embeddings_by_type",
  }));
  const result = await bedrockEmbed(
    "aws",
    "cohere.embed-v4:0",
    embedReq({ input: ["a", "b"], dimensions: 256 }),
    rec.invoke,
  );
  assert.deepEqual(rec.bodies, [{
    texts: ["a", "b"],
    input_type: "search_document",
    embedding_types: ["float"],
    output_dimension: 256,
  }]);
  assert.equal(result.data.length, 2);
});

Deno.test("bedrock embeddings: 400s for token ids, bad dimensions and unknown families; 502 for bad answers", async () => {
  const rec = recorder(() => ({ embedding: [1] }));
  const is400 = (param: string) => (err: unknown) =>
    err instanceof GatewayError && err.status === 400 && err.param === param;
  await assert.rejects(
    bedrockEmbed("aws", "amazon.titan-embed-text-v2:0", embedReq({ input: [1, 2] }), rec.invoke),
    is400("input"),
  );
  await assert.rejects(
    bedrockEmbed("aws", "cohere.embed-english-v3", embedReq({ input: [[1], [2]] }), rec.invoke),
    is400("input"),
  );
  await assert.rejects(
    bedrockEmbed("aws", "amazon.titan-embed-text-v2:0", embedReq({ dimensions: 300 }), rec.invoke),
    is400("dimensions"),
  );
  await assert.rejects(
    bedrockEmbed("aws", "cohere.embed-english-v3", embedReq({ dimensions: 512 }), rec.invoke),
    is400("dimensions"),
  );
  await assert.rejects(
    bedrockEmbed("aws", "amazon.titan-embed-text-v1", embedReq({ dimensions: 1024 }), rec.invoke),
    is400("dimensions"),
  );
  await assert.rejects(bedrockEmbed("aws", "acme.embed-v1", embedReq({}), rec.invoke), is400("model"));
  assert.equal(rec.bodies.length, 0);
  // Fixed-size models accept their own size.
  await bedrockEmbed(
    "aws",
    "cohere.embed-english-v3",
    embedReq({ dimensions: 1024 }),
    recorder(() => ({ embeddings: [[1]] })).invoke,
  );
  const is502 = (err: unknown) => err instanceof GatewayError && err.status === 502;
  await assert.rejects(
    bedrockEmbed("aws", "amazon.titan-embed-text-v2:0", embedReq({}), recorder(() => ({})).invoke),
    is502,
  );
  await assert.rejects(
    bedrockEmbed(
      "aws",
      "cohere.embed-english-v3",
      embedReq({ input: ["a", "b"] }),
      recorder(() => ({ embeddings: [[1]] })).invoke,
    ),
    is502,
  );
});
