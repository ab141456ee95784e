/**
 * `cache.max_entry_bytes` and single-flight, over real sockets against a scripted upstream that holds the
 * first answer's stream open: once the first (leading) request's streamed answer has grown past the entry
 * size, it can never fill the entry, so an identical request waiting on it goes upstream at once, while the
 * first stream is still open, rather than waiting for that stream to end (or for `lock_wait`). The chat form
 * (a chat completion) and a native passthrough (a Messages request to an Anthropic target) each stop their
 * fill their own way (lib/answer/cached_route.ts, lib/answer/cached_native.ts); both are checked.
 *
 * Ordering is read from the upstream: whether the first answer was still held when the second request
 * reached it. The hold also opens by itself after {@linkcode FALLBACK_MS}, well under `lock_wait` (30 s), only
 * so that a gateway that makes the second request wait fails the assertion instead of hanging the test.
 */
import assert from "node:assert/strict";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";

/** Opens the first answer's hold if the second request never comes (the defect: it waits on the first). */
const FALLBACK_MS = 5_000;
/** Ends the first answer's long text: once a client has read it, the gateway has seen the text pass. */
const MARK = "<end-of-long>";
const LONG = `${"word ".repeat(400)}${MARK}`;
const SSE = { "content-type": "text/event-stream" };
const TOKENS = `tokens:\n  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }`;

/** An upstream whose first answer is `first` held before chunk `holdAt`; every later one is `next`. */
interface Scripted {
  raw: RawUpstream;
  /** Whether the first answer was still held when the second request reached the upstream. */
  heldAtSecond?: boolean;
  release(): void;
}

function scripted(first: (string | Uint8Array)[], holdAt: number, next: RawStep): Scripted {
  const opened = Promise.withResolvers<void>();
  let released = false;
  const s: Scripted = {
    raw: startRawUpstream(),
    release() {
      released = true;
      opened.resolve();
    },
  };
  s.raw.stepFor = () => {
    if (s.raw.requests.length === 1) {
      return { status: 200, headers: SSE, chunks: first, hold: { at: holdAt, open: opened.promise } };
    }
    s.heldAtSecond ??= !released;
    s.release();
    return next;
  };
  return s;
}

/** Starts a streamed POST and reads it until its text includes `until`; `rest()` reads the remainder. */
async function openStream(url: string, body: unknown, headers: Record<string, string>, until: string) {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes(until)) {
    const next = await reader.read();
    if (next.done) break;
    text += next.value;
  }
  const rest = async () => {
    for (let next = await reader.read(); !next.done; next = await reader.read()) text += next.value;
    return text;
  };
  return { res, rest };
}

/** The one access record of each request id, with the cache's part in it. */
async function recordsOf(gw: TestGateway, ids: (string | null)[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const id of ids) {
    assert.ok(id);
    const ofId = () => gw.logs.filter((l) => l.msg === "request" && l.request_id === id);
    for (let i = 0; i < 500 && ofId().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(ofId().length, 1, `one record for ${id}`);
    out.push(ofId()[0].cache);
  }
  return out;
}

/**
 * Runs the scenario: the first request streams until its long text passed the gateway, the identical second
 * one is sent then; asserts the second reached the upstream while the first was held, and what each client saw.
 */
async function scenario(
  s: Scripted,
  gw: TestGateway,
  ask: { path: string; body: unknown; headers?: Record<string, string>; secondText: string },
  secondGw = gw,
): Promise<void> {
  const fallback = setTimeout(() => s.release(), FALLBACK_MS);
  try {
    const first = await openStream(`${gw.baseURL}${ask.path}`, ask.body, ask.headers ?? {}, MARK);
    const url = `${secondGw.baseURL}${ask.path}`;
    const second = await openStream(url, ask.body, ask.headers ?? {}, "\u0000never");
    const [firstText, secondText] = await Promise.all([first.rest(), second.rest()]);
    assert.equal(s.heldAtSecond, true, "the second request went upstream while the first stream was open");
    assert.equal(s.raw.requests.length, 2);
    assert.ok(firstText.includes(MARK), "the first client got all of its long answer");
    assert.ok(secondText.includes(ask.secondText), "the second client got its own answer");
    assert.deepEqual([first.res.headers.get("x-cache"), second.res.headers.get("x-cache")], ["MISS", "MISS"]);
    assert.deepEqual(await recordsOf(gw, [first.res.headers.get("x-request-id")]), ["miss"]);
    assert.deepEqual(await recordsOf(secondGw, [second.res.headers.get("x-request-id")]), ["miss"]);
  } finally {
    clearTimeout(fallback);
    s.release();
  }
}

const chatChunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${
    JSON.stringify({
      id: "chatcmpl-raw",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "m",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    })
  }\n\n`;

const chatAnswer = (text: string) => [
  chatChunk({ role: "assistant", content: "" }),
  chatChunk({ content: text }),
  chatChunk({}, "stop"),
  "data: [DONE]\n\n",
];

/** The chat alias's config; with `redisPrefix`, on the Redis store under that prefix (a fleet's replicas). */
const chatConfig = (s: Scripted, redisPrefix?: string) => `
cache: { max_entry_bytes: 1KiB${redisPrefix === undefined ? "" : ", store: redis"} }
${redisPrefix === undefined ? "" : `redis: { url: "redis://127.0.0.1:6379", key_prefix: "${redisPrefix}" }`}
providers:
  up: { type: openai, base_url: "${s.raw.url}/v1", api_key: sk-cache-upstream-key-0001 }
models:
  cached: { type: chat, targets: [{ provider: up, model: m }], cache: { ttl: 10m } }
${TOKENS}`;
const CHAT_ASK = {
  path: "/chat/completions",
  body: { model: "cached", stream: true, messages: [{ role: "user", content: "long" }] },
  secondText: "short two",
};

Deno.test("cache: a chat stream past max_entry_bytes frees an identical waiting request while still streaming", async () => {
  const s = scripted(chatAnswer(LONG), 2, { status: 200, headers: SSE, chunks: chatAnswer("short two") });
  const gw = await startGateway(chatConfig(s));
  try {
    await scenario(s, gw, CHAT_ASK);
  } finally {
    await gw.stop();
    await s.raw.stop();
  }
});

Deno.test("cache: on the Redis store, the over-limit fill's lock goes at once and another replica's request goes upstream", async () => {
  const s = scripted(chatAnswer(LONG), 2, { status: 200, headers: SSE, chunks: chatAnswer("short two") });
  const prefix = `test-cache-fill-${crypto.randomUUID()}:`;
  // Nothing is left under the prefix: no entry is written, and the lock is deleted (or expires in 10 s).
  const a = await startGateway(chatConfig(s, prefix));
  const b = await startGateway(chatConfig(s, prefix));
  try {
    await scenario(s, a, CHAT_ASK, b);
  } finally {
    await a.stop();
    await b.stop();
    await s.raw.stop();
  }
});

const anthropicEvent = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

const messagesAnswer = (text: string) => [
  anthropicEvent("message_start", {
    message: {
      id: "msg_raw_01",
      type: "message",
      role: "assistant",
      content: [],
      model: "claude-sonnet-4-5",
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 1 },
    },
  }),
  anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text } }),
  anthropicEvent("content_block_stop", { index: 0 }),
  anthropicEvent("message_delta", {
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 5 },
  }),
  anthropicEvent("message_stop", {}),
];

Deno.test("cache native: a Messages stream past max_entry_bytes frees an identical waiting request while still streaming", async () => {
  const s = scripted(messagesAnswer(LONG), 3, {
    status: 200,
    headers: SSE,
    chunks: messagesAnswer("short two"),
  });
  const gw = await startGateway(`
cache: { max_entry_bytes: 1KiB }
providers:
  ant: { type: anthropic, base_url: "${s.raw.url}", api_key: "sk-ant-cache-key-0123456789abcdef" }
models:
  claude: { type: chat, targets: [{ provider: ant, model: claude-sonnet-4-5 }], cache: { ttl: 10m } }
${TOKENS}`);
  try {
    const body = {
      model: "claude",
      max_tokens: 100,
      stream: true,
      messages: [{ role: "user", content: "long" }],
    };
    const headers = { "anthropic-version": "2023-06-01" };
    await scenario(s, gw, { path: "/messages", body, headers, secondText: "short two" });
  } finally {
    await gw.stop();
    await s.raw.stop();
  }
});
