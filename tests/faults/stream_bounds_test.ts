/**
 * A long streamed answer does not stay in the gateway's memory: what the client received is kept to count its
 * tokens when the upstream reports none, and past a few hundred KiB it is counted and dropped
 * (lib/usage/stream_texts.ts), so the count stays exact. Measured in a child process with V8's `gc` exposed
 * (stream_memory_probe.ts), so each figure is the heap retained while the answer streams, not garbage. And with
 * `server.upstream_limits.max_stream_size` set, a stream past it ends with the client API's error event.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

/** MiB streamed per answer. */
const MIB = 16;

Deno.test("stream memory: a 16 MiB answer retains a bounded heap in every client API, and its count stays exact", async () => {
  const probe = new URL("./stream_memory_probe.ts", import.meta.url);
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--v8-flags=--expose-gc", "-A", probe.pathname, String(MIB)],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const runs: {
    api: string;
    withUsage: boolean;
    status: number;
    bytes: number;
    retainedMiB: number;
    completionTokens?: number;
    estimated?: boolean;
    expected?: number;
  }[] = JSON.parse(new TextDecoder().decode(stdout));
  console.log(
    runs.map((r) => `${r.api}${r.withUsage ? "" : " (no usage)"}: ${r.retainedMiB.toFixed(1)} MiB`).join(
      ", ",
    ),
  );
  assert.equal(runs.length, 5);
  for (const run of runs) {
    const what = `${run.api}${run.withUsage ? "" : " without usage"}`;
    assert.equal(run.status, 200, what);
    assert.ok(run.bytes > MIB * 2 ** 20, `${what}: the whole answer reached the client (${run.bytes} bytes)`);
    // Kept whole, the answer's text alone would be about MIB MiB.
    assert.ok(
      run.retainedMiB < MIB / 4,
      `${what}: ${run.retainedMiB.toFixed(1)} MiB retained while streaming`,
    );
  }
  const counted = runs[4];
  assert.equal(counted.estimated, true, "counted by the gateway");
  assert.equal(
    counted.completionTokens,
    counted.expected,
    "the tokenizer's exact count of what was streamed",
  );
});

Deno.test("stream bounds: a stream past max_stream_size ends with each client API's error event, recorded as too large", async () => {
  const raw = startRawUpstream();
  const dir = await Deno.makeTempDir();
  const gw = await startGateway(`
server: { upstream_limits: { max_stream_size: 256KiB } }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  oai: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-up" }
models:
  chat-oai: { type: chat, targets: [{ provider: oai, model: g, retries: 0 }] }
${TEST_TOKENS_YAML}`);
  const chunk = (delta: unknown) =>
    `data: ${
      JSON.stringify({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "g",
        choices: [{ index: 0, delta, finish_reason: null }],
      })
    }\n\n`;
  // 1 MiB of text in 16 KiB events (each well under max_event_size), never finished.
  raw.next = {
    headers: { "content-type": "text/event-stream" },
    chunks: [
      chunk({ role: "assistant", content: "" }),
      ...Array(64).fill(chunk({ content: "y".repeat(16_384) })),
    ],
  };
  const asks: Record<string, { path: string; body: unknown; error: RegExp }> = {
    chat: {
      path: "/v1/chat/completions",
      body: { model: "chat-oai", stream: true, messages: [{ role: "user", content: "hi" }] },
      error: /data: {"error":{[^\n]*"code":"upstream_response_too_large"/,
    },
    responses: {
      path: "/v1/responses",
      body: { model: "chat-oai", stream: true, input: "hi" },
      error: /event: error\ndata: {[^\n]*"code":"upstream_response_too_large"[^]*event: response.failed/,
    },
    messages: {
      path: "/v1/messages",
      body: { model: "chat-oai", stream: true, max_tokens: 10, messages: [{ role: "user", content: "hi" }] },
      error: /event: error\ndata: {[^\n]*max_stream_size/,
    },
  };
  let stopped = false;
  try {
    for (const [api, ask] of Object.entries(asks)) {
      const res = await fetch(`${gw.url}${ask.path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_TOKEN}`,
          "content-type": "application/json",
          "x-request-id": `big-${api}`,
        },
        body: JSON.stringify(ask.body),
      });
      const text = await res.text();
      assert.equal(res.status, 200, `${api}: the answer had started`);
      assert.ok(text.length < 512 * 1024, `${api}: the stream ended early (${text.length} characters)`);
      assert.match(text, ask.error, `${api}: ${text.slice(-400)}`);
    }
    await gw.stop();
    stopped = true;
    const records = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    for (const api of Object.keys(asks)) {
      const record = records.find((r) => r.request_id === `big-${api}`);
      assert.equal(record?.error_code, "upstream_response_too_large", api);
    }
  } finally {
    if (!stopped) await gw.stop();
    await raw.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stream bounds: a translated Responses stream holds no more output than a whole answer may be (max_body_size), other streams go on", async () => {
  const raw = startRawUpstream();
  const dir = await Deno.makeTempDir();
  // max_stream_size unset: a stream is otherwise bounded by its duration alone.
  const gw = await startGateway(`
server: { upstream_limits: { max_body_size: 256KiB } }
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  oai: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-up" }
models:
  chat-oai: { type: chat, targets: [{ provider: oai, model: g, retries: 0 }] }
${TEST_TOKENS_YAML}`);
  const chunk = (delta: unknown, finish: string | null = null) =>
    `data: ${
      JSON.stringify({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "g",
        choices: [{ index: 0, delta, finish_reason: finish }],
      })
    }\n\n`;
  // 1 MiB of text in 16 KiB events, then a clean end.
  raw.next = {
    headers: { "content-type": "text/event-stream" },
    chunks: [
      chunk({ role: "assistant", content: "" }),
      ...Array(64).fill(chunk({ content: "y".repeat(16_384) })),
      chunk({}, "stop"),
      "data: [DONE]\n\n",
    ],
  };
  const ask = async (path: string, body: unknown, id: string) => {
    const res = await fetch(`${gw.url}${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        "x-request-id": id,
      },
      body: JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  };
  let stopped = false;
  try {
    // Chat passes each event on and keeps none of it: the whole MiB reaches the client.
    const chat = await ask(
      "/v1/chat/completions",
      { model: "chat-oai", stream: true, messages: [{ role: "user", content: "hi" }] },
      "long-chat",
    );
    assert.equal(chat.status, 200);
    assert.ok(chat.text.length > 1024 * 1024, `chat: ${chat.text.length} characters`);
    assert.match(chat.text, /data: \[DONE\]\n\n$/);
    // Responses builds the output its final event carries: past 256 KiB of it the stream fails.
    const responses = await ask(
      "/v1/responses",
      { model: "chat-oai", stream: true, input: "hi" },
      "long-responses",
    );
    assert.equal(responses.status, 200, "the answer had started");
    assert.ok(responses.text.length < 768 * 1024, `responses: ${responses.text.length} characters`);
    assert.match(
      responses.text,
      /event: error\ndata: {[^\n]*"code":"upstream_response_too_large"[^]*event: response.failed/,
    );
    assert.doesNotMatch(responses.text, /response\.completed/);
    await gw.stop();
    stopped = true;
    const records = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    assert.equal(records.find((r) => r.request_id === "long-chat")?.status, 200);
    assert.equal(
      records.find((r) => r.request_id === "long-responses")?.error_code,
      "upstream_response_too_large",
    );
  } finally {
    if (!stopped) await gw.stop();
    await raw.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
