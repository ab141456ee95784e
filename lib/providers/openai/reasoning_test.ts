/**
 * Reasoning from OpenAI-compatible servers: DeepSeek's `reasoning_content` and vLLM/OpenRouter's `reasoning`
 * both reach the client as `reasoning_content`, in whole answers and in streams split at every byte.
 */
import assert from "node:assert/strict";
import { sseParseTransformer } from "../../sse/parse.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import type { ChatCompletionChunk, JsonObject } from "../../openai/types.ts";
import { normalizeReasoning } from "./reasoning.ts";
import { chatCompletionFrom } from "./response.ts";
import { openAIChunkTransformer } from "./stream.ts";

Deno.test("reasoning: `reasoning` becomes `reasoning_content`; non-strings are left out; null stays", () => {
  const cases: [JsonObject, JsonObject][] = [
    [{ content: null, reasoning: "Let me think." }, { content: null, reasoning_content: "Let me think." }],
    [{ reasoning_content: "kept", reasoning: "other" }, { reasoning_content: "kept" }],
    [{ reasoning_content: null, reasoning: "from alias" }, { reasoning_content: "from alias" }],
    [{ content: "x", reasoning: null }, { content: "x" }],
    [{ reasoning: { effort: "high" } }, {}],
    [{ reasoning_content: 42, content: "x" }, { content: "x" }],
    [{ reasoning_content: null, content: "x" }, { reasoning_content: null, content: "x" }],
  ];
  for (const [input, expected] of cases) {
    const fields = structuredClone(input);
    normalizeReasoning(fields);
    assert.deepEqual(JSON.parse(JSON.stringify(fields)), expected, JSON.stringify(input));
  }
});

Deno.test("reasoning: a whole answer's message carries `reasoning_content` and its reasoning token count", () => {
  const body = {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "qwen3",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "4", reasoning: "2 + 2 is 4." },
      finish_reason: "stop",
    }],
    usage: {
      prompt_tokens: 9,
      completion_tokens: 12,
      total_tokens: 21,
      completion_tokens_details: { reasoning_tokens: 8 },
    },
  };
  const completion = chatCompletionFrom("vllm", body);
  assert.deepEqual(JSON.parse(JSON.stringify(completion.choices[0].message)), {
    role: "assistant",
    content: "4",
    reasoning_content: "2 + 2 is 4.",
  });
  assert.deepEqual(completion.usage?.completion_tokens_details, { reasoning_tokens: 8 });
});

const ID = '"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"m"';
const frame = (delta: JsonObject, finish: string | null = null) =>
  `data: {${ID},"choices":[{"index":0,"delta":${JSON.stringify(delta)},"finish_reason":${
    JSON.stringify(finish)
  }}]}\n\n`;

/** A vLLM-style stream (`reasoning`) and a DeepSeek-style one (`reasoning_content`, null on content deltas). */
const STREAMS: Record<string, string> = {
  vllm: frame({ role: "assistant", content: "" }) + frame({ reasoning: "Two and " }) +
    frame({ reasoning: "two, café ☕." }) + frame({ content: "4" }) + frame({}, "stop") + "data: [DONE]\n\n",
  deepseek: frame({ role: "assistant", content: null, reasoning_content: "" }) +
    frame({ content: null, reasoning_content: "Two and " }) +
    frame({ content: null, reasoning_content: "two, café ☕." }) +
    frame({ content: "4", reasoning_content: null }) + frame({}, "stop") + "data: [DONE]\n\n",
};

async function run(parts: Uint8Array[]): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const chunk of runStages(parts, sseParseTransformer(), openAIChunkTransformer("up"))) {
    out.push(chunk);
  }
  return out;
}

Deno.test("reasoning: streamed reasoning arrives as `reasoning_content` deltas at every chunk boundary", async () => {
  for (const [name, text] of Object.entries(STREAMS)) {
    const bytes = new TextEncoder().encode(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const chunks = await run([bytes.slice(0, cut), bytes.slice(cut)]);
      const deltas = chunks.map((c) => JSON.parse(JSON.stringify(c.choices[0].delta)) as JsonObject);
      const reasoning = deltas.map((d) => typeof d.reasoning_content === "string" ? d.reasoning_content : "")
        .join("");
      const content = deltas.map((d) => typeof d.content === "string" ? d.content : "").join("");
      assert.equal(reasoning, "Two and two, café ☕.", `${name} cut at ${cut}`);
      assert.equal(content, "4", `${name} cut at ${cut}: reasoning is not mixed into content`);
      assert.ok(deltas.every((d) => !("reasoning" in d)), `${name}: one name for reasoning`);
      assert.equal(chunks.at(-1)!.choices[0].finish_reason, "stop");
    }
  }
});
