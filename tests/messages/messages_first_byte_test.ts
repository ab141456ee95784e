/**
 * A translated Messages stream's `message_start` carries the prompt's tokens before the upstream reports any
 * (a chat upstream does at the end), so the gateway counts the prompt itself. That count used to begin only once
 * the upstream's first content was in, and the client's first byte waited for it: a token-count worker busy with
 * other streams' counts, or still loading its tokenizer (about a second), held every answer back that long. It
 * now runs while the upstream is asked.
 *
 * Seen without timing: the token-count worker announces the count as it begins (tests/helpers/
 * faulty_token_worker.ts), and the upstream holds its first content until that announcement (at most 5 s). The
 * count must have begun while the upstream still held its answer.
 *
 * @module
 */
import assert from "node:assert/strict";
import { tokenCounter } from "../../lib/usage/token_counter.ts";
import { COUNT_ANNOUNCED } from "../helpers/count_announced.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

const WORKER = new URL("../helpers/faulty_token_worker.ts", import.meta.url);

function sse(delta: Record<string, unknown>, finish: string | null = null): string {
  const chunk = {
    id: "chatcmpl-first-byte",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "upstream-model",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

Deno.test("messages, translated stream: the prompt is counted while the upstream is asked, not after its first content", async () => {
  const releaseCounter = tokenCounter.use({ workerUrl: WORKER });
  const upstream = startRawUpstream();
  const channel = new BroadcastChannel(COUNT_ANNOUNCED);
  let announced = false;
  let heldAnswer = true;
  let countBegunWhileHeld = false;
  const begun = new Promise<void>((resolve) => {
    channel.onmessage = () => {
      announced = true;
      if (heldAnswer) countBegunWhileHeld = true;
      resolve();
    };
  });
  let bound: ReturnType<typeof setTimeout> | undefined;
  const open = Promise.race([begun, new Promise<void>((resolve) => bound = setTimeout(resolve, 5_000))])
    .then(() => heldAnswer = false);
  upstream.next = {
    headers: { "content-type": "text/event-stream" },
    chunks: [
      sse({ role: "assistant", content: "Counted early." }),
      sse({}, "stop"),
      "data: [DONE]\n\n",
    ],
    hold: { at: 0, open },
  };
  const gateway = await startGateway(`
providers:
  up: { type: openai, base_url: "${upstream.url}/v1", api_key: "sk-up" }
models:
  chat-a: { type: chat, targets: [{ provider: up, model: upstream-model, retries: 0 }] }
${TEST_TOKENS_YAML}`);
  try {
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": TEST_TOKEN,
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
      },
      body: JSON.stringify({
        model: "chat-a",
        max_tokens: 100,
        stream: true,
        messages: [{ role: "user", content: "announce-the-count: how early is the prompt counted?" }],
      }),
    });
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.match(text, /event: message_start/);
    assert.match(text, /Counted early\./);
    assert.match(text, /event: message_stop/);
    assert.ok(announced, "the gateway counted the prompt");
    assert.ok(countBegunWhileHeld, "the count began only after the upstream's first content");
  } finally {
    clearTimeout(bound);
    channel.close();
    await gateway.stop();
    await upstream.stop();
    releaseCounter();
  }
});
