/**
 * A request's cost from the token classes its vendor reports (issue 26, acceptance 1): OpenAI's reasoning
 * tokens priced apart, Anthropic's and Bedrock's cache reads and cache writes, Gemini's thought tokens, each to the
 * micro-dollar of lib/pricing/cost.ts's arithmetic, in the usage record's total and its breakdown; a target
 * without a price of its own priced from the catalog, and one with its own price charged at that; OpenAI's audio
 * tokens at a target's audio rates.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_KEY, FAKE_REASONING_TOKENS, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { FAKE_GEMINI_KEY, FAKE_GEMINI_THOUGHT_TOKENS, startFakeGemini } from "../helpers/fake_gemini.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_CACHE_READ,
  FAKE_BEDROCK_CACHE_WRITE,
  FAKE_REGION,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { defaultCatalog, lookupPrice } from "../../lib/pricing/catalog.ts";
import { startFakes } from "../helpers/fakes.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

const ADMIN = "gw-pricing-admin-token-0123456789";
const micro = (dollars: number) => Math.round(dollars * 1_000_000);

async function recordOf(gw: TestGateway, requestId: string): Promise<Record<string, number>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await (await fetch(`${gw.url}/admin/requests?limit=50`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    }))
      .json();
    const found = (page.data as Record<string, unknown>[]).find((r) => r.request_id === requestId);
    if (found !== undefined) return found as Record<string, number>;
    if (Date.now() > deadline) throw new Error(`no record for ${requestId}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("pricing: reasoning, cache reads and cache writes priced by class, to the micro-dollar", async () => {
  const fakes = startFakes({ openai: startFakeOpenAI, claude: startFakeAnthropic });
  const gw = await startGateway(`
providers:
  oa: { type: openai, base_url: "${fakes.openai.baseURL}", api_key: "${FAKE_KEY}" }
  claude: { type: anthropic, base_url: "${fakes.claude.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
models:
  reasoner:
    type: chat
    targets: [{ provider: oa, model: gpt-reasoning, price: { input: 1.25, output: 10, reasoning: 12 } }]
  sonnet:
    type: chat
    targets:
      - provider: claude
        model: claude-ok
        price: { input: 3, output: 15, cached_input: 0.3, cache_write_5m: 3.75, cache_write_1h: 6 }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: admin, sha256: ${hashToken(ADMIN)} }
`);
  try {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN, maxRetries: 0 });
    const reasoned = await client.chat.completions.create({
      model: "reasoner",
      messages: [{ role: "user", content: "Hi" }],
    })
      .withResponse();
    // gpt-reasoning: 11 prompt, 30 completion of which FAKE_REASONING_TOKENS reasoning.
    const r = await recordOf(gw, reasoned.response.headers.get("x-request-id")!);
    const reasoning = FAKE_REASONING_TOKENS;
    assert.equal(micro(r.cost_reasoning), micro(reasoning * 12 / 1e6));
    assert.equal(micro(r.cost_output), micro((30 - reasoning) * 10 / 1e6));
    assert.equal(micro(r.cost), micro((11 * 1.25 + (30 - reasoning) * 10 + reasoning * 12) / 1e6));

    // claude-ok without cache_control: 20 input + 100 cache reads, 7 output.
    const plain = await client.chat.completions.create({
      model: "sonnet",
      messages: [{ role: "user", content: "Hi" }],
    })
      .withResponse();
    const p = await recordOf(gw, plain.response.headers.get("x-request-id")!);
    assert.equal(p.prompt_tokens, 120);
    assert.equal(micro(p.cost), micro((20 * 3 + 100 * 0.3 + 7 * 15) / 1e6));
    assert.equal(micro(p.cost_cached), micro(100 * 0.3 / 1e6));

    /** A Messages request to sonnet whose system prompt asks for caching with `cacheControl`; its record. */
    const cachedRecord = async (cacheControl: Record<string, string>, stream = false) => {
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: "POST",
        headers: {
          "x-api-key": TEST_TOKEN,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
        },
        body: JSON.stringify({
          model: "sonnet",
          max_tokens: 50,
          stream,
          system: [{ type: "text", text: "Be brief.", cache_control: cacheControl }],
          messages: [{ role: "user", content: "Hi" }],
        }),
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      return await recordOf(gw, res.headers.get("x-request-id")!);
    };

    // With cache_control, the fake reports 40 cache writes and 300 cache reads (five-minute writes).
    const c = await cachedRecord({ type: "ephemeral" });
    assert.equal(c.prompt_tokens, 20 + 40 + 300);
    assert.equal(micro(c.cost_cache_write), micro(40 * 3.75 / 1e6));
    assert.equal(micro(c.cost), micro((20 * 3 + 300 * 0.3 + 40 * 3.75 + 7 * 15) / 1e6));

    // Writes kept an hour are priced as such on the Messages API's native path (Anthropic's cache_creation).
    for (const stream of [false, true]) {
      const h = await cachedRecord({ type: "ephemeral", ttl: "1h" }, stream);
      assert.equal(micro(h.cost_cache_write), micro(40 * 6 / 1e6), `stream: ${stream}`);
    }
  } finally {
    await gw.stop();
    await fakes.stop();
  }
});

Deno.test("pricing: Gemini's thought tokens as reasoning; a catalog price by default, a target's own price over it", async () => {
  const fakes = startFakes({ openai: startFakeOpenAI, gemini: startFakeGemini });
  const gw = await startGateway(`
providers:
  oa: { type: openai, base_url: "${fakes.openai.baseURL}", api_key: "${FAKE_KEY}" }
  gm: { type: gemini, base_url: "${fakes.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  thinker:
    type: chat
    targets: [{ provider: gm, model: gem-ok, price: { input: 1.25, output: 10, reasoning: 3.5 } }]
  catalogued: { type: chat, targets: [{ provider: oa, model: gpt-4o-mini }] }
  overridden: { type: chat, targets: [{ provider: oa, model: gpt-4o-mini, price: { input: 1, output: 2 } }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: admin, sha256: ${hashToken(ADMIN)} }
`);
  try {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN, maxRetries: 0 });
    const ask = (model: string, extra: Record<string, unknown> = {}) =>
      client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }], ...extra })
        .withResponse();

    // reasoning_effort asks Gemini for its thoughts: 11 prompt, 7 answer + FAKE_GEMINI_THOUGHT_TOKENS thought tokens.
    const thought = await ask("thinker", { reasoning_effort: "low" });
    const t = await recordOf(gw, thought.response.headers.get("x-request-id")!);
    assert.equal(t.completion_tokens, 7 + FAKE_GEMINI_THOUGHT_TOKENS);
    assert.equal(micro(t.cost_reasoning), micro(FAKE_GEMINI_THOUGHT_TOKENS * 3.5 / 1e6));
    assert.equal(micro(t.cost), micro((11 * 1.25 + 7 * 10 + FAKE_GEMINI_THOUGHT_TOKENS * 3.5) / 1e6));

    // No price of its own: the catalog's, for an OpenAI gpt-4o-mini (11 prompt, 7 completion).
    const rates = lookupPrice(defaultCatalog(), "openai", "gpt-4o-mini")!;
    assert.ok(rates, "the catalog knows gpt-4o-mini");
    const c = await recordOf(gw, (await ask("catalogued")).response.headers.get("x-request-id")!);
    assert.equal(micro(c.cost), micro((11 * rates.input + 7 * rates.output) / 1e6));
    assert.ok(c.cost > 0);
    const o = await recordOf(gw, (await ask("overridden")).response.headers.get("x-request-id")!);
    assert.equal(micro(o.cost), micro((11 * 1 + 7 * 2) / 1e6), "a target's own price wins");
  } finally {
    await gw.stop();
    await fakes.stop();
  }
});

Deno.test("pricing: Bedrock's cache reads and writes, apart from its input count, priced by class (JSON and stream)", async () => {
  const fakes = startFakes({ bedrock: startFakeBedrock });
  // An in-region Claude Sonnet 4.5 profile the catalog prices; `cached` makes the fake report cache tokens.
  const model = "us.anthropic.claude-sonnet-4-5-cached-v1:0";
  const gw = await startGateway(`
providers:
  aws:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fakes.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  catalogued: { type: chat, targets: [{ provider: aws, model: "${model}" }] }
  overridden:
    type: chat
    targets:
      - provider: aws
        model: "${model}"
        price: { input: 2, output: 8, cached_input: 0.2, cache_write_5m: 2.5 }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: admin, sha256: ${hashToken(ADMIN)} }
`);
  try {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN, maxRetries: 0 });
    // Converse reports 12 inputTokens (cache excluded), FAKE_BEDROCK_CACHE_READ reads and
    // FAKE_BEDROCK_CACHE_WRITE writes apart from them, and 6 outputTokens. Reads are priced at cached_input,
    // writes at cache_write_5m (Converse's writes are Claude's default five minutes), the 12 at input.
    const input = 12;
    const reads = FAKE_BEDROCK_CACHE_READ;
    const writes = FAKE_BEDROCK_CACHE_WRITE;
    const output = 6;
    const expectCost = (
      r: Record<string, number>,
      rates: { input: number; output: number; cached: number; write: number },
      what: string,
    ) => {
      assert.equal(
        r.prompt_tokens,
        input + reads + writes,
        `${what}: the prompt counts cache reads and writes`,
      );
      assert.equal(r.completion_tokens, output, what);
      assert.equal(micro(r.cost_input), micro(input * rates.input / 1e6), `${what}: cost_input`);
      assert.equal(micro(r.cost_cached), micro(reads * rates.cached / 1e6), `${what}: cost_cached`);
      assert.equal(micro(r.cost_cache_write), micro(writes * rates.write / 1e6), `${what}: cost_cache_write`);
      assert.equal(micro(r.cost_output), micro(output * rates.output / 1e6), `${what}: cost_output`);
      assert.equal(r.cost_reasoning, 0, `${what}: cost_reasoning`);
      assert.equal(
        micro(r.cost),
        micro(
          (input * rates.input + reads * rates.cached + writes * rates.write + output * rates.output) / 1e6,
        ),
        `${what}: cost`,
      );
    };

    const price = lookupPrice(defaultCatalog(), "bedrock", model)!;
    assert.ok(price, "the catalog knows Claude Sonnet 4.5 on Bedrock");
    assert.ok(price.cachedInput !== undefined && price.cacheWrite5m !== undefined, "with cache rates");
    const catalog = {
      input: price.input,
      output: price.output,
      cached: price.cachedInput!,
      write: price.cacheWrite5m!,
    };
    // The rates differ class by class, so a token priced in the wrong class shows.
    assert.equal(new Set(Object.values(catalog)).size, 4);

    const json = await client.chat.completions.create({
      model: "catalogued",
      messages: [{ role: "user", content: "Hi" }],
    })
      .withResponse();
    assert.equal(json.data.usage?.prompt_tokens, input + reads + writes);
    assert.equal(json.data.usage?.prompt_tokens_details?.cached_tokens, reads);
    expectCost(await recordOf(gw, json.response.headers.get("x-request-id")!), catalog, "Converse");

    // ConverseStream: the usage comes in the `metadata` event, which the client did not ask to see.
    const streamed = await client.chat.completions.create({
      model: "catalogued",
      messages: [{ role: "user", content: "Hi" }],
      stream: true,
    })
      .withResponse();
    for await (const _ of streamed.data) { /* drain */ }
    const s = await recordOf(gw, streamed.response.headers.get("x-request-id")!);
    assert.equal((s as Record<string, unknown>).stream, true);
    expectCost(s, catalog, "ConverseStream");

    // A target's own price over the catalog's, class by class, JSON and stream.
    const own = { input: 2, output: 8, cached: 0.2, write: 2.5 };
    const o = await client.chat.completions.create({
      model: "overridden",
      messages: [{ role: "user", content: "Hi" }],
    })
      .withResponse();
    expectCost(await recordOf(gw, o.response.headers.get("x-request-id")!), own, "Converse, own price");
    const os = await client.chat.completions.create({
      model: "overridden",
      messages: [{ role: "user", content: "Hi" }],
      stream: true,
    })
      .withResponse();
    for await (const _ of os.data) { /* drain */ }
    expectCost(
      await recordOf(gw, os.response.headers.get("x-request-id")!),
      own,
      "ConverseStream, own price",
    );

    // GET /metrics has the same split: two requests of each alias, by class.
    const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } }))
      .text();
    const metric = (alias: string, cls: string) => {
      const line = text.split("\n").find((l) =>
        l.startsWith(`gateway_cost_by_class_total{alias="${alias}",provider="aws",class="${cls}"} `)
      );
      return line === undefined ? undefined : Number(line.split(" ").at(-1));
    };
    for (const [alias, rates] of [["catalogued", catalog], ["overridden", own]] as const) {
      assert.equal(micro(metric(alias, "input")!), micro(2 * input * rates.input / 1e6), `${alias} input`);
      assert.equal(micro(metric(alias, "cached_input")!), micro(2 * reads * rates.cached / 1e6), alias);
      assert.equal(micro(metric(alias, "cache_write")!), micro(2 * writes * rates.write / 1e6), alias);
      assert.equal(micro(metric(alias, "output")!), micro(2 * output * rates.output / 1e6), alias);
      assert.equal(metric(alias, "reasoning"), undefined, `${alias}: no reasoning cost, no series`);
    }
  } finally {
    await gw.stop();
    await fakes.stop();
  }
});

Deno.test("pricing: OpenAI audio tokens at the target's audio rates, text at its text rates; as text without them", async () => {
  const up = startRawUpstream();
  const gw = await startGateway(`
providers:
  oa: { type: openai, base_url: "${up.url}/v1", api_key: "${FAKE_KEY}" }
models:
  voice:
    type: chat
    targets: [{ provider: oa, model: gpt-4o-audio-preview, price: { input: 2.5, output: 10, audio_input: 40, audio_output: 80 } }]
  voice-as-text:
    type: chat
    targets: [{ provider: oa, model: gpt-4o-audio-preview, price: { input: 2.5, output: 10 } }]
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: admin, sha256: ${hashToken(ADMIN)} }
`);
  try {
    // gpt-4o-audio-preview: 1,000 prompt tokens of which 900 audio, 500 completion tokens of which 400 audio.
    up.next = {
      status: 200,
      headers: { "content-type": "application/json" },
      chunks: [JSON.stringify({
        id: "chatcmpl-a",
        object: "chat.completion",
        created: 1,
        model: "gpt-4o-audio-preview",
        choices: [{ index: 0, message: { role: "assistant", content: "Hi" }, finish_reason: "stop" }],
        usage: {
          prompt_tokens: 1_000,
          completion_tokens: 500,
          total_tokens: 1_500,
          prompt_tokens_details: { cached_tokens: 0, audio_tokens: 900 },
          completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 400 },
        },
      })],
    };
    const ask = async (model: string) => {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "Hi" }] }),
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      return await recordOf(gw, res.headers.get("x-request-id")!);
    };
    const voice = await ask("voice");
    assert.equal(micro(voice.cost_input), micro((100 * 2.5 + 900 * 40) / 1e6));
    assert.equal(micro(voice.cost_output), micro((100 * 10 + 400 * 80) / 1e6));
    assert.equal(micro(voice.cost), micro((100 * 2.5 + 900 * 40 + 100 * 10 + 400 * 80) / 1e6));
    const text = await ask("voice-as-text");
    assert.equal(micro(text.cost), micro((1_000 * 2.5 + 500 * 10) / 1e6));
  } finally {
    await gw.stop();
    await up.stop();
  }
});
