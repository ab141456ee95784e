/**
 * A stream that breaks before its usage came is priced from the prompt the upstream reported on the way, token
 * class by token class: Anthropic's `message_start` and Gemini's `usageMetadata` give the prompt with its cache
 * reads (and Anthropic's cache writes) before any output, so the broken stream's input costs what the finished
 * stream's does, whether it broke upstream or an output guardrail stopped it. Its output is the gateway's count
 * of what the client received. Without the classes a cut stream priced every cached token as uncached input (10×
 * a cache read's price); without Gemini's count on a stream translated for another client API it was recorded
 * at the gateway's estimate of the request text (a few tokens of a 100k prompt), so any client could cut its
 * stream to pay almost nothing.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { inProcessGateway } from "../helpers/in_process.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

/** The usage record fields these tests read. */
interface UsageRow {
  request_id: string;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_estimated: number;
  error_code: string | null;
  cost: number;
  cost_input: number;
  cost_cached: number;
  cost_cache_write: number;
}

const micro = (dollars: number) => Math.round(dollars * 1_000_000);

function sse(events: unknown[]): RawStep {
  return {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: events.map((e) => `data: ${JSON.stringify(e)}\n\n`),
  };
}

/** Anthropic's prompt: 10 uncached tokens, 100,000 read from the cache, 2,000 written to it (5 minutes). */
const ANTHROPIC_USAGE = {
  input_tokens: 10,
  cache_read_input_tokens: 100_000,
  cache_creation_input_tokens: 2_000,
  output_tokens: 1,
};
const ANTHROPIC_PROMPT = 102_010;

function anthropicStream(finished: boolean, text = "Hello there"): RawStep {
  const start = [
    {
      type: "message_start",
      message: { id: "msg_1", type: "message", role: "assistant", content: [], usage: ANTHROPIC_USAGE },
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } },
  ];
  return sse(
    finished
      ? [
        ...start,
        { type: "content_block_stop", index: 0 },
        { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 3 } },
        { type: "message_stop" },
      ]
      // The upstream breaks mid-answer: no message_delta, so no usage at the end.
      : [...start, { type: "error", error: { type: "api_error", message: "Internal error" } }],
  );
}

/** Gemini's prompt: 100,010 tokens, 100,000 of them cached content, in every chunk's `usageMetadata`. */
const GEMINI_METADATA = {
  promptTokenCount: 100_010,
  cachedContentTokenCount: 100_000,
  candidatesTokenCount: 2,
  totalTokenCount: 100_012,
};

function geminiStream(finished: boolean): RawStep {
  const chunk = (finishReason?: string) => ({
    candidates: [{
      content: { role: "model", parts: [{ text: "Hello there" }] },
      index: 0,
      ...(finishReason ? { finishReason } : {}),
    }],
    usageMetadata: GEMINI_METADATA,
  });
  return sse(
    finished
      ? [chunk("STOP")]
      : [chunk(), { error: { code: 500, message: "Internal error", status: "INTERNAL" } }],
  );
}

async function cutCostGateway(up: RawUpstream): Promise<TestGateway> {
  return await startGateway(cutCostConfig(up.url));
}

/** The config of the gateway these tests run, its providers at `upstream`. */
function cutCostConfig(upstream: string): string {
  return `
providers:
  claude: { type: anthropic, base_url: "${upstream}", api_key: "sk-ant-key-abcdef0123456789" }
  gem: { type: gemini, base_url: "${upstream}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
models:
  sonnet:
    type: chat
    targets:
      - provider: claude
        model: claude-x
        retries: 0
        price: { input: 3, output: 15, cached_input: 0.3, cache_write_5m: 3.75 }
  sonnet-guarded:
    type: chat
    guardrails: [no-mail]
    targets:
      - provider: claude
        model: claude-x
        retries: 0
        price: { input: 3, output: 15, cached_input: 0.3, cache_write_5m: 3.75 }
  gpro:
    type: chat
    targets:
      - provider: gem
        model: gemini-x
        retries: 0
        price: { input: 1.25, output: 10, cached_input: 0.125 }
guardrails:
  no-mail: { type: pii, entities: [EMAIL], phase: output }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`;
}

/** A client API's streamed request for `alias`, as that API's path and body. */
const CLIENT_APIS: Record<string, (alias: string) => { path: string; body: unknown }> = {
  chat: (alias) => ({
    path: "/v1/chat/completions",
    body: { model: alias, stream: true, messages: [{ role: "user", content: "Hi" }] },
  }),
  responses: (alias) => ({ path: "/v1/responses", body: { model: alias, stream: true, input: "Hi" } }),
  messages: (alias) => ({
    path: "/v1/messages",
    body: { model: alias, stream: true, max_tokens: 50, messages: [{ role: "user", content: "Hi" }] },
  }),
  gemini: (alias) => ({
    path: `/v1beta/models/${alias}:streamGenerateContent?alt=sse`,
    body: { contents: [{ role: "user", parts: [{ text: "Hi" }] }] },
  }),
};

/** Streams one request answered by `step`, reading the client's body to its end (a broken one may be cut). */
async function stream(
  gw: TestGateway,
  up: RawUpstream,
  id: string,
  api: string,
  alias: string,
  step: RawStep,
) {
  up.next = step;
  const { path, body } = CLIENT_APIS[api](alias);
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
      "x-request-id": id,
    },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, id);
  // The Gemini API cuts the connection after its error chunk, so that Google's SDKs see the answer broke.
  await res.text().catch(() => {});
}

/** Each finished/broken pair of streams of `apis` to `alias`, and their records once written. */
async function pairs(
  gw: TestGateway,
  up: RawUpstream,
  alias: string,
  apis: string[],
  step: (finished: boolean) => RawStep,
): Promise<Map<string, UsageRow>> {
  const ids: string[] = [];
  for (const api of apis) {
    // One finished, one broken, in turn: a target's failures are never consecutive, so it is never ejected.
    for (const finished of [true, false]) {
      const id = `${alias}-${api}-${finished ? "finished" : "broken"}`;
      await stream(gw, up, id, api, alias, step(finished));
      ids.push(id);
    }
  }
  const rows = await pollUsageRows<UsageRow>(
    gw,
    (r) => ids.every((id) => r.some((x) => x.request_id === id)),
  );
  return new Map(rows.map((r) => [r.request_id, r]));
}

/** The broken stream of `api` was priced as the finished one for its input, class by class. */
function assertSameInput(rows: Map<string, UsageRow>, alias: string, api: string, prompt: number) {
  const finished = rows.get(`${alias}-${api}-finished`);
  const broken = rows.get(`${alias}-${api}-broken`);
  assert.ok(finished && broken, `${alias} ${api}: records`);
  const what = `${alias} ${api}: ${JSON.stringify(broken)}`;
  assert.equal(finished.error_code, null, what);
  assert.notEqual(broken.error_code, null, what);
  assert.equal(finished.prompt_tokens, prompt, what);
  assert.equal(broken.prompt_tokens, prompt, `${what}: the upstream's prompt count`);
  assert.ok(broken.cost_cached > 0, `${what}: the cache reads priced as such`);
  assert.equal(micro(broken.cost_cached), micro(finished.cost_cached), what);
  assert.equal(micro(broken.cost_cache_write), micro(finished.cost_cache_write), what);
  assert.equal(micro(broken.cost_input), micro(finished.cost_input), `${what}: uncached input`);
  // Only the output differs: the gateway's count of what the client received.
  assert.ok(broken.completion_tokens > 0 && broken.completion_tokens < 10, what);
}

Deno.test("cut stream cost: an Anthropic stream that breaks keeps its prompt's cache reads and writes", async () => {
  const up = startRawUpstream();
  const gw = await cutCostGateway(up);
  try {
    const apis = ["messages", "chat", "responses", "gemini"];
    const rows = await pairs(gw, up, "sonnet", apis, anthropicStream);
    for (const api of apis) assertSameInput(rows, "sonnet", api, ANTHROPIC_PROMPT);
    const finished = rows.get("sonnet-messages-finished")!;
    // 10 × $3 + 100,000 × $0.30 + 2,000 × $3.75 per million: the cache reads at a tenth of the input rate.
    assert.equal(micro(finished.cost_input), micro(10 * 3 / 1e6));
    assert.equal(micro(finished.cost_cached), micro(100_000 * 0.3 / 1e6));
    assert.equal(micro(finished.cost_cache_write), micro(2_000 * 3.75 / 1e6));

    // An output guardrail stops the stream at the address, before the upstream's usage at its end is read.
    await stream(
      gw,
      up,
      "sonnet-guarded-chat-broken",
      "chat",
      "sonnet-guarded",
      anthropicStream(true, "Mail a@b.io"),
    );
    rows.set("sonnet-guarded-chat-finished", rows.get("sonnet-chat-finished")!);
    const [denied] = await pollUsageRows<UsageRow>(gw, (r) => r.length > 0, {
      sql: "SELECT * FROM usage WHERE request_id = ?",
      params: ["sonnet-guarded-chat-broken"],
    });
    assert.ok(denied, "the guarded stream's record");
    rows.set(denied.request_id, denied);
    assertSameInput(rows, "sonnet-guarded", "chat", ANTHROPIC_PROMPT);
  } finally {
    await gw.stop();
    await up.stop();
  }
});

Deno.test("cut stream cost: a Gemini stream that breaks on the Gemini API keeps its cached content", async () => {
  const up = startRawUpstream();
  const gw = await cutCostGateway(up);
  try {
    const rows = await pairs(gw, up, "gpro", ["gemini"], geminiStream);
    assertSameInput(rows, "gpro", "gemini", GEMINI_METADATA.promptTokenCount);
    const broken = rows.get("gpro-gemini-broken")!;
    // 10 × $1.25 + 100,000 × $0.125 per million.
    assert.equal(micro(broken.cost_input), micro(10 * 1.25 / 1e6));
    assert.equal(micro(broken.cost_cached), micro(100_000 * 0.125 / 1e6));
  } finally {
    await gw.stop();
    await up.stop();
  }
});

Deno.test("cut stream cost: a Gemini stream translated for chat, Responses or Messages that breaks is charged Gemini's prompt count", async () => {
  const up = startRawUpstream();
  const gw = await cutCostGateway(up);
  try {
    const apis = ["chat", "responses", "messages"];
    const rows = await pairs(gw, up, "gpro", apis, geminiStream);
    // Not the gateway's estimate of "Hi" (a few tokens): Gemini counted 100,010 before the stream broke.
    for (const api of apis) assertSameInput(rows, "gpro", api, GEMINI_METADATA.promptTokenCount);
    const broken = rows.get("gpro-chat-broken")!;
    assert.equal(micro(broken.cost_input), micro(10 * 1.25 / 1e6));
    assert.equal(micro(broken.cost_cached), micro(100_000 * 0.125 / 1e6));
  } finally {
    await gw.stop();
    await up.stop();
  }
});

/**
 * An upstream `fetch` for an in-process gateway: it answers with `message_start` and then holds the body open
 * until `release`. The body is pulled only when read (high-water mark 0), so the second pull, `pulledAgain`,
 * says the gateway has parsed `message_start` and is holding it, the moment the client's leaving is tested at.
 */
function heldMessageStart(release: Promise<void>) {
  let pulledAgain = Promise.withResolvers<void>();
  const frame = `event: message_start\ndata: ${
    JSON.stringify({
      type: "message_start",
      message: { id: "msg_1", type: "message", role: "assistant", content: [], usage: ANTHROPIC_USAGE },
    })
  }\n\n`;
  // As a real fetch does, the request's signal aborting errors the body being read.
  const fetch = (_url: string | URL | Request, init?: RequestInit) => {
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        init?.signal?.addEventListener("abort", () => controller.error(init.signal!.reason), { once: true });
      },
      async pull(controller) {
        if (++pulls === 1) return controller.enqueue(new TextEncoder().encode(frame));
        pulledAgain.resolve();
        await release;
        controller.close();
      },
    }, { highWaterMark: 0 });
    return Promise.resolve(new Response(body, { headers: { "content-type": "text/event-stream" } }));
  };
  return {
    fetch,
    /** Resolves once the gateway read past `message_start`; renewed by `next()` for the following request. */
    get pulledAgain() {
      return pulledAgain.promise;
    },
    next: () => pulledAgain = Promise.withResolvers<void>(),
  };
}

// In-process, with the upstream's body in the test's hands: over sockets the client's leaving could reach the
// gateway before the upstream's message_start had (the upstream having written it says nothing of the gateway
// having read it), and Bun's CI run recorded 0 tokens once.
Deno.test("cut stream cost: a client that leaves while its stream is held (before anything showed) keeps the prompt message_start reported", async () => {
  const release = Promise.withResolvers<void>();
  const upstream = heldMessageStart(release.promise);
  const gw = inProcessGateway(
    cutCostConfig("http://anthropic.test"),
  );
  const realFetch = globalThis.fetch;
  globalThis.fetch = upstream.fetch;
  try {
    for (const [api, ask] of [["messages", CLIENT_APIS.messages], ["chat", CLIENT_APIS.chat]] as const) {
      upstream.next();
      const { path, body } = ask("sonnet");
      const leave = new AbortController();
      const asked = gw.fetch(path, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_TOKEN}`,
          "content-type": "application/json",
          "anthropic-version": "2023-06-01",
        },
        body: JSON.stringify(body),
        signal: leave.signal,
      });
      // The gateway holds message_start (it shows the client nothing) until the next event, or for a second.
      await upstream.pulledAgain;
      const records = gw.records.length;
      leave.abort();
      const res = await asked;
      assert.equal(res.status, 499, `${api}: the client left`);
      await res.body?.cancel();
      while (gw.records.length === records) await new Promise((r) => setTimeout(r, 5));
      const row = gw.records.at(-1)!;
      assert.equal(row.prompt_tokens, ANTHROPIC_PROMPT, `${api}: the prompt the upstream counted`);
      assert.equal(row.completion_tokens, 0, api);
      assert.equal(micro(row.cost_cached!), micro(100_000 * 0.3 / 1e6), `${api}: cache reads at their price`);
      assert.equal(micro(row.cost_input!), micro(10 * 3 / 1e6), api);
      assert.ok(row.cost > 0, api);
    }
  } finally {
    globalThis.fetch = realFetch;
    release.resolve();
  }
});
