/** The Azure stream stage on a recorded stream, split at every byte offset. */
import assert from "node:assert/strict";
import { sseParseTransformer } from "../../sse/parse.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import { azureChunkTransformer } from "./stream.ts";
import { openAIChunkTransformer } from "../openai/stream.ts";
import type { ChatCompletionChunk } from "../../openai/types.ts";

const CF_SAFE =
  '{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}';
const ID =
  '"created":1736407895,"id":"chatcmpl-AnhIt2rw8vL8czymkCwEOKKTg7HPc","model":"gpt-4o-mini-2024-07-18"';
const TAIL = `${ID},"object":"chat.completion.chunk","system_fingerprint":"fp_5154047bf2","usage":null}`;
const RECORDED_STREAM = [
  `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}}],"usage":null}`,
  `data: {"choices":[{"content_filter_results":{},"delta":{"content":"","refusal":null,"role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}],${TAIL}`,
  `data: {"choices":[{"content_filter_results":${CF_SAFE},"delta":{"content":"Grüße"},"finish_reason":null,"index":0,"logprobs":null}],${TAIL}`,
  `data: {"choices":[{"content_filter_results":${CF_SAFE},"delta":{"content":" aus Köln 🌧"},"finish_reason":null,"index":0,"logprobs":null}],${TAIL}`,
  `data: {"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],${TAIL}`,
  `data: {"id":"","object":"","created":0,"model":"","choices":[{"index":0,"finish_reason":null,"content_filter_results":${CF_SAFE},"content_filter_offsets":{"check_offset":30,"start_offset":0,"end_offset":30}}],"usage":null}`,
  `data: {"choices":[],${ID},"object":"chat.completion.chunk","system_fingerprint":"fp_5154047bf2","usage":{"completion_tokens":6,"prompt_tokens":14,"total_tokens":20}}`,
  "data: [DONE]",
  "",
].join("\n\n");

async function runAzureStages(parts: Uint8Array[]): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  const chunks = runStages(
    parts,
    sseParseTransformer(),
    openAIChunkTransformer("az"),
    azureChunkTransformer(),
  );
  for await (const chunk of chunks) out.push(chunk);
  return out;
}

Deno.test("azure stream: the recorded stream becomes OpenAI-shaped chunks with annotations kept", async () => {
  const chunks = await runAzureStages([new TextEncoder().encode(RECORDED_STREAM)]);
  assert.equal(chunks.length, 6, "the annotation-only first chunk is folded into the role chunk");
  for (const chunk of chunks) {
    assert.equal(chunk.object, "chat.completion.chunk");
    assert.equal(chunk.id, "chatcmpl-AnhIt2rw8vL8czymkCwEOKKTg7HPc");
    assert.equal(chunk.created, 1736407895);
  }
  const [role, c1, c2, finish, annotation, usage] = chunks;
  const prompt = role.prompt_filter_results as { content_filter_results: { jailbreak: unknown } }[];
  assert.deepEqual(prompt[0].content_filter_results.jailbreak, { filtered: false, detected: false });
  assert.deepEqual(role.choices[0].delta, { content: "", refusal: null, role: "assistant" });
  assert.equal("prompt_filter_results" in c1, false, "annotations are added once");
  assert.equal(
    `${(c1.choices[0].delta as { content: string }).content}${
      (c2.choices[0].delta as { content: string }).content
    }`,
    "Grüße aus Köln 🌧",
  );
  assert.deepEqual(c1.choices[0].content_filter_results, JSON.parse(CF_SAFE));
  assert.equal(finish.choices[0].finish_reason, "stop");
  assert.deepEqual(annotation.choices[0].delta, {}, "a choice without delta gets an empty one");
  assert.deepEqual(annotation.choices[0].content_filter_offsets, {
    check_offset: 30,
    start_offset: 0,
    end_offset: 30,
  });
  assert.deepEqual(usage.choices, []);
  assert.deepEqual(usage.usage, { completion_tokens: 6, prompt_tokens: 14, total_tokens: 20 });
});

Deno.test("azure stream: the same chunks wherever the recorded stream is split", async () => {
  const bytes = new TextEncoder().encode(RECORDED_STREAM);
  const whole = await runAzureStages([bytes]);
  for (let i = 1; i < bytes.length; i++) {
    const split = await runAzureStages([bytes.slice(0, i), bytes.slice(i)]);
    assert.deepEqual(split, whole, `split at byte ${i}`);
  }
});

Deno.test("azure stream: a content-filter finish in an annotation chunk passes through", async () => {
  // content-streaming docs, "Sample response stream (blocked by filters)".
  const text = [
    `data: {"id":"","object":"","created":0,"model":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":${CF_SAFE}}],"choices":[],"usage":null}`,
    `data: {"id":"chatcmpl-8JCbt5d4luUIhYCI7YH4dQK7hnHx2","object":"chat.completion.chunk","created":1699587397,"model":"gpt-35-turbo","choices":[{"index":0,"finish_reason":null,"delta":{"role":"assistant"}}],"usage":null}`,
    `data: {"id":"chatcmpl-8JCbt5d4luUIhYCI7YH4dQK7hnHx2","object":"chat.completion.chunk","created":1699587397,"model":"gpt-35-turbo","choices":[{"index":0,"finish_reason":null,"delta":{"content":"Hey"}}],"usage":null}`,
    `data: {"id":"","object":"","created":0,"model":"","choices":[{"index":0,"finish_reason":"content_filter","content_filter_results":{"protected_material_text":{"detected":true,"filtered":true}},"content_filter_offsets":{"check_offset":65,"start_offset":65,"end_offset":1056}}],"usage":null}`,
    "data: [DONE]",
    "",
  ].join("\n\n");
  const chunks = await runAzureStages([new TextEncoder().encode(text)]);
  assert.equal(chunks.length, 3);
  const last = chunks[2];
  assert.equal(last.id, "chatcmpl-8JCbt5d4luUIhYCI7YH4dQK7hnHx2");
  assert.equal(last.choices[0].finish_reason, "content_filter");
  assert.deepEqual(last.choices[0].delta, {});
  assert.deepEqual(last.choices[0].content_filter_results, {
    protected_material_text: { detected: true, filtered: true },
  });
});
