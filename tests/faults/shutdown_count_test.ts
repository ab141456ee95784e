/**
 * Shutdown while the gateway counts tokens itself (the upstream reported no usage, or a translated Messages
 * stream needs its prompt's count before `message_start`) and its token-count worker is slow to answer: its
 * tokenizer still loading, or busy. Every request still leaves exactly one usage record, and the record says
 * what its client got. Requests waiting on such a count used to outlive the cut: a translated Messages stream
 * was answered (a body nobody read) only once the connections were closed, and never reported; a JSON answer
 * was recorded 200 though its client got the connection closed with no answer; and a request whose record
 * waited on a count was still open at the end of the cut window ("shutdown_unreported_requests").
 *
 * Timing-free: the token-count worker (tests/helpers/faulty_token_worker.ts) holds every count of a text with
 * `hold-the-count` until the gateway's stop ends it, and announces the count when it begins. In-process (over
 * real sockets, with the gateway's own token-count worker swapped for that one): the single binary cannot be
 * given a test's worker.
 *
 * @module
 */
import assert from "node:assert/strict";
import { loadConfigFile } from "../../lib/config/load.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { denoRuntime } from "../../lib/runtime/deno.ts";
import type { Runtime } from "../../lib/runtime/types.ts";
import { startServer } from "../../lib/serve.ts";
import { COUNT_ANNOUNCED } from "../helpers/count_announced.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { dataEvents, type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";

const WORKER = new URL("../helpers/faulty_token_worker.ts", import.meta.url);
const GRACE_MS = 300;
/** A prompt whose count the worker holds. */
const HELD = "hold-the-count: how many tokens is this?";

/** An OpenAI-compatible answer without usage: a stream of one text, or the whole completion. */
function answerWithoutUsage(stream: boolean): RawStep {
  const base = { id: "chatcmpl-count", created: 1_700_000_000, model: "upstream-model" };
  if (!stream) {
    const message = { role: "assistant", content: "Counted by the gateway." };
    const body = {
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message, finish_reason: "stop" }],
    };
    return { status: 200, headers: { "content-type": "application/json" }, chunks: [JSON.stringify(body)] };
  }
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    ...base,
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [
      dataEvents([chunk({ role: "assistant", content: "Counted by the gateway." }), chunk({}, "stop")], true),
    ],
  };
}

interface Gateway {
  url: string;
  logs: Record<string, unknown>[];
  records(): Promise<Record<string, unknown>[]>;
  stop(graceMs: number): Promise<void>;
}

/** A gateway in this thread counting through the faulty token-count worker; its usage records in JSONL. */
async function startGatewayHere(dir: string, upstreamUrl: string): Promise<Gateway> {
  const file = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(
    file,
    `
server: { shutdown_timeout: ${GRACE_MS}ms }
providers:
  up: { type: openai, base_url: "${upstreamUrl}/v1", api_key: sk-test-count-upstream }
models:
  chat-a: { type: chat, targets: [{ provider: up, model: upstream-model, retries: 0 }] }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 50ms }
${TEST_TOKENS_YAML}`,
  );
  const result = await loadConfigFile(file, {});
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  const logs: Record<string, unknown>[] = [];
  const runtime: Runtime = {
    ...denoRuntime,
    env: () => ({}),
    onReloadSignal: () => {},
    writeStdout: (text) => {
      for (const line of text.split("\n")) if (line.trim()) logs.push(JSON.parse(line));
    },
  };
  const state = { config: result.config, providers: createProviders(result.config.providers, {}) };
  let stopped: Promise<void> | undefined;
  const handle = await startServer(runtime, state, {
    port: 0,
    host: "127.0.0.1",
    unbufferedLogs: true,
    tokenWorker: WORKER,
  });
  return {
    url: `http://127.0.0.1:${handle.server.port}`,
    logs,
    async records() {
      const text = await Deno.readTextFile(`${dir}/usage.jsonl`).catch(() => "");
      return text.split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
    },
    // Once: the test stops it itself, and the cleanup stops what a failed test left running.
    stop: (graceMs) => stopped ??= handle.stop(graceMs),
  };
}

/**
 * Resolves when the token-count worker begins a count it holds (or announces); rejects if none began within 10 s
 * (a bound for a failing test only: the gateway counts with another worker, say).
 */
function countBegun(): { begun: Promise<void>; close(): void } {
  const channel = new BroadcastChannel(COUNT_ANNOUNCED);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const begun = new Promise<void>((resolve, reject) => {
    channel.onmessage = () => resolve();
    timer = setTimeout(() => reject(new Error("the gateway began no count with the test's worker")), 10_000);
  });
  return {
    begun,
    close: () => {
      clearTimeout(timer);
      channel.close();
    },
  };
}

/** Runs `fn` against a gateway and an upstream answering every request with `step`, stopping both after. */
async function withCountingGateway(
  step: RawStep,
  fn: (gw: Gateway) => Promise<void>,
): Promise<void> {
  const upstream = startRawUpstream();
  upstream.next = step;
  const dir = await Deno.makeTempDir();
  let gw: Gateway | undefined;
  try {
    gw = await startGatewayHere(dir, upstream.url);
    await fn(gw);
  } finally {
    await gw?.stop(GRACE_MS);
    await upstream.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("shutdown while a translated Messages stream's prompt is counted: the client gets a 503, and it is recorded", async () => {
  await withCountingGateway(answerWithoutUsage(true), async (gw) => {
    const count = countBegun();
    try {
      const answered = fetch(`${gw.url}/v1/messages`, {
        method: "POST",
        headers: {
          "x-api-key": TEST_TOKEN,
          "content-type": "application/json",
          "anthropic-version": "2023-06-01",
          "x-request-id": "msg-counting",
        },
        body: JSON.stringify({
          model: "chat-a",
          max_tokens: 100,
          stream: true,
          messages: [{ role: "user", content: HELD }],
        }),
      }).catch((err: unknown) => err);
      await count.begun;
      await gw.stop(GRACE_MS);

      const response = await answered;
      assert.ok(response instanceof Response, `the client got no answer: ${response}`);
      assert.equal(response.status, 503);
      const body = await response.json();
      assert.equal(body.type, "error");
      const records = (await gw.records()).filter((r) => r.request_id === "msg-counting");
      assert.equal(records.length, 1, "one record for the request");
      assert.equal(records[0].status, 503);
      assert.equal(records[0].error_code, "server_shutdown");
      assert.equal(gw.logs.some((l) => l.msg === "shutdown_unreported_requests"), false);
    } finally {
      count.close();
    }
  });
});

Deno.test("shutdown while a finished stream's usage is counted: it is reported within the cut, none left unreported", async () => {
  await withCountingGateway(answerWithoutUsage(true), async (gw) => {
    const count = countBegun();
    try {
      const response = await fetch(`${gw.url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_TOKEN}`,
          "content-type": "application/json",
          "x-request-id": "stream-counting",
        },
        body: JSON.stringify({ model: "chat-a", stream: true, messages: [{ role: "user", content: HELD }] }),
      });
      assert.equal(response.status, 200);
      assert.match(await response.text(), /data: \[DONE\]/);
      // The client has its whole answer; the request's record waits on the prompt's count.
      await count.begun;
      await gw.stop(GRACE_MS);

      assert.equal(gw.logs.some((l) => l.msg === "shutdown_unreported_requests"), false);
      const records = (await gw.records()).filter((r) => r.request_id === "stream-counting");
      assert.equal(records.length, 1, "one record for the request");
      assert.equal(records[0].status, 200);
      assert.equal(records[0].error_code, null);
      assert.equal(records[0].tokens_estimated, true);
      assert.ok((records[0].prompt_tokens as number) > 0, "the prompt is counted (roughly)");
    } finally {
      count.close();
    }
  });
});

Deno.test("shutdown while a JSON answer's usage is counted: the client gets the 503 its record says, with the answer's tokens", async () => {
  await withCountingGateway(answerWithoutUsage(false), async (gw) => {
    const count = countBegun();
    try {
      const answered = fetch(`${gw.url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_TOKEN}`,
          "content-type": "application/json",
          "x-request-id": "json-counting",
        },
        body: JSON.stringify({ model: "chat-a", messages: [{ role: "user", content: HELD }] }),
      }).catch((err: unknown) => err);
      // The upstream has answered (the usage is counted after its answer): only the count is left.
      await count.begun;
      await gw.stop(GRACE_MS);

      const response = await answered;
      assert.ok(response instanceof Response, `the client got no answer: ${response}`);
      assert.equal(response.status, 503);
      assert.equal((await response.json()).error.code, "server_shutdown");
      const records = (await gw.records()).filter((r) => r.request_id === "json-counting");
      assert.equal(records.length, 1, "one record for the request");
      assert.equal(records[0].status, 503);
      assert.equal(records[0].error_code, "server_shutdown");
      // What the upstream's answer spent is kept, counted roughly.
      assert.equal(records[0].tokens_estimated, true);
      assert.ok((records[0].prompt_tokens as number) > 0 && (records[0].completion_tokens as number) > 0);
    } finally {
      count.close();
    }
  });
});
