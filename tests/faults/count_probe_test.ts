/**
 * A token count (Messages `count_tokens`, Responses `input_tokens`, Gemini `:countTokens`) that routing sends to
 * a target without a counting endpoint is counted by the gateway, and that target is asked nothing. So the count
 * tells routing nothing about the target's health: it does not end an ejection (the half-open probe belongs to
 * a real request), does not clear a failure streak, and is no attempt on it (no `x-gateway-provider`, no
 * attempt in the usage record). The cooldown runs on a clock the test moves.
 *
 * @module
 */
import assert from "node:assert/strict";
import { HealthRegistry } from "../../lib/routing/health.ts";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

const HEADERS = {
  authorization: `Bearer ${TEST_TOKEN}`,
  "x-goog-api-key": TEST_TOKEN,
  "anthropic-version": "2023-06-01",
  "content-type": "application/json",
};
const MESSAGES = [{ role: "user", content: "How many tokens is this?" }];
const COOLDOWN_MS = 30_000;

/**
 * The counting endpoints, each for `alias`: its path and body. A native Responses upstream counts only the
 * Responses API's (`responsesToo` false): asked for the others' counts, its adapter has no request to send.
 */
function counts(alias: string, responsesToo = true): { path: string; body: unknown }[] {
  const all = [
    { path: "/v1/messages/count_tokens", body: { model: alias, messages: MESSAGES } },
    { path: "/v1/responses/input_tokens", body: { model: alias, input: MESSAGES[0].content } },
    {
      path: `/v1beta/models/${alias}:countTokens`,
      body: { contents: [{ role: "user", parts: [{ text: MESSAGES[0].content }] }] },
    },
  ];
  return responsesToo ? all : all.filter(({ path }) => !path.startsWith("/v1/responses/"));
}

/**
 * A gateway whose alias `chat-mixed` has a target that always fails and cannot count (an OpenAI-compatible
 * upstream answering 500), then one that counts (Anthropic); `chat-solo` has only the first, so the gateway
 * counts its requests without routing: the estimate a count of `chat-mixed` should give too.
 */
function withGateway(
  brokenExtra: string,
  run: (
    gw: InProcessGateway,
    t: { brokenCalls: () => number; broken: () => Record<string, unknown>; advance: (ms: number) => void },
  ) => Promise<void>,
): Promise<void> {
  return withInProcessGateway(() => {
    const broken = startRawUpstream();
    broken.next = {
      status: 500,
      headers: { "content-type": "application/json" },
      chunks: [JSON.stringify({ error: { message: "down", type: "server_error" } })],
    };
    const claude = startFakeAnthropic();
    let now = Date.UTC(2026, 0, 1);
    const health = new HealthRegistry(() => now);
    return {
      config: `
routing: { backoff_base: 1ms, backoff_max: 2ms, eject_after: 2, eject_cooldown: ${COOLDOWN_MS}ms }
providers:
  broken: { type: openai, base_url: "${broken.url}/v1"${brokenExtra} }
  claude: { type: anthropic, base_url: "${claude.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
models:
  chat-mixed:
    type: chat
    targets: [ { provider: broken, model: m, retries: 0 }, { provider: claude, model: claude-sonnet-4-5 } ]
  chat-solo: { type: chat, targets: [ { provider: broken, model: m, retries: 0 } ] }
${TEST_TOKENS_YAML}`,
      routing: { health, now: () => now },
      fakes: {
        brokenCalls: () => broken.requests.length,
        broken: () => {
          const state = health.snapshot().find((s) => s.provider === "broken");
          assert.ok(state, "routing knows the broken target");
          const { state: s, consecutive_failures, successes, latency_ewma_ms } = state;
          return { state: s, consecutive_failures, successes, latency_ewma_ms };
        },
        advance: (ms: number) => {
          now += ms;
        },
      },
      stop: async () => {
        await broken.stop();
        await claude.stop();
      },
    };
  }, run);
}

/** POSTs `body` to `path`; the status, answer and the provider header. */
async function post(gw: InProcessGateway, path: string, body: unknown) {
  const res = await gw.fetch(path, { method: "POST", headers: HEADERS, body: JSON.stringify(body) });
  return { status: res.status, answer: await res.json(), provider: res.headers.get("x-gateway-provider") };
}

/** A Message to `chat-mixed`: the broken target fails it (when routing tries it), Claude answers. */
async function message(gw: InProcessGateway): Promise<void> {
  const { status, provider } = await post(gw, "/v1/messages", {
    model: "chat-mixed",
    max_tokens: 50,
    messages: MESSAGES,
  });
  assert.equal(status, 200);
  assert.equal(provider, "claude");
}

/**
 * Each count of `chat-mixed` is the gateway's estimate, as for `chat-solo`, and asks the broken target nothing;
 * for each, who it names as answering (header and usage record), which the caller checks after health.
 */
async function countAll(
  gw: InProcessGateway,
  brokenCalls: () => number,
  responsesToo: boolean,
): Promise<unknown[]> {
  const solo = counts("chat-solo", responsesToo);
  const named: unknown[] = [];
  for (const [i, { path, body }] of counts("chat-mixed", responsesToo).entries()) {
    const calls = brokenCalls();
    const estimate = await post(gw, solo[i].path, solo[i].body);
    const mixed = await post(gw, path, body);
    assert.equal(mixed.status, 200, `${path}: ${JSON.stringify(mixed.answer)}`);
    assert.equal(mixed.answer.estimated, true, path);
    assert.deepEqual(mixed.answer, estimate.answer, `${path}: the gateway's count`);
    assert.equal(brokenCalls(), calls, `${path}: the broken target was not asked`);
    const record = gw.records.at(-1)!;
    named.push({ path, header: mixed.provider, provider: record.provider, attempts: record.attempts });
  }
  return named;
}

/** What `countAll` should have seen: no target named, no attempt. */
function nobody(responsesToo: boolean): unknown[] {
  return counts("chat-mixed", responsesToo).map(({ path }) => ({
    path,
    header: null,
    provider: null,
    attempts: 0,
  }));
}

/** The broken target as one whose vendor has no counting endpoint, and as one that counts Responses only. */
const CASES = [
  { name: "without a counting endpoint", brokenExtra: "", responsesToo: true },
  { name: "counting only Responses requests", brokenExtra: ", native_responses: true", responsesToo: false },
];

for (const { name, brokenExtra, responsesToo } of CASES) {
  Deno.test(`count probe: a count on a half-open target ${name} leaves the probe to a real request`, async () => {
    await withGateway(brokenExtra, async (gw, { brokenCalls, broken, advance }) => {
      await message(gw);
      await message(gw);
      assert.equal(brokenCalls(), 2);
      assert.equal(broken().state, "ejected");
      advance(COOLDOWN_MS + 1);
      const halfOpen = { state: "half_open", consecutive_failures: 2, successes: 0, latency_ewma_ms: null };
      assert.deepEqual(broken(), halfOpen);

      const named = await countAll(gw, brokenCalls, responsesToo);
      assert.deepEqual(broken(), halfOpen, "the counts probed nothing");
      assert.deepEqual(named, nobody(responsesToo), "no count was an attempt on a target");

      // The next Message is the probe: the target fails it and is ejected again, so the one after skips it.
      await message(gw);
      assert.equal(brokenCalls(), 3);
      assert.equal(broken().state, "ejected");
      await message(gw);
      assert.equal(brokenCalls(), 3, "the re-ejected target is skipped");
    });
  });

  Deno.test(`count probe: counts between the failures of a target ${name} do not clear its streak`, async () => {
    await withGateway(brokenExtra, async (gw, { brokenCalls, broken }) => {
      await message(gw);
      const named = await countAll(gw, brokenCalls, responsesToo);
      const streak = { state: "healthy", consecutive_failures: 1, successes: 0, latency_ewma_ms: null };
      assert.deepEqual(broken(), streak, "the counts cleared nothing");
      assert.deepEqual(named, nobody(responsesToo), "no count was an attempt on a target");
      // The second failure in a row reaches eject_after: 2.
      await message(gw);
      assert.equal(broken().state, "ejected");
      await message(gw);
      assert.equal(brokenCalls(), 2, "the ejected target is skipped");
    });
  });
}
