/**
 * A native Messages target that reports no usage has its answer counted by the gateway (`tokens_estimated`): a
 * `tool_use` block's input, and a `server_tool_use` block's (a web search's query: the model wrote it, the vendor
 * bills it as output), are counted as the same text in a `text` block is, in a JSON answer and in a stream
 * (`input_json_delta`).
 */
import { assertCountedAlike, type OwnCountCase } from "../helpers/own_count.ts";
import { jsonStep, sseStep, typedEvents } from "../helpers/raw_upstream.ts";

const INPUT = { query: "latest stable release of the Deno runtime and its notable changes", max_results: 5 };
const TEXT = JSON.stringify(INPUT);

/** The block the upstream says {@linkcode TEXT} in. */
type Kind = "text" | "tool_use" | "server_tool_use";

/** An Anthropic Message of one block of a kind holding {@linkcode TEXT}, without any usage. */
const MESSAGES: OwnCountCase<Kind> = {
  provider: (url) => `{ type: anthropic, base_url: "${url}", api_key: sk-ant-scripted-0123456789 }`,
  answer(kind, stream) {
    const name = kind === "server_tool_use" ? "web_search" : "search";
    const block = (whole: boolean) =>
      kind === "text"
        ? { type: "text", text: whole ? TEXT : "" }
        : { type: kind, id: "toolu_1", name, input: whole ? INPUT : {} };
    const message = (content: unknown[]) => ({
      id: "msg_u",
      type: "message",
      role: "assistant",
      model: "m",
      content,
      stop_reason: null,
      stop_sequence: null,
    });
    const stop = kind === "tool_use" ? "tool_use" : "end_turn";
    if (!stream) return jsonStep({ ...message([block(true)]), stop_reason: stop });
    const delta = (piece: string) =>
      kind === "text"
        ? { type: "text_delta", text: piece }
        : { type: "input_json_delta", partial_json: piece };
    return sseStep(typedEvents([
      { type: "message_start", message: message([]) },
      { type: "content_block_start", index: 0, content_block: block(false) },
      { type: "content_block_delta", index: 0, delta: delta(TEXT.slice(0, 25)) },
      { type: "content_block_delta", index: 0, delta: delta(TEXT.slice(25)) },
      { type: "content_block_stop", index: 0 },
      { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null } },
      { type: "message_stop" },
    ]));
  },
  request: ({ stream, alias, token }) => ({
    path: "/v1/messages",
    headers: { "x-api-key": token, "anthropic-version": "2023-06-01" },
    body: {
      model: alias,
      max_tokens: 100,
      stream,
      tools: [
        { name: "search", input_schema: { type: "object" } },
        { type: "web_search_20250305", name: "web_search" },
      ],
      messages: [{ role: "user", content: "search" }],
    },
  }),
  shows: "Deno runtime",
};

for (const stream of [false, true]) {
  for (const kind of ["tool_use", "server_tool_use"] as const) {
    Deno.test(
      `messages native usage: without the upstream's usage, a ${kind} block's input is counted as text is (${
        stream ? "stream" : "JSON"
      })`,
      () => assertCountedAlike(MESSAGES, kind, "text", stream),
    );
  }
}
