/**
 * An upstream that reports no usage has its answer counted by the gateway (`tokens_estimated`): a legacy
 * `function_call`'s arguments (OpenAI's answer to a request with `functions`: `message.function_call`, streamed
 * as `delta.function_call`) are output the model wrote, counted as content is, in a JSON answer and in a stream,
 * never left out as if the answer had said nothing.
 */
import { assertCountedAlike, type OwnCountCase } from "../helpers/own_count.ts";
import { dataEvents, jsonStep, sseStep } from "../helpers/raw_upstream.ts";

const TEXT = '{"location":"Reykjavik, Iceland","unit":"celsius","days":5,"include":["wind","humidity"]}';

/** Where the upstream says {@linkcode TEXT}: as content, or as a legacy `function_call`'s arguments. */
type Kind = "content" | "function_call";

/** A chat completion saying {@linkcode TEXT} as a kind, without any usage. */
const CHAT: OwnCountCase<Kind> = {
  provider: (url) => `{ type: openai, base_url: "${url}/v1", api_key: sk-scripted-0123456789 }`,
  answer(kind, stream) {
    const base = { id: "chatcmpl-u", created: 1, model: "m" };
    const piece = (text: string) =>
      kind === "content" ? { content: text } : { function_call: { name: "get_weather", arguments: text } };
    const finish = kind === "content" ? "stop" : "function_call";
    if (!stream) {
      const message = { role: "assistant", content: null, ...piece(TEXT) };
      return jsonStep({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: finish }],
      });
    }
    const chunk = (delta: unknown, reason: string | null = null) => ({
      ...base,
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta, finish_reason: reason }],
    });
    return sseStep(dataEvents([
      chunk({ role: "assistant", content: kind === "content" ? "" : null }),
      chunk(piece(TEXT.slice(0, 30))),
      chunk(kind === "content" ? piece(TEXT.slice(30)) : { function_call: { arguments: TEXT.slice(30) } }),
      chunk({}, finish),
    ], true));
  },
  request: ({ stream, alias, token }) => ({
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${token}` },
    body: {
      model: alias,
      stream,
      functions: [{ name: "get_weather", parameters: { type: "object" } }],
      messages: [{ role: "user", content: "weather" }],
    },
  }),
  shows: "Reykjavik",
};

for (const stream of [false, true]) {
  Deno.test(
    `function call usage: without the upstream's usage, a legacy function_call's arguments are counted as content is (${
      stream ? "stream" : "JSON"
    })`,
    () => assertCountedAlike(CHAT, "function_call", "content", stream),
  );
}
