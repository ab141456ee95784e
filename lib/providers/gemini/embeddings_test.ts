/**
 * Embedding translation (https://ai.google.dev/api/embeddings) and the transport's URL and header rules.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { geminiHeaders, geminiUrl, modelPath } from "./adapter.ts";
import {
  batchEmbedBody,
  embedContentBody,
  embeddingTexts,
  embedFieldsOf,
  parseBatchEmbed,
  parseEmbedContent,
  readTexts,
} from "./embeddings.ts";
import type { EmbeddingRequest } from "../../openai/types.ts";

const req = (input: EmbeddingRequest["input"]): EmbeddingRequest => ({ model: "alias", input });

Deno.test("gemini embeddings: request bodies, dimensions → outputDimensionality", () => {
  assert.deepEqual(embedContentBody("What is the meaning of life?", 256), {
    content: { parts: [{ text: "What is the meaning of life?" }] },
    outputDimensionality: 256,
  });
  assert.deepEqual(embedContentBody("hi"), { content: { parts: [{ text: "hi" }] } });
  assert.deepEqual(batchEmbedBody("models/gemini-embedding-001", ["a", "b"]), {
    requests: [
      { model: "models/gemini-embedding-001", content: { parts: [{ text: "a" }] } },
      { model: "models/gemini-embedding-001", content: { parts: [{ text: "b" }] } },
    ],
  });
});

Deno.test("gemini embeddings: each input's taskType and title go with it; nothing else of the call's geminiFields", () => {
  const sent = [{ taskType: "RETRIEVAL_DOCUMENT", title: "A", content: "no" }, {}, { taskType: null }];
  const fields = embedFieldsOf(sent, 3);
  assert.deepEqual(fields, [{ taskType: "RETRIEVAL_DOCUMENT", title: "A" }, {}, {}]);
  assert.deepEqual(embedFieldsOf(undefined, 1), [{}]);
  assert.deepEqual(embedContentBody("a", 8, fields[0]), {
    content: { parts: [{ text: "a" }] },
    taskType: "RETRIEVAL_DOCUMENT",
    title: "A",
    outputDimensionality: 8,
  });
  assert.deepEqual(batchEmbedBody("models/m", ["a", "b"], undefined, fields).requests, [
    { model: "models/m", content: { parts: [{ text: "a" }] }, taskType: "RETRIEVAL_DOCUMENT", title: "A" },
    { model: "models/m", content: { parts: [{ text: "b" }] } },
  ]);
});

Deno.test("gemini embeddings: what a call has the model read, for the gateway's own count: its texts, then their titles", () => {
  const fields = embedFieldsOf([{ taskType: "RETRIEVAL_DOCUMENT", title: "A" }, {}, { title: "C" }], 3);
  assert.deepEqual(readTexts(["a", "b", "c"], fields), ["a", "b", "c", "A", "C"]);
  assert.deepEqual(readTexts(["a"], [{ taskType: "CLUSTERING" }]), ["a"]);
  assert.deepEqual(readTexts(["a"], []), ["a"]);
});

Deno.test("gemini embeddings: texts; token-id input → 400 naming input", () => {
  assert.deepEqual(embeddingTexts(req("x")), ["x"]);
  assert.deepEqual(embeddingTexts(req(["x", "y"])), ["x", "y"]);
  for (const input of [[1, 2, 3], [[1, 2], [3]]]) {
    assert.throws(() => embeddingTexts(req(input)), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 400);
      assert.equal(err.param, "input");
      return true;
    });
  }
});

Deno.test("gemini embeddings: answers → vectors; malformed → 502", () => {
  assert.deepEqual(parseEmbedContent("gem", { embedding: { values: [0.1, -0.2] } }), [0.1, -0.2]);
  assert.deepEqual(parseBatchEmbed("gem", { embeddings: [{ values: [1] }, { values: [2] }] }, 2), [[1], [2]]);
  const bad: [unknown, number][] = [
    [{ embeddings: [{ values: [1] }] }, 2],
    [{ embeddings: [{ values: ["x"] }] }, 1],
    [{}, 1],
  ];
  for (const [body, n] of bad) {
    assert.throws(() => parseBatchEmbed("gem", body, n), (e: unknown) => (e as GatewayError).status === 502);
  }
  assert.throws(
    () => parseEmbedContent("gem", { embedding: {} }),
    (e: unknown) => (e as GatewayError).status === 502,
  );
});

Deno.test("gemini transport: the model is in the path, the key only in x-goog-api-key", () => {
  assert.equal(modelPath("gemini-2.5-flash"), "models/gemini-2.5-flash");
  assert.equal(modelPath("tunedModels/my-model"), "tunedModels/my-model");
  assert.equal(modelPath("a b"), "models/a%20b");
  const base = "https://generativelanguage.googleapis.com/v1beta/";
  assert.equal(
    geminiUrl(base, "gemini-2.5-flash", "streamGenerateContent", true),
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
  );
  const config = {
    type: "gemini" as const,
    base_url: base,
    api_key: "AIzaKEY",
    headers: { "X-Goog-Api-Key": "override-attempt", "x-extra": "1" },
    timeouts: {},
    unsupported_params: "error" as const,
  };
  const headers = geminiHeaders(config, false);
  assert.equal(headers["x-goog-api-key"], "AIzaKEY");
  assert.equal(headers["x-extra"], "1");
  assert.equal("X-Goog-Api-Key" in headers, false);
  assert.equal(geminiUrl(base, "m", "generateContent").includes("key="), false);
});
