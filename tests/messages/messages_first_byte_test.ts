/**
 * A translated Messages stream's `message_start` carries the prompt's tokens before the upstream reports any
 * (a chat upstream does at the end), so the gateway counts the prompt itself. That count used to begin only once
 * the upstream's first content was in, and the client's first byte waited for it: a token-count worker busy with
 * other streams' counts, or still loading its tokenizer (about a second), held every answer back that long. It
 * now runs while the upstream is asked.
 *
 * Seen without timing: the token-count worker announces the count as it begins (tests/helpers/
 * faulty_token_worker.ts). When the upstream receives the request, the gateway must already have asked for the
 * count; the upstream then holds its first content until the worker announces it, which it will, however long a
 * loaded machine takes. A gateway that had not asked yet would wait for that content before asking, and the
 * two would wait for each other: the upstream answers it at once instead, and the test fails.
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
  // The gateway's requests for a count, seen on its side (it runs in this process) as they are made.
  const count = tokenCounter.count;
  let asked = false;
  tokenCounter.count = function (texts) {
    if (texts.some((text) => text.includes("announce-the-count"))) asked = true;
    return count.call(this, texts);
  };
  let heldAnswer = true;
  let countBegunWhileHeld = false;
  const begun = new Promise<void>((resolve) => {
    channel.onmessage = () => {
      if (heldAnswer) countBegunWhileHeld = true;
      resolve();
    };
  });
  let askedBeforeUpstream: boolean | undefined;
  const step = {
    headers: { "content-type": "text/event-stream" },
    chunks: [
      sse({ role: "assistant", content: "Counted early." }),
      sse({}, "stop"),
      "data: [DONE]\n\n",
    ],
  };
  upstream.stepFor = () => {
    askedBeforeUpstream = asked;
    // Asked: the worker's announcement is on its way. Not asked: nothing would come, so nothing is held.
    const open = (asked ? begun : Promise.resolve()).then(() => heldAnswer = false);
    return { ...step, hold: { at: 0, open } };
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
    assert.equal(
      askedBeforeUpstream,
      true,
      "the gateway asked for the count only after the upstream's first content",
    );
    await begun;
    assert.ok(countBegunWhileHeld, "the count began only after the upstream's first content");
  } finally {
    tokenCounter.count = count;
    channel.close();
    await gateway.stop();
    await upstream.stop();
    releaseCounter();
  }
});
