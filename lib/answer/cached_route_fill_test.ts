/**
 * `filling` on a streamed chat-form miss: the client gets every chunk as the upstream sent it, and the entry is
 * written only for an answer within `cache.max_entry_bytes`; a longer one is abandoned (its waiters go
 * upstream as soon as it passes the bound, not when it ends), having been dropped from memory then
 * (lib/cache/chunk_accumulator.ts).
 */
import assert from "node:assert/strict";
import type { ResolvedAliasCache } from "../config/types.ts";
import type { RoutedAnswer } from "../http/route_request.ts";
import type { ChatCompletionChunk, ChatRequest } from "../openai/types.ts";
import type { Fill } from "../cache/response_cache.ts";
import type { CachedAnswer } from "../cache/types.ts";
import type { ChatAnswer, NativeAnswer } from "./routed.ts";
import { filling } from "./cached_route.ts";

const SETTINGS: ResolvedAliasCache = {
  ttlMs: 600_000,
  scope: "token",
  incomplete: false,
  toolCalls: false,
  n: false,
  version: "v1",
  semantic: null,
};
const CHAT: ChatRequest = { model: "cached", messages: [{ role: "user", content: "big" }], stream: true };
const PIECE = "x".repeat(4096);

function chunk(delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk {
  return {
    id: "chatcmpl-up",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
}

/** A streamed answer of `pieces` 4 KiB pieces, as the router hands it over. */
function streamed(pieces: number): RoutedAnswer<ChatAnswer | NativeAnswer> {
  const rest = [...Array.from({ length: pieces }, () => chunk({ content: PIECE })), chunk({}, "stop")];
  const reader = new ReadableStream<ChatCompletionChunk>({
    start(controller) {
      for (const c of rest) controller.enqueue(c);
      controller.close();
    },
  }).getReader();
  const target = { provider: "up", model: "m" };
  return {
    value: { kind: "stream", stream: { first: chunk({ role: "assistant", content: "" }), rest: reader } },
    target,
    lease: { probe: false, succeeded() {}, failed() {}, release() {} },
    headers: new Headers(),
  } as unknown as RoutedAnswer<ChatAnswer | NativeAnswer>;
}

/** A fill that says what happened to it. */
function recordingFill(): Fill & { written: CachedAnswer[]; abandoned: number } {
  const fill = {
    writes: true,
    written: [] as CachedAnswer[],
    abandoned: 0,
    write(answer: CachedAnswer) {
      fill.written.push(answer);
    },
    abandon() {
      fill.abandoned++;
    },
  };
  return fill;
}

/** Reads the client's side of the answer to its end: the content it got. */
async function drain(routed: RoutedAnswer<ChatAnswer | NativeAnswer>): Promise<number> {
  assert.equal(routed.value.kind, "stream");
  if (routed.value.kind !== "stream") return 0;
  let content = 0;
  for (;;) {
    const next = await routed.value.stream.rest.read();
    if (next.done) return content;
    const delta = next.value.choices[0]?.delta as { content?: string } | undefined;
    content += (delta?.content ?? "").length;
  }
}

Deno.test("filling: a stream past max_entry_bytes reaches the client whole and fills nothing", async () => {
  const fill = recordingFill();
  const got = await drain(filling(streamed(64), CHAT, SETTINGS, fill, 64 * 1024));
  assert.equal(got, 64 * PIECE.length, "the client got every piece");
  assert.deepEqual([fill.written.length, fill.abandoned], [0, 1], "abandoned, never written");
});

Deno.test("filling: a stream within max_entry_bytes is written whole", async () => {
  const fill = recordingFill();
  await drain(filling(streamed(15), CHAT, SETTINGS, fill, 64 * 1024));
  assert.deepEqual([fill.written.length, fill.abandoned], [1, 0]);
  const message = fill.written[0].completion?.choices[0].message as { content: string };
  assert.equal(message.content.length, 15 * PIECE.length);
});

Deno.test("filling: a stream is abandoned as soon as it passes max_entry_bytes, not when it ends", async () => {
  const fill = recordingFill();
  const routed = filling(streamed(64), CHAT, SETTINGS, fill, 64 * 1024);
  assert.equal(routed.value.kind, "stream");
  if (routed.value.kind !== "stream") return;
  // 16 pieces of 4 KiB fit in 64 KiB; the 17th passes the bound, with 47 pieces and the finish still to come.
  for (let i = 0; i < 17; i++) assert.equal((await routed.value.stream.rest.read()).done, false);
  assert.deepEqual([fill.written.length, fill.abandoned], [0, 1], "its waiters are let go mid-stream");
  await drain(routed);
  assert.deepEqual([fill.written.length, fill.abandoned], [0, 1], "and told once");
});
