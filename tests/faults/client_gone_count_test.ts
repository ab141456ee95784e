/**
 * A client that leaves while the gateway counts tokens itself (the upstream reported no usage; a count endpoint
 * whose target cannot count) and its token-count worker is slow to answer (its tokenizer loading, or busy): the
 * request is recorded 499 `client_closed_request`, as one whose client leaves while the upstream is asked is,
 * with what the upstream's answer spent counted roughly. It used to wait for the count and be recorded as the 2xx
 * its client never got.
 *
 * Timing-free and in-process (the handler, no socket): the token-count worker (tests/helpers/
 * faulty_token_worker.ts) holds every count of a text with `hold-the-count` and announces it as it begins; each
 * count here begins after the upstream answered, so the client leaves while only the count is left. The held
 * counts are then given up (the counter released: the rough estimate, as a worker that died gives), which an
 * answer that did not end with its request would have been sent with.
 *
 * @module
 */
import assert from "node:assert/strict";
import { tokenCounter } from "../../lib/usage/token_counter.ts";
import { COUNT_ANNOUNCED } from "../helpers/count_announced.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { inProcessGateway } from "../helpers/in_process.ts";
import { type RawRequest, type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";

const WORKER = new URL("../helpers/faulty_token_worker.ts", import.meta.url);
/** A text whose count the worker holds. */
const HELD = "hold-the-count: how many tokens is this?";

/** The upstream's answers, none with usage: a chat completion, a moderation. */
function answer(request: RawRequest): RawStep {
  const body = request.path.endsWith("/moderations")
    ? { id: "modr-1", model: "m", results: [{ flagged: false, categories: {}, category_scores: {} }] }
    : {
      id: "chatcmpl-gone",
      object: "chat.completion",
      created: 1_700_000_000,
      model: "m",
      choices: [{
        index: 0,
        message: { role: "assistant", content: "Counted by the gateway." },
        finish_reason: "stop",
      }],
    };
  return { status: 200, headers: { "content-type": "application/json" }, chunks: [JSON.stringify(body)] };
}

const CASES: {
  name: string;
  path: string;
  body: unknown;
  headers?: Record<string, string>;
  spends: boolean;
}[] = [
  {
    name: "chat completion without usage",
    path: "/v1/chat/completions",
    body: { model: "chat-a", messages: [{ role: "user", content: HELD }] },
    spends: true,
  },
  {
    name: "Responses answer without usage",
    path: "/v1/responses",
    body: { model: "chat-a", input: HELD, store: false },
    spends: true,
  },
  {
    name: "moderation (always counted)",
    path: "/v1/moderations",
    body: { model: "mod-a", input: HELD },
    spends: true,
  },
  {
    name: "Messages count_tokens the gateway counts",
    path: "/v1/messages/count_tokens",
    body: { model: "chat-a", messages: [{ role: "user", content: HELD }] },
    headers: { "anthropic-version": "2023-06-01" },
    spends: false,
  },
];

for (const c of CASES) {
  Deno.test(`client gone while the gateway counts: ${c.name} is recorded 499`, async () => {
    const releaseCounter = tokenCounter.use({ workerUrl: WORKER });
    const upstream = startRawUpstream();
    upstream.stepFor = answer;
    const channel = new BroadcastChannel(COUNT_ANNOUNCED);
    let released = false;
    try {
      const begun = new Promise<void>((resolve) => channel.onmessage = () => resolve());
      const gw = inProcessGateway(`
providers:
  up: { type: openai, base_url: "${upstream.url}/v1", api_key: sk-test-gone-upstream }
models:
  chat-a: { type: chat, targets: [{ provider: up, model: m, retries: 0 }] }
  mod-a: { type: moderation, targets: [{ provider: up, model: m, retries: 0 }] }
${TEST_TOKENS_YAML}`);
      const client = new AbortController();
      const answered = gw.fetch(c.path, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_TOKEN}`,
          "content-type": "application/json",
          "x-request-id": "gone-counting",
          ...c.headers,
        },
        body: JSON.stringify(c.body),
        signal: client.signal,
      });
      await begun;
      client.abort();
      // The held counts given up: the rough estimate, as an answer waiting on them would now be sent with.
      releaseCounter();
      released = true;
      const response = await answered;
      assert.equal(response.status, 499);
      await response.body?.cancel();
      assert.equal(gw.records.length, 1, "one record for the request");
      const record = gw.records[0];
      assert.equal(record.status, 499);
      assert.equal(record.error_code, "client_closed_request");
      if (c.spends) {
        // The upstream answered: what it spent is kept, counted roughly.
        assert.equal(record.tokens_estimated, true);
        assert.ok(record.prompt_tokens > 0, `prompt tokens ${record.prompt_tokens}`);
      }
    } finally {
      channel.close();
      if (!released) releaseCounter();
      await upstream.stop();
    }
  });
}
