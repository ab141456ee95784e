/** Helpers shared by the Anthropic stream tests: SSE events in, OpenAI chunks out. */
import { sseParseTransformer } from "../../sse/parse.ts";
import { anthropicChunkTransformer } from "./stream.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import type { ChatCompletionChunk } from "../../openai/types.ts";

export const sse = (type: string, data: string) => `event: ${type}\ndata: ${data}\n\n`;

export const encoder = new TextEncoder();

export function source(pieces: Uint8Array[], onCancel?: () => void): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < pieces.length) controller.enqueue(pieces[i++]);
      else controller.close();
    },
    cancel: onCancel,
  });
}

export function translate(pieces: Uint8Array[]): ReadableStream<ChatCompletionChunk> {
  return runStages(
    source(pieces),
    sseParseTransformer(),
    anthropicChunkTransformer({ provider: "claude", model: "m", created: 1, secrets: ["sk-ant-x"] }),
  );
}

export async function collect(pieces: Uint8Array[]): Promise<ChatCompletionChunk[]> {
  return await Array.fromAsync(translate(pieces));
}
