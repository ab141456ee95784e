/**
 * An OpenAI-compatible chat upstream whose answer the test writes per request, as a list of pieces: the
 * content of a JSON answer is their concatenation, a stream sends one chunk per piece (so a test chooses
 * exactly where chunk boundaries fall). Pieces of a tool call's arguments likewise. Records every request body,
 * so a test can assert what the upstream saw.
 *
 * @module
 */
import type { JsonObject } from "../../lib/openai/types.ts";

/** The answer to one request. */
export interface ScriptedAnswer {
  content?: string[];
  /** Reasoning before the content (`reasoning_content`, as DeepSeek and vLLM send it), in these pieces. */
  reasoning?: string[];
  /** One tool call whose arguments arrive in these pieces. */
  toolArguments?: string[];
  /** The message's `annotations` (web search citations); a stream sends them in one delta after the content. */
  annotations?: JsonObject[];
}

export interface ScriptedChat {
  baseURL: string;
  /** Every request body, in order. */
  seen: JsonObject[];
  /** Decides the answer from the request (default: "ok"). */
  answer: (body: JsonObject) => ScriptedAnswer;
  stop(): Promise<void>;
}

const sse = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;

export function startScriptedChat(): ScriptedChat {
  const chat: ScriptedChat = {
    baseURL: "",
    seen: [],
    answer: () => ({ content: ["ok"] }),
    stop: () => server.shutdown(),
  };
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    chat.seen.push(body);
    const { content = [], toolArguments, reasoning, annotations } = chat.answer(body);
    const base = { id: "chatcmpl-scripted", created: 1, model: String(body.model) };
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    const finish = toolArguments ? "tool_calls" : "stop";
    if (body.stream !== true) {
      const message: JsonObject = { role: "assistant", content: toolArguments ? null : content.join("") };
      if (reasoning) message.reasoning_content = reasoning.join("");
      if (annotations) message.annotations = annotations;
      if (toolArguments) {
        message.tool_calls = [{
          id: "call_1",
          type: "function",
          function: { name: "lookup", arguments: toolArguments.join("") },
        }];
      }
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: finish }],
        usage,
      });
    }
    const chunk = (delta: JsonObject, finishReason: string | null = null) =>
      sse({
        ...base,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta, finish_reason: finishReason }],
      });
    const parts = [chunk({ role: "assistant", content: "" })];
    for (const piece of reasoning ?? []) parts.push(chunk({ reasoning_content: piece }));
    for (const piece of content) parts.push(chunk({ content: piece }));
    if (annotations) parts.push(chunk({ annotations }));
    (toolArguments ?? []).forEach((piece, i) =>
      parts.push(chunk({
        tool_calls: [{
          index: 0,
          ...(i === 0 ? { id: "call_1", type: "function", function: { name: "lookup", arguments: piece } } : {
            function: { arguments: piece },
          }),
        }],
      }))
    );
    parts.push(chunk({}, finish));
    parts.push(sse({ ...base, object: "chat.completion.chunk", choices: [], usage }));
    parts.push("data: [DONE]\n\n");
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const p of parts) controller.enqueue(encoder.encode(p));
        controller.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  });
  chat.baseURL = `http://127.0.0.1:${server.addr.port}/v1`;
  return chat;
}
