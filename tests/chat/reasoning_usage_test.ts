/**
 * An upstream that reports no usage has its answer counted by the gateway (`tokens_estimated`): what the model
 * said as reasoning (`reasoning_content`, DeepSeek's and vLLM's) or as a refusal (`refusal`) is output it
 * wrote, counted as its content is, in a JSON answer and in a stream. Left out, a reasoning model's answer
 * would be recorded (and settled against token limits and budgets) as a few tokens.
 */
import { assertCountedAlike, type OwnCountCase } from "../helpers/own_count.ts";
import { dataEvents, jsonStep, sseStep } from "../helpers/raw_upstream.ts";

const TEXT =
  "The user wants a haiku about autumn. Five syllables, then seven, then five: leaves, wind, a cold moon.";

/** The message field the upstream says {@linkcode TEXT} in. */
type Field = "content" | "reasoning_content" | "refusal";

/** A chat completion saying {@linkcode TEXT} in a field (the rest of its message empty), without any usage. */
const CHAT: OwnCountCase<Field> = {
  provider: (url) => `{ type: openai, base_url: "${url}/v1", api_key: sk-scripted-0123456789 }`,
  answer(field, stream) {
    const base = { id: "chatcmpl-u", created: 1, model: "m" };
    if (!stream) {
      const message = { role: "assistant", content: null, [field]: TEXT };
      return jsonStep({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: "stop" }],
      });
    }
    const chunk = (delta: unknown, finish: string | null = null) => ({
      ...base,
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    return sseStep(dataEvents([
      chunk({ role: "assistant", content: "" }),
      chunk({ [field]: TEXT.slice(0, 30) }),
      chunk({ [field]: TEXT.slice(30) }),
      chunk({}, "stop"),
    ], true));
  },
  request: ({ stream, alias, token }) => ({
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${token}` },
    body: { model: alias, stream, messages: [{ role: "user", content: "a haiku" }] },
  }),
  shows: "cold moon",
};

for (const stream of [false, true]) {
  for (const field of ["reasoning_content", "refusal"] as const) {
    Deno.test(
      `reasoning usage: without the upstream's usage, ${field} is counted as content is (${
        stream ? "stream" : "JSON"
      })`,
      () => assertCountedAlike(CHAT, field, "content", stream),
    );
  }
}
