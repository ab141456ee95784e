/**
 * An upstream that reports no usage has its answer counted by the gateway (`tokens_estimated`): a custom
 * (freeform) tool's call input is output the model wrote, counted as a function call's arguments are, in a
 * JSON answer and in a stream, never left out as if the answer had said nothing.
 */
import { assertCountedAlike, type OwnCountCase } from "../helpers/own_count.ts";
import { dataEvents, jsonStep, sseStep } from "../helpers/raw_upstream.ts";

const INPUT = "*** Begin Patch\n*** Update File: src/main.ts\n-const a = 1;\n+const a = 2;\n*** End Patch";

type Kind = "custom" | "function";

/** A chat completion answering one tool call of a kind with {@linkcode INPUT} as its text, without any usage. */
const CHAT: OwnCountCase<Kind> = {
  provider: (url) => `{ type: openai, base_url: "${url}/v1", api_key: sk-scripted-0123456789 }`,
  answer(kind, stream) {
    const base = { id: "chatcmpl-u", created: 1, model: "m" };
    const piece = (text: string) =>
      kind === "custom" ? { custom: { name: "apply_patch", input: text } } : {
        function: { name: "apply_patch", arguments: text },
      };
    if (!stream) {
      const call = { id: "call_1", type: kind, ...piece(INPUT) };
      const message = { role: "assistant", content: null, tool_calls: [call] };
      return jsonStep({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: "tool_calls" }],
      });
    }
    const chunk = (delta: unknown, finish: string | null = null) => ({
      ...base,
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    return sseStep(dataEvents([
      chunk({
        role: "assistant",
        content: null,
        tool_calls: [{ index: 0, id: "call_1", type: kind, ...piece("") }],
      }),
      chunk({ tool_calls: [{ index: 0, ...piece(INPUT.slice(0, 20)) }] }),
      chunk({ tool_calls: [{ index: 0, ...piece(INPUT.slice(20)) }] }),
      chunk({}, "tool_calls"),
    ], true));
  },
  request: ({ kind, stream, alias, token }) => ({
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${token}` },
    body: {
      model: alias,
      stream,
      tools: [
        kind === "custom"
          ? { type: "custom", custom: { name: "apply_patch" } }
          : { type: "function", function: { name: "apply_patch", parameters: { type: "object" } } },
      ],
      messages: [{ role: "user", content: "patch" }],
    },
  }),
  shows: "apply_patch",
};

for (const stream of [false, true]) {
  Deno.test(
    `custom call usage: without the upstream's usage, a custom call's input is counted as arguments are (${
      stream ? "stream" : "JSON"
    })`,
    () => assertCountedAlike(CHAT, "custom", "function", stream),
  );
}
