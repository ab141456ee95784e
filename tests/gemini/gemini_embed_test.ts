/**
 * Google's `:embedContent` and `:batchEmbedContents` in-process over the builtin `hash` model, whose vectors
 * are as long as the `dimensions` it is given: each of a batch's requests gets the `outputDimensionality` it
 * asked for, whatever the others asked, in one client request with one usage record. Over a fake Gemini upstream:
 * Google's own `taskType` and `title` reach a Gemini target, each request's as sent.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";
import { GoogleGenAI } from "@google/genai";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

const CONFIG = `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
models:
  emb: { type: embedding, targets: [ { provider: local, model: hash } ] }
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${TEST_TOKENS_YAML}`;

/** One of a batch's requests: `text` as its content, and `extra` beside it. */
const embedRequest = (text: string, extra: Record<string, unknown> = {}) => ({
  content: { parts: [{ text }] },
  ...extra,
});

async function post(
  gw: InProcessGateway,
  method: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown>; id: string }> {
  const response = await gw.fetch(`/v1beta/models/emb:${method}`, {
    method: "POST",
    headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    json: await response.json(),
    id: response.headers.get("x-request-id") ?? "",
  };
}

/** The vectors of a `:batchEmbedContents` answer. */
function vectorsOf(json: Record<string, unknown>): number[][] {
  return (json.embeddings as { values: number[] }[]).map((e) => e.values);
}

/** The vector `:embedContent` answers for `text` alone, in `dimensions`. */
async function alone(gw: InProcessGateway, text: string, dimensions?: number): Promise<number[]> {
  const extra = dimensions === undefined ? {} : { outputDimensionality: dimensions };
  const { status, json } = await post(gw, "embedContent", embedRequest(text, extra));
  assert.equal(status, 200, JSON.stringify(json));
  return (json.embedding as { values: number[] }).values;
}

Deno.test("gemini embed: each batch request gets its own outputDimensionality, in the client's order", async () => {
  const gw = inProcessGateway(CONFIG);
  const asked = [undefined, 3, 2, undefined, 3];
  const texts = ["alpha beta", "gamma", "delta epsilon zeta", "eta", "theta iota"];
  const { status, json, id } = await post(gw, "batchEmbedContents", {
    requests: texts.map((text, i) =>
      embedRequest(text, asked[i] === undefined ? {} : { outputDimensionality: asked[i] })
    ),
  });
  assert.equal(status, 200, JSON.stringify(json));
  const vectors = vectorsOf(json);
  assert.deepEqual(
    vectors.map((v) => v.length),
    [256, 3, 2, 256, 3],
    "the model's own 256 where none was asked",
  );
  // Each vector is its own text's, as embedding it alone in its dimensions gives it.
  for (const [i, text] of texts.entries()) {
    assert.deepEqual(vectors[i], await alone(gw, text, asked[i]), text);
  }
  // One usage record for the batch, its tokens those of every call it made (the hash model counts words).
  const mine = gw.records.filter((r) => r.request_id === id);
  assert.equal(mine.length, 1);
  assert.equal(mine[0].endpoint, "gemini");
  assert.equal(mine[0].prompt_tokens, 9);
  assert.equal(mine[0].tokens_estimated, false);
});

Deno.test("gemini embed: outputDimensionality as Google reads it: an integer, one in a string, or none", async () => {
  const gw = inProcessGateway(CONFIG);
  // proto3's JSON writes an int as a number or as a string of digits; Google takes both.
  assert.equal((await alone(gw, "hello", 3)).length, 3);
  const { status, json } = await post(
    gw,
    "embedContent",
    embedRequest("hello", { outputDimensionality: "3" }),
  );
  assert.equal(status, 200, JSON.stringify(json));
  assert.deepEqual((json.embedding as { values: number[] }).values, await alone(gw, "hello", 3));
  const nulled = await post(gw, "embedContent", embedRequest("hello", { outputDimensionality: null }));
  assert.equal((nulled.json.embedding as { values: number[] }).values.length, 256, "null is none");
  const batch = await post(gw, "batchEmbedContents", {
    requests: [
      embedRequest("a", { output_dimensionality: "2" }),
      embedRequest("b", { outputDimensionality: 4 }),
    ],
  });
  assert.deepEqual(vectorsOf(batch.json).map((v) => v.length), [2, 4]);
});

Deno.test("gemini embed: an outputDimensionality that is no positive integer is Google's 400 naming it", async () => {
  const gw = inProcessGateway(CONFIG);
  for (const value of [-5, 0, 2.5, "abc", "-3", "2.5", "", true, [3], { n: 3 }, 2_147_483_648]) {
    const label = JSON.stringify(value);
    const one = await post(gw, "embedContent", embedRequest("hello", { outputDimensionality: value }));
    assert.equal(one.status, 400, `${label}: ${JSON.stringify(one.json)}`);
    const error = one.json.error as { status: string; message: string };
    assert.equal(error.status, "INVALID_ARGUMENT", label);
    assert.match(error.message, /'outputDimensionality'/, label);
    const many = await post(gw, "batchEmbedContents", {
      requests: [embedRequest("a"), embedRequest("b", { outputDimensionality: value })],
    });
    assert.equal(many.status, 400, label);
    assert.match(
      (many.json.error as { message: string }).message,
      /'requests\[1\]\.outputDimensionality'/,
      label,
    );
  }
});

Deno.test("gemini embed: a target's refusal of the dimensions names the Gemini field, not 'dimensions'", async () => {
  const gw = inProcessGateway(CONFIG);
  // The hash model makes at most 4096 dimensions: its refusal, in the client's terms.
  const one = await post(gw, "embedContent", embedRequest("hello", { outputDimensionality: 5000 }));
  assert.equal(one.status, 400);
  const message = (one.json.error as { message: string }).message;
  assert.match(message, /'outputDimensionality'.*4096/);
  assert.doesNotMatch(message, /'dimensions'/);
  const many = await post(gw, "batchEmbedContents", {
    requests: [
      embedRequest("a", { outputDimensionality: 2 }),
      embedRequest("b", { outputDimensionality: 5000 }),
    ],
  });
  assert.equal(many.status, 400);
  assert.match((many.json.error as { message: string }).message, /'requests\[1\]\.outputDimensionality'/);
});

Deno.test("gemini embed: a Gemini target gets each request's taskType and title; another is told it went without", async () => {
  await withFakeGateway(startFakeGemini, (fake) => `
server: { host: 127.0.0.1, port: 0 }
providers:
  gem: { type: gemini, base_url: "${fake.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  local: { type: builtin }
models:
  gemini-emb: { type: embedding, targets: [ { provider: gem, model: gemini-embedding-001 } ] }
  emb: { type: embedding, targets: [ { provider: local, model: hash } ] }
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${TEST_TOKENS_YAML}`, async (gw, fake) => {
    const ai = new GoogleGenAI({
      apiKey: TEST_TOKEN,
      apiVersion: "v1beta",
      httpOptions: { baseUrl: gw.url },
    });
    await ai.models.embedContent({
      model: "gemini-emb",
      contents: ["what is the capital of France?"],
      config: { taskType: "RETRIEVAL_QUERY" },
    });
    // The SDK sends Google's batch of one (the gateway's call to the target: `embedContent`).
    assert.deepEqual(fake.requests.at(-1)!.body, {
      content: { parts: [{ text: "what is the capital of France?" }] },
      taskType: "RETRIEVAL_QUERY",
    });
    // A batch: each request's own, with its own dimensionality too.
    const documents = [
      embedRequest("Paris is the capital of France.", { taskType: "RETRIEVAL_DOCUMENT", title: "France" }),
      embedRequest("Berlin is the capital of Germany.", { taskType: "RETRIEVAL_DOCUMENT", title: "Germany" }),
      embedRequest("capitals", { task_type: "CLUSTERING", outputDimensionality: 4 }),
    ];
    const post = (alias: string) =>
      fetch(`${gw.url}/v1beta/models/${alias}:batchEmbedContents`, {
        method: "POST",
        headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
        body: JSON.stringify({ requests: documents }),
      });
    const native = await post("gemini-emb");
    assert.equal(native.status, 200, await native.clone().text());
    assert.equal(native.headers.get("x-gateway-dropped"), null);
    await native.body?.cancel();
    // One call per dimensionality: a batch of the two documents, then the third alone.
    const [both, third] = fake.requests.slice(-2).map((r) => r.body as Record<string, unknown>);
    const fields = (r: Record<string, unknown>) => [r.taskType, r.title];
    assert.deepEqual((both.requests as Record<string, unknown>[]).map(fields), [
      ["RETRIEVAL_DOCUMENT", "France"],
      ["RETRIEVAL_DOCUMENT", "Germany"],
    ]);
    assert.deepEqual(fields(third), ["CLUSTERING", undefined]);
    const other = await post("emb");
    assert.equal(other.status, 200);
    assert.equal(
      other.headers.get("x-gateway-dropped"),
      "requests[0].taskType,requests[0].title,requests[1].taskType,requests[1].title,requests[2].taskType",
    );
    await other.body?.cancel();
  });
});
