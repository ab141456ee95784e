/**
 * Streaming and upstream failure behaviour over real sockets: no buffering, mid-stream cuts, client aborts,
 * timeouts, and upstream errors normalised to OpenAI's shapes.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { type SseEvent, sseParseTransformer } from "../../lib/sse/parse.ts";
import { runStages } from "../helpers/run_stages.ts";
import { armGates, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import {
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  waitForLog,
  waitForLogCount,
} from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { backstop } from "../helpers/backstop.ts";

function configFor(fake: FakeUpstream, extra = ""): string {
  return `
providers:
  fake: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
  nowhere: { type: openai, base_url: "http://127.0.0.1:9/v1" }
models:
  chat-gated: { type: chat, targets: [ { provider: fake, model: gpt-gated } ] }
  chat-cut: { type: chat, targets: [ { provider: fake, model: gpt-cut } ] }
  chat-hang: { type: chat, targets: [ { provider: fake, model: gpt-hang, timeouts: { idle: 10m } } ] }
  chat-idle: { type: chat, targets: [ { provider: fake, model: gpt-hang, timeouts: { idle: 200ms } } ] }
  chat-slow: { type: chat, targets: [ { provider: fake, model: gpt-slow-headers, timeouts: { first_byte: 200ms } } ] }
  chat-400: { type: chat, targets: [ { provider: fake, model: gpt-400 } ] }
  chat-401: { type: chat, targets: [ { provider: fake, model: gpt-401 } ] }
  chat-429: { type: chat, targets: [ { provider: fake, model: gpt-429 } ] }
  chat-500: { type: chat, targets: [ { provider: fake, model: gpt-500 } ] }
  chat-vllm: { type: chat, targets: [ { provider: fake, model: vllm-400 } ] }
  chat-down: { type: chat, targets: [ { provider: nowhere, model: any } ] }
${extra}
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fake: FakeUpstream) => Promise<void>) {
  return withFakeGateway(startFakeOpenAI, configFor, fn);
}

function chatRequest(gw: TestGateway, model: string, stream: boolean, signal?: AbortSignal) {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hi" }] }),
    signal,
  });
}

function events(response: Response): ReadableStreamDefaultReader<SseEvent> {
  return runStages(response.body!, sseParseTransformer()).getReader();
}

/** Reads the next event, failing the test instead of hanging if none arrives in time. */
async function nextEvent(
  reader: ReadableStreamDefaultReader<SseEvent>,
  ms = 3_000,
): Promise<SseEvent | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no event within ${ms} ms`)), ms);
  });
  try {
    const { done, value } = await Promise.race([reader.read(), timeout]);
    return done ? null : value;
  } finally {
    clearTimeout(timer);
  }
}

async function rest(reader: ReadableStreamDefaultReader<SseEvent>): Promise<string[]> {
  const out: string[] = [];
  for (let e = await nextEvent(reader); e !== null; e = await nextEvent(reader)) out.push(e.data);
  return out;
}

Deno.test("stream: every upstream chunk reaches the client before the upstream sends the next", async () => {
  await withGateway(async (gw, fake) => {
    const n = 8;
    armGates(fake, n);
    const response = await chatRequest(gw, "chat-gated", true);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
    const reader = events(response);
    const first = JSON.parse((await nextEvent(reader))!.data);
    assert.equal(first.choices[0].delta.role, "assistant");
    for (let i = 0; i < n; i++) {
      // The upstream sends chunk i only now; a gateway that buffered would never deliver it and time out.
      fake.gates[i].resolve();
      await fake.chunkSent[i].promise;
      const event = await nextEvent(reader);
      assert.equal(JSON.parse(event!.data).choices[0].delta.content, `c${i} `);
      assert.equal(JSON.parse(event!.data).model, "chat-gated");
    }
    const tail = await rest(reader);
    assert.equal(JSON.parse(tail[0]).choices[0].finish_reason, "stop");
    assert.equal(tail.at(-1), "[DONE]");
    assert.equal(tail.length, 2, "finish chunk and [DONE]; the gateway's usage chunk is removed");
  });
});

Deno.test("stream: an upstream cut mid-stream ends with an error event and no [DONE]", async () => {
  await withGateway(async (gw) => {
    const response = await chatRequest(gw, "chat-cut", true);
    assert.equal(response.status, 200);
    const data = await rest(events(response));
    assert.ok(!data.includes("[DONE]"));
    const contents = data.slice(0, -1).map((d) => JSON.parse(d).choices[0].delta.content).join("");
    assert.equal(contents, "partial answer");
    const last = JSON.parse(data.at(-1)!);
    assert.deepEqual(Object.keys(last), ["error"]);
    assert.equal(last.error.type, "server_error");
    assert.equal(typeof last.error.message, "string");

    // The SDK raises instead of returning a truncated answer.
    const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: "chat-cut",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    await assert.rejects(async () => {
      for await (const _ of stream) { /* drain */ }
    }, OpenAI.APIError);
    const isCut = (l: Record<string, unknown>) => l.msg === "request" && l.alias === "chat-cut";
    // Against GATEWAY_BIN the log lines arrive over a pipe, a moment after the streams end.
    const logged = await waitForLogCount(gw, isCut, 2, 10_000);
    assert.equal(logged.length, 2);
    assert.equal(logged[0].error_code, "upstream_error");
  });
});

Deno.test("stream: a client abort cancels the upstream request at once", async () => {
  await withGateway(async (gw, fake) => {
    const abort = new AbortController();
    const response = await chatRequest(gw, "chat-hang", true, abort.signal);
    const reader = events(response);
    await nextEvent(reader);
    assert.equal(JSON.parse((await nextEvent(reader))!.data).choices[0].delta.content, "waiting");
    // The upstream is silent from here on, and chat-hang's idle timeout is ten minutes: nothing but the client's
    // abort can end the upstream request within the backstop.
    abort.abort();
    await backstop(fake.aborted.promise, "the upstream request aborted with the client's");
    // The access log records the cancelled stream once its body has been torn down.
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "chat-hang", 10_000);
    assert.equal(line.error_code, "client_closed_request");
  });
});

Deno.test("stream: idle timeout between chunks ends the stream with a timeout error event", async () => {
  await withGateway(async (gw, fake) => {
    const response = await chatRequest(gw, "chat-idle", true);
    const data = await rest(events(response));
    const last = JSON.parse(data.at(-1)!);
    assert.equal(last.error.type, "timeout_error");
    assert.equal(last.error.code, "upstream_timeout");
    assert.ok(!data.includes("[DONE]"));
    await fake.aborted.promise;
  });
});

Deno.test("upstream: a slow first byte is a 504; a refused connection is a 502", async () => {
  await withGateway(async (gw) => {
    const slow = await chatRequest(gw, "chat-slow", false);
    assert.equal(slow.status, 504);
    assert.equal((await slow.json()).error.code, "upstream_timeout");
    const down = await chatRequest(gw, "chat-down", true);
    assert.equal(down.status, 502);
    const body = await down.json();
    assert.equal(body.error.code, "upstream_unreachable");
    assert.ok(!body.error.message.includes("127.0.0.1:9"), "upstream addresses are not revealed");
  });
});

Deno.test("upstream: errors arrive in OpenAI's shape with the right status, and keys never leak", async () => {
  await withGateway(async (gw) => {
    const cases: [string, number, string, string | null][] = [
      ["chat-400", 400, "invalid_request_error", "temperature"],
      ["chat-401", 401, "invalid_request_error", null],
      // OpenAI's own 429 type (which limit was reached: `requests` here) passes as the upstream sent it.
      ["chat-429", 429, "requests", null],
      ["chat-500", 502, "server_error", null],
      ["chat-vllm", 400, "invalid_request_error", null],
    ];
    for (const [model, status, type, param] of cases) {
      for (const stream of [false, true]) {
        const response = await chatRequest(gw, model, stream);
        assert.equal(response.status, status, `${model} stream=${stream}`);
        const text = await response.text();
        assert.ok(!text.includes(FAKE_KEY), "the provider key never reaches the client");
        const body = JSON.parse(text);
        assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
        assert.equal(body.error.type, type, model);
        assert.equal(body.error.param, param, model);
        if (model === "chat-429") assert.equal(response.headers.get("retry-after"), "7");
        if (model === "chat-vllm") assert.equal(body.error.message, "max_tokens too large");
        assert.equal(response.headers.get("x-gateway-provider"), "fake");
      }
    }
  });
});

Deno.test("shutdown: a stream in flight finishes after shutdown begins", async () => {
  const fake = startFakeOpenAI();
  const gw = await startGateway(configFor(fake));
  try {
    armGates(fake, 2);
    const response = await chatRequest(gw, "chat-gated", true);
    const reader = events(response);
    await nextEvent(reader);
    const stopped = gw.stop();
    fake.gates[0].resolve();
    fake.gates[1].resolve();
    const data = await rest(reader);
    assert.equal(data.at(-1), "[DONE]");
    await stopped;
    await assert.rejects(chatRequest(gw, "chat-gated", false), "no new connections after shutdown");
  } finally {
    await fake.stop();
  }
});
