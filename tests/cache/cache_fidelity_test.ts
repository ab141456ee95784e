/**
 * A hit is the answer the miss gave, for every field a chat client reads (docs/caching.md, "What is stored"),
 * over real sockets with a scripted OpenAI-compatible upstream:
 *
 * - a spoken answer (`modalities: ["audio"]`: `content: null` and `message.audio`) is never cached: an entry
 *   keeps no audio, so every such request goes upstream, says `x-cache: BYPASS`, and gets its own audio;
 * - URL-citation `annotations` and Perplexity's top-level `citations` come back on a hit, JSON and streamed,
 *   whether a JSON or a streamed answer filled the entry;
 * - a legacy `function_call` answer cached under `cache_tool_calls` comes back with its call, JSON and
 *   streamed;
 * - a chat request asking for `logprobs` (or `top_logprobs`) is never looked up (an entry keeps none): it goes
 *   upstream and says `x-cache: BYPASS`; a Responses request's, dropped on a translated target, is cached.
 *
 * Each request leaves exactly one access record, with the cache's part in it.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";

type Json = Record<string, unknown>;

/** Upstream call n's answer as a completion; streamed, it is cut into OpenAI-style chunks. */
type Script = (n: number) => { frame?: Json; message: Json; finish: string };

interface Scripted {
  baseURL: string;
  calls: Json[];
  script: Script;
  stop(): Promise<void>;
}

const USAGE = { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 };
const encoder = new TextEncoder();

/** The chunks OpenAI (or Perplexity, with `frame` on every chunk) streams for one message. */
function chunksOf(frame: Json, message: Json, finish: string): Json[] {
  const chunk = (delta: Json, reason: string | null = null) => ({
    ...frame,
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: reason }],
  });
  const out: Json[] = [chunk({ role: "assistant", content: "" })];
  const text = typeof message.content === "string" ? message.content : "";
  for (const piece of text.match(/.{1,5}/gs) ?? []) out.push(chunk({ content: piece }));
  if (Array.isArray(message.annotations)) out.push(chunk({ annotations: message.annotations }));
  const call = message.function_call as { name: string; arguments: string } | undefined;
  if (call !== undefined) {
    out.push(chunk({ function_call: { name: call.name, arguments: "" } }));
    for (const piece of call.arguments.match(/.{1,3}/gs) ?? []) {
      out.push(chunk({ function_call: { arguments: piece } }));
    }
  }
  out.push(chunk({}, finish));
  out.push({ ...frame, object: "chat.completion.chunk", choices: [], usage: USAGE });
  return out;
}

function startScripted(script: Script): Scripted {
  const up: Scripted = { baseURL: "", calls: [], script, stop: async () => {} };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.json() as Json;
    up.calls.push(body);
    const n = up.calls.length;
    const { frame: extra = {}, message, finish } = up.script(n);
    const frame = { id: `chatcmpl-up${n}`, created: 1_700_000_000, model: "m", ...extra };
    if (body.stream !== true) {
      return Response.json({
        ...frame,
        object: "chat.completion",
        choices: [{
          index: 0,
          message: { role: "assistant", ...message },
          logprobs: null,
          finish_reason: finish,
        }],
        usage: USAGE,
      });
    }
    const events = chunksOf(frame, message, finish).map((c) => `data: ${JSON.stringify(c)}\n\n`);
    return new Response(encoder.encode(events.join("") + "data: [DONE]\n\n"), {
      headers: { "content-type": "text/event-stream" },
    });
  });
  up.baseURL = `http://127.0.0.1:${server.addr.port}/v1`;
  up.stop = () => server.shutdown();
  return up;
}

async function withScripted(
  cache: string,
  script: Script,
  fn: (gw: TestGateway, up: Scripted) => Promise<void>,
): Promise<void> {
  const up = startScripted(script);
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  cached: { type: chat, targets: [{ provider: up, model: m }], cache: ${cache} }
  chat-plain: { type: chat, targets: [{ provider: up, model: m }] }
${TEST_TOKENS_YAML}`);
  try {
    await fn(gw, up);
  } finally {
    await gw.stop();
    await up.stop();
  }
}

interface Asked {
  cache: string | null;
  requestId: string;
  /** The JSON body, or the stream's chunks (its `data:` payloads before `[DONE]`). */
  body: Json;
  chunks: Json[];
}

async function ask(gw: TestGateway, request: Json): Promise<Asked> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "cached", ...request }),
  });
  assert.equal(res.status, 200);
  const requestId = res.headers.get("x-request-id") ?? "";
  if (request.stream !== true) {
    return { cache: res.headers.get("x-cache"), requestId, body: await res.json(), chunks: [] };
  }
  const data = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6));
  assert.equal(data.at(-1), "[DONE]");
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Json);
  return { cache: res.headers.get("x-cache"), requestId, body: {}, chunks };
}

/** The one access record of each request, with the cache's part in it. */
async function recordsOf(gw: TestGateway, asked: Asked[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const { requestId } of asked) {
    assert.notEqual(requestId, "");
    await waitFor(() => gw.logs.some((l) => l.msg === "request" && l.request_id === requestId));
    const lines = gw.logs.filter((l) => l.msg === "request" && l.request_id === requestId);
    assert.equal(lines.length, 1, `one record for ${requestId}`);
    out.push(lines[0].cache);
  }
  return out;
}

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
}

/** What a streamed chat client reads of a message: the deltas joined, annotations and calls included. */
function streamedMessage(chunks: Json[]): Json {
  let content = "";
  const annotations: unknown[] = [];
  let call: { name: string; arguments: string } | undefined;
  for (const chunk of chunks) {
    for (const choice of chunk.choices as { delta: Json }[]) {
      const delta = choice.delta;
      if (typeof delta.content === "string") content += delta.content;
      if (Array.isArray(delta.annotations)) annotations.push(...delta.annotations);
      const fn = delta.function_call as { name?: string; arguments?: string } | undefined;
      if (fn !== undefined) {
        call ??= { name: "", arguments: "" };
        call.name ||= fn.name ?? "";
        call.arguments += fn.arguments ?? "";
      }
    }
  }
  return { content, annotations, function_call: call };
}

const SAY_HELLO = {
  modalities: ["text", "audio"],
  audio: { voice: "alloy", format: "wav" },
  messages: [{ role: "user", content: "Say hello" }],
};

Deno.test("cache fidelity: a spoken answer is never cached; each request gets its own audio, x-cache BYPASS", async () => {
  const audio = (n: number) => ({
    id: `audio_${n}`,
    data: "UklGRg==",
    expires_at: 1_900_000_000,
    transcript: "Hello",
  });
  await withScripted(
    "{ ttl: 10m }",
    (n) => ({ message: { content: null, audio: audio(n) }, finish: "stop" }),
    async (gw, up) => {
      const first = await ask(gw, SAY_HELLO);
      const second = await ask(gw, SAY_HELLO);
      assert.equal(up.calls.length, 2, "the repeat went upstream");
      assert.deepEqual(second.body.choices, [{
        index: 0,
        message: { role: "assistant", content: null, audio: audio(2) },
        logprobs: null,
        finish_reason: "stop",
      }]);
      assert.deepEqual([first.cache, second.cache], ["BYPASS", "BYPASS"]);
      assert.deepEqual(await recordsOf(gw, [first, second]), ["bypass", "bypass"]);
    },
  );
});

const ANNOTATION = {
  type: "url_citation",
  url_citation: { url: "https://a.example", title: "A", start_index: 0, end_index: 6 },
};
const SOURCES = {
  citations: ["https://a.example"],
  search_results: [{ title: "A", url: "https://a.example" }],
};

Deno.test("cache fidelity: annotations and top-level citations come back on a hit, JSON and streamed", async () => {
  const script: Script = (n) => ({
    frame: SOURCES,
    message: { content: `answer ${n}`, annotations: [ANNOTATION] },
    finish: "stop",
  });
  await withScripted("{ ttl: 10m }", script, async (gw, up) => {
    // Filled by a JSON answer: hit as JSON and as a stream.
    const question = { messages: [{ role: "user", content: "Where?" }] };
    const miss = await ask(gw, question);
    const hit = await ask(gw, question);
    const streamedHit = await ask(gw, { ...question, stream: true });
    assert.equal(up.calls.length, 1);
    const missChoice = (miss.body.choices as Json[])[0];
    assert.deepEqual((hit.body.choices as Json[])[0].message, missChoice.message);
    assert.deepEqual(hit.body.citations, SOURCES.citations);
    assert.deepEqual(hit.body.search_results, SOURCES.search_results);
    assert.deepEqual(streamedMessage(streamedHit.chunks), {
      content: "answer 1",
      annotations: [ANNOTATION],
      function_call: undefined,
    });
    assert.ok(
      streamedHit.chunks.every((c) => JSON.stringify(c.citations) === JSON.stringify(SOURCES.citations)),
    );

    // Filled by a stream: hit as JSON and as a stream, the same as the streamed miss.
    const other = { messages: [{ role: "user", content: "Where else?" }], stream: true };
    const streamedMiss = await ask(gw, other);
    const jsonHit = await ask(gw, { ...other, stream: false });
    const streamedAgain = await ask(gw, other);
    assert.equal(up.calls.length, 2);
    assert.deepEqual(streamedMessage(streamedAgain.chunks), streamedMessage(streamedMiss.chunks));
    assert.deepEqual(streamedAgain.chunks[0].search_results, SOURCES.search_results);
    assert.deepEqual((jsonHit.body.choices as Json[])[0].message, {
      role: "assistant",
      content: "answer 2",
      annotations: [ANNOTATION],
    });
    assert.deepEqual(jsonHit.body.citations, SOURCES.citations);

    const all = [miss, hit, streamedHit, streamedMiss, jsonHit, streamedAgain];
    assert.deepEqual(all.map((a) => a.cache), ["MISS", "HIT", "HIT", "MISS", "HIT", "HIT"]);
    assert.deepEqual(await recordsOf(gw, all), ["miss", "hit", "hit", "miss", "hit", "hit"]);
  });
});

Deno.test("cache fidelity: a legacy function_call cached under cache_tool_calls comes back with its call", async () => {
  const fn = { name: "lookup", arguments: '{"q":1,"units":"metric"}' };
  const script: Script = () => ({ message: { content: null, function_call: fn }, finish: "function_call" });
  await withScripted("{ ttl: 10m, cache_tool_calls: true }", script, async (gw, up) => {
    const functions = [{ name: "lookup", parameters: { type: "object" } }];
    const question = { functions, messages: [{ role: "user", content: "Look it up" }] };
    const miss = await ask(gw, question);
    const hit = await ask(gw, question);
    const streamedHit = await ask(gw, { ...question, stream: true });
    assert.equal(up.calls.length, 1);
    const missChoice = (miss.body.choices as Json[])[0];
    assert.deepEqual(missChoice.message, { role: "assistant", content: null, function_call: fn });
    assert.deepEqual((hit.body.choices as Json[])[0], missChoice);
    assert.deepEqual(streamedMessage(streamedHit.chunks), {
      content: "",
      annotations: [],
      function_call: fn,
    });
    const last = streamedHit.chunks.findLast((c) => (c.choices as Json[]).length > 0)!;
    assert.equal((last.choices as Json[])[0].finish_reason, "function_call");

    // Filled by a stream, hit as JSON: the same call.
    const other = { functions, messages: [{ role: "user", content: "Look again" }] };
    const streamedMiss = await ask(gw, { ...other, stream: true });
    const jsonHit = await ask(gw, other);
    assert.equal(up.calls.length, 2);
    assert.deepEqual(streamedMessage(streamedMiss.chunks).function_call, fn);
    assert.deepEqual((jsonHit.body.choices as Json[])[0], missChoice);

    const all = [miss, hit, streamedHit, streamedMiss, jsonHit];
    assert.deepEqual(await recordsOf(gw, all), ["miss", "hit", "hit", "miss", "hit"]);
  });
});

const HI = [{ role: "user", content: "Hi" }];

/** A Responses request to the cached alias: what the client notices of the cache, and its request id. */
async function askResponses(gw: TestGateway, request: Json): Promise<Asked> {
  const res = await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "cached", input: "Hi", ...request }),
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  return {
    cache: res.headers.get("x-cache"),
    requestId: res.headers.get("x-request-id") ?? "",
    body,
    chunks: [],
  };
}

Deno.test("cache fidelity: a chat request asking for logprobs is not looked up: x-cache BYPASS, recorded so", async () => {
  await withScripted("{ ttl: 10m }", (n) => ({ message: { content: `answer ${n}` }, finish: "stop" }), async (
    gw,
    up,
  ) => {
    // An entry keeps no logprobs: each such request goes upstream, and says the cache had no part in it.
    const asked = [
      await ask(gw, { logprobs: true, messages: HI }),
      await ask(gw, { logprobs: true, messages: HI }),
      await ask(gw, { logprobs: true, top_logprobs: 2, stream: true, messages: HI }),
      await ask(gw, { top_logprobs: 2, messages: HI }),
    ];
    assert.equal(up.calls.length, 4, "every one went upstream");
    assert.deepEqual(asked.map((a) => a.cache), ["BYPASS", "BYPASS", "BYPASS", "BYPASS"]);
    assert.deepEqual(await recordsOf(gw, asked), ["bypass", "bypass", "bypass", "bypass"]);

    // `logprobs: false` asks for none: looked up and cached as usual.
    const plain = [
      await ask(gw, { logprobs: false, messages: HI }),
      await ask(gw, { logprobs: false, messages: HI }),
    ];
    assert.deepEqual(plain.map((a) => a.cache), ["MISS", "HIT"]);
    assert.deepEqual(await recordsOf(gw, plain), ["miss", "hit"]);

    // Responses through a translated target: log probabilities are dropped (the chat form carries none), so a
    // fresh answer has none either (`logprobs: []`) and a hit shows what it showed.
    const wants = { top_logprobs: 2, include: ["message.output_text.logprobs"] };
    const responses = [await askResponses(gw, wants), await askResponses(gw, wants)];
    assert.deepEqual(responses.map((a) => a.cache), ["MISS", "HIT"]);
    assert.deepEqual(await recordsOf(gw, responses), ["miss", "hit"]);
    const text = (a: Asked) => (a.body.output as { content: Json[] }[])[0].content[0];
    assert.deepEqual(text(responses[1]).logprobs, []);
    assert.equal(text(responses[1]).text, text(responses[0]).text);
  });
});
