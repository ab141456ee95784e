/**
 * Google's `:embedContent` and `:batchEmbedContents` in-process over the builtin `hash` model, whose vectors
 * are as long as the `dimensions` it is given: each of a batch's requests gets the `outputDimensionality` it
 * asked for, whatever the others asked, in one client request with one usage record.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

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
