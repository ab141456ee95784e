/**
 * Requests cut at shutdown get their answers even when counting them needs the tokenizer for the first time.
 * A stream cut at the end of the grace period has no usage from its upstream, so its tokens are counted; the
 * tokenizer's first load blocks the thread about a second, and loaded inside the short window after the cut it
 * held back the 503s of the requests cut with the stream until their connections were closed, answerless. A
 * drain loads it while requests still drain, so it is loaded at the cut; one with nothing open never loads it.
 * And a thread held past the grace period (that load on a busy machine, say) still gives the requests it cuts
 * their window to answer: the runtime's deadline counts from the cut.
 *
 * In-process (the tokenizer's state is this thread's token-count worker's, which the gateway's stop ends), over
 * real sockets. This file must load the tokenizer in no other way: each test module has its own isolate, so its
 * state starts unloaded.
 *
 * @module
 */
import assert from "node:assert/strict";
import { loadConfigFile } from "../../lib/config/load.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { denoRuntime } from "../../lib/runtime/deno.ts";
import type { Runtime } from "../../lib/runtime/types.ts";
import { startServer } from "../../lib/serve.ts";
import { countTokens, tokenizerLoaded } from "../../lib/usage/estimate.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

const GRACE_MS = 300;
const PARTIAL = "a partial answer that never ends";
const encoder = new TextEncoder();

/**
 * An OpenAI-compatible upstream that never finishes: a stream sends a role chunk and {@linkcode PARTIAL}, then
 * only SSE comments (no usage, ever); a non-streamed request is never answered.
 */
function startHangingUpstream() {
  const chunk = (delta: Record<string, unknown>) =>
    encoder.encode(`data: ${
      JSON.stringify({
        id: "chatcmpl-hang",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model: "hang",
        choices: [{ index: 0, delta, finish_reason: null }],
      })
    }\n\n`);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const body = await request.json();
    if (!body.stream) {
      await new Promise((gone) => request.signal.addEventListener("abort", gone, { once: true }));
      return new Response(null, { status: 499 });
    }
    let timer: ReturnType<typeof setInterval> | undefined;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk({ role: "assistant", content: "" }));
        controller.enqueue(chunk({ content: PARTIAL }));
        timer = setInterval(() => controller.enqueue(encoder.encode(": thinking\n\n")), 50);
      },
      cancel() {
        clearInterval(timer);
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/v1`, stop: () => server.shutdown() };
}

/** A gateway in this thread whose log lines reach `onLog` as they are written (unbuffered). */
async function startGatewayHere(dir: string, yaml: string, onLog: (line: Record<string, unknown>) => void) {
  await Deno.writeTextFile(`${dir}/gateway.yaml`, yaml);
  const result = await loadConfigFile(`${dir}/gateway.yaml`, {});
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  const runtime: Runtime = {
    ...denoRuntime,
    env: () => ({}),
    onReloadSignal: () => {},
    writeStdout: (text) => {
      for (const line of text.split("\n")) if (line.trim()) onLog(JSON.parse(line));
    },
  };
  const state = { config: result.config, providers: createProviders(result.config.providers, {}) };
  const handle = await startServer(runtime, state, { port: 0, host: "127.0.0.1", unbufferedLogs: true });
  return { url: `http://127.0.0.1:${handle.server.port}`, stop: (graceMs: number) => handle.stop(graceMs) };
}

function config(dir: string, upstreamUrl: string): string {
  return `
server: { shutdown_timeout: ${GRACE_MS}ms, timeouts: { idle: 8s } }
providers:
  hang: { type: openai, base_url: "${upstreamUrl}", api_key: sk-test-hanging-upstream }
models:
  chat-hang: { type: chat, targets: [{ provider: hang, model: hang }] }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 50ms }
${TEST_TOKENS_YAML}`;
}

function chat(url: string, stream: boolean, id: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      "x-request-id": id,
    },
    body: JSON.stringify({
      model: "chat-hang",
      stream,
      messages: [{ role: "user", content: "tell me everything" }],
    }),
  });
}

// First: the test after it loads the tokenizer in this isolate.
Deno.test("shutdown: a drain with nothing open does not load the tokenizer", async () => {
  const upstream = startHangingUpstream();
  const dir = await Deno.makeTempDir();
  try {
    const gw = await startGatewayHere(dir, config(dir, upstream.url), () => {});
    const models = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    assert.equal(models.status, 200);
    await models.body?.cancel();
    await gw.stop(GRACE_MS);
    assert.equal(tokenizerLoaded(), false, "nothing was open to cut: the tokenizer's load is not paid");
  } finally {
    await upstream.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("shutdown: the tokenizer is loaded before the cut, so the cut requests' answers do not wait for its load", async () => {
  const upstream = startHangingUpstream();
  const dir = await Deno.makeTempDir();
  let loadedAtCut: boolean | undefined;
  try {
    const gw = await startGatewayHere(dir, config(dir, upstream.url), (line) => {
      // Logged right after the requests are ended, before any of them has answered or counted anything.
      if (line.msg === "shutdown_cut_requests") loadedAtCut = tokenizerLoaded();
    });
    const streamed = await chat(gw.url, true, "cut-stream");
    assert.equal(streamed.status, 200);
    const reader = streamed.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = "";
    while (!received.includes(PARTIAL)) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`stream ended early: ${received}`);
      received += value;
    }
    const rest = (async () => {
      while (true) {
        const { done, value } = await reader.read();
        if (done) return received;
        received += value;
      }
    })();
    const json = chat(gw.url, false, "cut-json");
    // The non-streamed request is open too (at the upstream) before the gateway is stopped.
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(tokenizerLoaded(), false, "nothing has needed the tokenizer yet");

    await gw.stop(GRACE_MS);

    assert.equal(loadedAtCut, true, "the tokenizer was loaded while requests drained, not after the cut");
    const answered = await json;
    assert.equal(answered.status, 503);
    assert.equal((await answered.json()).error.code, "server_shutdown");
    const last = (await rest).trim().split("\n\n").at(-1)!;
    assert.equal(JSON.parse(last.replace(/^data: /, "")).error.code, "server_shutdown", last);

    const records = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    const stream = records.filter((r) => r.request_id === "cut-stream");
    assert.equal(stream.length, 1, "one record for the cut stream");
    assert.equal(stream[0].tokens_estimated, true);
    // Counted by the tokenizer, not the rough estimate: the record stays exact.
    assert.equal(stream[0].completion_tokens, await countTokens(["", PARTIAL]));
    const cut = records.filter((r) => r.request_id === "cut-json");
    assert.equal(cut.length, 1, "one record for the cut request");
    assert.equal(cut[0].status, 503);
  } finally {
    await upstream.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("shutdown: a thread kept busy past the end of the grace period still answers the requests it cuts", async () => {
  const upstream = startHangingUpstream();
  const dir = await Deno.makeTempDir();
  try {
    const gw = await startGatewayHere(dir, config(dir, upstream.url), () => {});
    // A client whose connection is closed before its answer gets an error instead: kept to be asserted below.
    const json = chat(gw.url, false, "cut-late").catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 100));
    const stopped = gw.stop(GRACE_MS);
    // The thread is held (as by the tokenizer's first load on a busy machine) for longer than the grace period
    // and the cut window together: when it is free again, the cut must still get its window to answer.
    const until = performance.now() + GRACE_MS + 2_500;
    while (performance.now() < until) { /* busy */ }
    await stopped;
    const answered = await json;
    assert.ok(answered instanceof Response, `the cut request got no answer: ${answered}`);
    assert.equal(answered.status, 503);
    assert.equal((await answered.json()).error.code, "server_shutdown");
    const records = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    assert.equal(records.filter((r) => r.request_id === "cut-late" && r.status === 503).length, 1);
  } finally {
    await upstream.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
