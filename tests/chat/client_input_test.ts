/**
 * What clients send that the gateway must take calmly: JSON nested absurdly deep (refused cheaply, the
 * event loop free), a body that stops arriving (408 after `body_timeout`), null for optional parameters
 * (omitted, and never forwarded), a base URL without `/v1` (a 404 that says so), and compressed bodies
 * (Codex's zstd; decoded, and passed on plain).
 */
import assert from "node:assert/strict";
import zlib from "node:zlib";
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { NATIVE_KEY, startFakeNativeResponses } from "../helpers/fake_openai_responses.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, waitForLog } from "../helpers/gateway.ts";
import { backstop } from "../helpers/backstop.ts";

const BODY_TIMEOUT_MS = 300;

const CONFIG = `
server:
  host: 127.0.0.1
  port: 0
  connections: { body_timeout: ${BODY_TIMEOUT_MS}ms }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
${TEST_TOKENS_YAML}`;

const AUTH = { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function inProcess(yaml = CONFIG) {
  const result = parseConfigText(yaml, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const handler = createGateway({ state: () => state, logger });
  const send = (path: string, init: RequestInit = {}) =>
    handler(new Request(`http://gateway.test${path}`, init));
  return { send, logger };
}

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

async function errorOf(response: Response): Promise<ErrorBody["error"]> {
  const body = await response.json() as ErrorBody;
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  return body.error;
}

/** A chat body whose `metadata` holds `depth` nested arrays (2 bytes a level). */
function deepChat(depth: number): string {
  const head = '{"model":"chat-echo","messages":[{"role":"user","content":"hi"}],"metadata":{"x":';
  return `${head}${"[".repeat(depth)}${"]".repeat(depth)}}}`;
}

Deno.test("client input: JSON nested 300k levels deep is a 400 naming the limit, eight at once leave /healthz answering", async () => {
  const gw = await startGateway(CONFIG);
  try {
    const deep = deepChat(300_000); // ~600 KB
    const send = () =>
      fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: AUTH, body: encoder.encode(deep) });
    const first = await send();
    assert.equal(first.status, 400);
    const error = await errorOf(first);
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.code, "json_too_deep");
    assert.match(error.message, /\b64\b/);

    // Eight at once, with /healthz probed meanwhile: every probe is answered. How little the refusal costs is
    // counted, not timed: the depth check's work is linear (lib/http/json_depth_work_test.ts), and the next
    // test shows such a body never reaches JSON.parse, nor anything after it that recurses.
    const probes: number[] = [];
    let done = false;
    const probing = (async () => {
      while (!done) {
        const r = await fetch(`${gw.url}/healthz`);
        await r.body?.cancel();
        probes.push(r.status);
      }
    })();
    const all = await Promise.all(Array.from({ length: 8 }, send));
    done = true;
    await probing;
    for (const r of all) {
      assert.equal(r.status, 400);
      assert.equal((await errorOf(r)).code, "json_too_deep");
    }
    assert.ok(probes.length > 0 && probes.every((status) => status === 200), `/healthz answered ${probes}`);

    // The limit is inclusive, and nesting within it still works end to end.
    const ok = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: AUTH,
      body: encoder.encode(deepChat(62)), // 62 arrays inside {…{"x":…}}: 64 levels
    });
    assert.equal(ok.status, 200, await ok.clone().text());
    await ok.body?.cancel();
    const over = await fetch(`${gw.url}/v1/embeddings`, {
      method: "POST",
      headers: AUTH,
      body: encoder.encode(`{"model":"embed-local","input":"a","x":${"[".repeat(64)}${"]".repeat(64)}}`),
    });
    assert.equal(over.status, 400);
    assert.equal((await errorOf(over)).code, "json_too_deep");
    assert.deepEqual(gw.logs.filter((l) => l.msg === "unhandled_error"), []);
  } finally {
    await gw.stop();
  }
});

Deno.test("client input: a body nested too deep is refused on its raw text: JSON.parse never sees it", async () => {
  // What stalled the event loop (and overflowed Bun's stack) was the work that follows parsing: counted here
  // as the parses of the deep text, which must be none. The gateway runs in this isolate, so its JSON.parse
  // is this one.
  const deep = deepChat(300_000);
  const { send, logger } = inProcess();
  const parse = JSON.parse;
  let parsedDeep = 0;
  JSON.parse = ((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    if (typeof text === "string" && text.length >= deep.length) parsedDeep++;
    return parse(text, reviver);
  }) as typeof JSON.parse;
  let response: Response;
  try {
    response = await send("/v1/chat/completions", { method: "POST", headers: AUTH, body: deep });
  } finally {
    JSON.parse = parse;
  }
  assert.equal(response.status, 400);
  assert.equal((await errorOf(response)).code, "json_too_deep");
  assert.equal(parsedDeep, 0, "the deep body was parsed before it was refused");
  assert.deepEqual(logger.lines.filter((l) => l.msg === "unhandled_error"), []);
});

/**
 * Reads from `conn` until the whole response (head and a body of its Content-Length) arrived or the peer
 * closed; returns the text and whether it closed. Waits as long as that takes: a caller bounds it with a backstop.
 */
async function readResponse(conn: Deno.Conn): Promise<{ text: string; closed: boolean }> {
  let text = "";
  const buffer = new Uint8Array(4096);
  while (true) {
    const n = await conn.read(buffer);
    if (n === null) return { text, closed: true };
    text += decoder.decode(buffer.subarray(0, n));
    const length = /\r\ncontent-length: (\d+)/i.exec(text);
    const headEnd = text.indexOf("\r\n\r\n");
    if (length && headEnd >= 0 && encoder.encode(text.slice(headEnd + 4)).length >= Number(length[1])) {
      return { text, closed: false };
    }
  }
}

/**
 * This file's config with every other connection deadline ten minutes away: a stalled body can only be answered
 * by `body_timeout` before the backstop, so a deadline other than the configured one fails there.
 */
const ONLY_BODY_TIMEOUT = CONFIG.replace(
  `connections: { body_timeout: ${BODY_TIMEOUT_MS}ms }`,
  `connections: { body_timeout: ${BODY_TIMEOUT_MS}ms, header_timeout: 10m, keep_alive_timeout: 10m }`,
);

Deno.test("client input: a body that stops arriving gets a 408 at body_timeout, over a raw socket", async () => {
  assert.notEqual(ONLY_BODY_TIMEOUT, CONFIG);
  const gw = await startGateway(ONLY_BODY_TIMEOUT);
  const port = Number(new URL(gw.url).port);
  try {
    const body = JSON.stringify({
      model: "chat-echo",
      messages: [{ role: "user", content: "x".repeat(200) }],
    });
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    const started = performance.now();
    try {
      await conn.write(encoder.encode(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TEST_TOKEN}\r\n` +
          `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n` +
          body.slice(0, body.length / 2),
      ));
      const { text } = await backstop(readResponse(conn), "the answer to a stalled body");
      const elapsed = performance.now() - started;
      assert.match(text, /^HTTP\/1\.1 408 /, text);
      // Not before the deadline (a lower bound, which load cannot break); and the deadline armed is the
      // configured one: the body reader's 408 names the very value it armed its timer with.
      assert.ok(elapsed >= BODY_TIMEOUT_MS - 20, `answered after ${elapsed.toFixed(0)} ms`);
      const json = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as ErrorBody;
      assert.equal(json.error.code, "request_timeout");
      assert.equal(json.error.type, "invalid_request_error");
      assert.match(json.error.message, /within 0\.3 s/);
    } finally {
      conn.close();
    }
    // A body that arrives in time is untouched, and the gateway keeps serving.
    const ok = await fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: AUTH, body });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    await waitForLog(gw, (l) => l.msg === "request" && l.status === 408);
    const access = gw.logs.filter((l) => l.msg === "request" && l.status === 408);
    assert.equal(access.length, 1, "the timed-out request is logged once");
  } finally {
    await gw.stop();
  }
});

Deno.test("client input: in-process, a stalled body stream is cancelled and answered 408 with connection: close", async () => {
  const { send, logger } = inProcess();
  let cancelled = false;
  const stalled = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode('{"model":"chat-echo",'));
    },
    cancel() {
      cancelled = true;
    },
  });
  const started = performance.now();
  const response = await backstop(
    send("/v1/embeddings", { method: "POST", headers: AUTH, body: stalled, duplex: "half" } as RequestInit),
    "the answer to a stalled body stream",
  );
  assert.equal(response.status, 408);
  assert.equal(response.headers.get("connection"), "close");
  assert.ok(performance.now() - started >= BODY_TIMEOUT_MS - 20, "not before body_timeout");
  const error = await errorOf(response);
  assert.equal(error.code, "request_timeout");
  assert.match(error.message, /0\.3 s/);
  assert.ok(cancelled, "the body stream was cancelled");
  assert.deepEqual(logger.lines.filter((l) => l.msg === "unhandled_error"), []);
});

Deno.test("client input: null optional parameters are accepted and never reach the upstream", async () => {
  const fake = startFakeOpenAI();
  const gw = await startGateway(`
server: { host: 127.0.0.1, port: 0 }
providers:
  up: { type: openai, base_url: "${fake.baseURL}", api_key: ${FAKE_KEY} }
models:
  chat-up: { type: chat, targets: [ { provider: up, model: gpt-ok } ] }
  embed-up: { type: embedding, targets: [ { provider: up, model: emb-ok } ] }
${TEST_TOKENS_YAML}`);
  try {
    // What the Python SDK sends for tools=None and friends.
    const nulls = {
      tools: null,
      tool_choice: null,
      user: null,
      parallel_tool_calls: null,
      response_format: null,
      temperature: null,
      stream: null,
      stream_options: null,
    };
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ model: "chat-up", messages: [{ role: "user", content: "hi" }], ...nulls }),
    });
    assert.equal(chat.status, 200, await chat.clone().text());
    await chat.body?.cancel();
    const embed = await fetch(`${gw.url}/v1/embeddings`, {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({ model: "embed-up", input: "hi", user: null, dimensions: null }),
    });
    assert.equal(embed.status, 200, await embed.clone().text());
    await embed.body?.cancel();
    assert.equal(fake.requests.length, 2);
    for (const request of fake.requests) {
      const forwarded = Object.entries(request.body).filter(([, v]) => v === null).map(([k]) => k);
      assert.deepEqual(forwarded, [], `${request.path} forwarded nulls`);
    }
    assert.equal(fake.requests[0].body.tools, undefined);
  } finally {
    await gw.stop();
    await fake.stop();
  }
});

Deno.test("client input: a path without /v1 gets a 404 that names the path the client meant", async () => {
  const { send } = inProcess();
  const cases: [method: string, path: string, meant: string | null][] = [
    ["POST", "/chat/completions", "/v1/chat/completions"],
    ["POST", "/embeddings", "/v1/embeddings"],
    ["GET", "/models", "/v1/models"],
    ["GET", "/models/chat-echo", "/v1/models/chat-echo"],
    ["GET", "/v1/v1/models", "/v1/models"],
    ["POST", "/v1/chat/completions/", "/v1/chat/completions"],
    ["POST", "/completions", null],
    ["POST", "/v1/completions", null],
    ["GET", "/", null],
  ];
  for (const [method, path, meant] of cases) {
    const response = await send(path, {
      method,
      headers: AUTH,
      body: method === "POST" ? '{"model":"chat-echo"}' : undefined,
    });
    assert.equal(response.status, 404, path);
    const error = await errorOf(response);
    assert.equal(error.code, "unknown_url", path);
    assert.equal(error.type, "invalid_request_error", path);
    assert.ok(error.message.startsWith(`Invalid URL (${method} ${path})`), error.message);
    if (meant === null) assert.doesNotMatch(error.message, /Did you mean/, path);
    else assert.ok(error.message.includes(`Did you mean ${meant}?`), `${path}: ${error.message}`);
    if (meant !== null && !path.startsWith("/v1/")) assert.match(error.message, /base URL must end in \/v1/);
  }
});

Deno.test("client input: tool_calls junk on a non-assistant message is passed on, not a gateway error (fuzz regression)", async () => {
  const { send, logger } = inProcess();
  for (const stream of [false, true]) {
    const response = await send("/v1/chat/completions", {
      method: "POST",
      headers: AUTH,
      body: JSON.stringify({
        model: "chat-echo",
        stream,
        messages: [{ role: "system", content: "Be brief.", tool_calls: [null, 1, "x", { function: null }] }, {
          role: "user",
          content: "hi",
        }],
      }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    await response.text();
  }
  assert.deepEqual(logger.lines.filter((l) => l.msg === "unhandled_error"), []);
});

Deno.test("client input: a body past the runtime's own limit (Bun's 128 MiB) meets the gateway's, not the runtime's", async () => {
  // 130 MiB of JSON whitespace, then a value that is not JSON: only the gateway's own reader and parser answer.
  const body = new Uint8Array(130 * 1024 * 1024 + 1).fill(0x20);
  body[body.length - 1] = 0x78; // "x"
  for (const [limit, status, code] of [["4MiB", 413, "request_too_large"], ["256MiB", 400, null]] as const) {
    // Reading 130 MiB may take longer than this file's short body_timeout on a busy machine.
    const yaml = CONFIG.replace(`body_timeout: ${BODY_TIMEOUT_MS}ms`, "body_timeout: 60s")
      .replace("  port: 0\n", `  port: 0\n  max_body_size: ${limit}\n`);
    const gw = await startGateway(yaml);
    try {
      const response = await fetch(`${gw.baseURL}/chat/completions`, { method: "POST", headers: AUTH, body });
      assert.equal(response.status, status, limit);
      assert.equal((await errorOf(response)).code, code, limit);
      const line = await waitForLog(gw, (l) => l.msg === "request" && l.path === "/v1/chat/completions");
      assert.equal(line.status, status, `the access log and record say what the client got (${limit})`);
    } finally {
      await gw.stop();
    }
  }
});

Deno.test("client input: compressed bodies are decoded (Codex's zstd /v1/responses, gzip chat), passed on plain; x-bogus is a 415 in each API's shape", async () => {
  const fake = startFakeNativeResponses();
  const gw = await startGateway(`
server:
  host: 127.0.0.1
  port: 0
providers:
  local: { type: builtin }
  native: { type: openai, base_url: "${fake.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  resp-native: { type: chat, targets: [ { provider: native, model: resp-plain } ] }
${TEST_TOKENS_YAML}`);
  try {
    // As Codex sends it with ChatGPT sign-in: zstd at level 3, Content-Encoding: zstd, a bearer token.
    const responses = { model: "resp-native", input: "Bonjour ✓", store: false };
    const zstd = zlib.zstdCompressSync(encoder.encode(JSON.stringify(responses)), {
      params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 },
    });
    const answered = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { ...AUTH, "content-encoding": "zstd" },
      body: Uint8Array.from(zstd),
    });
    assert.equal(answered.status, 200, await answered.clone().text());
    assert.equal(((await answered.json()) as { status: string }).status, "completed");
    // The native passthrough sent the upstream plain JSON, without the client's Content-Encoding.
    const upstream = fake.requests.at(-1)!;
    assert.equal(upstream.path, "/v1/responses");
    assert.equal(upstream.headers.get("content-encoding"), null);
    assert.equal(upstream.body.input, "Bonjour ✓");

    const chat = { model: "chat-echo", messages: [{ role: "user", content: "gzip ✓" }] };
    const gzipped = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { ...AUTH, "content-encoding": "gzip" },
      body: Uint8Array.from(zlib.gzipSync(encoder.encode(JSON.stringify(chat)))),
    });
    assert.equal(gzipped.status, 200, await gzipped.clone().text());
    const completion = await gzipped.json() as { choices: { message: { content: string } }[] };
    assert.match(completion.choices[0].message.content, /gzip ✓/);

    // A coding the gateway does not know: 415 in OpenAI's shape, and in Anthropic's on /v1/messages.
    const bogus = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { ...AUTH, "content-encoding": "x-bogus" },
      body: JSON.stringify(chat),
    });
    assert.equal(bogus.status, 415);
    const error = await errorOf(bogus);
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.code, "unsupported_content_encoding");
    assert.match(error.message, /x-bogus/);
    const messages = await fetch(`${gw.baseURL}/messages`, {
      method: "POST",
      headers: { ...AUTH, "anthropic-version": "2023-06-01", "content-encoding": "x-bogus" },
      body: JSON.stringify({
        model: "chat-echo",
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    assert.equal(messages.status, 415);
    const anthropic = await messages.json() as { type: string; error: { type: string; message: string } };
    assert.equal(anthropic.type, "error");
    assert.equal(anthropic.error.type, "invalid_request_error");
    assert.match(anthropic.error.message, /x-bogus/);

    // A corrupt zstd body is a 400 saying so.
    const corrupt = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { ...AUTH, "content-encoding": "zstd" },
      body: Uint8Array.from(zstd.subarray(0, zstd.byteLength - 3)),
    });
    assert.equal(corrupt.status, 400);
    assert.equal((await errorOf(corrupt)).code, "invalid_body_encoding");

    // Each refusal is reported once, with the status the client got.
    await waitForLog(gw, (l) => l.msg === "request" && l.status === 400);
    const refused = gw.logs.filter((l) => l.msg === "request" && (l.status === 415 || l.status === 400));
    assert.deepEqual(refused.map((l) => [l.path, l.status]), [
      ["/v1/chat/completions", 415],
      ["/v1/messages", 415],
      ["/v1/responses", 400],
    ]);
    assert.deepEqual(gw.logs.filter((l) => l.msg === "unhandled_error"), []);
  } finally {
    await gw.stop();
    await fake.stop();
  }
});
