/**
 * A request's cost from the token classes its vendor reports (issue 26, acceptance 1): OpenAI's reasoning
 * tokens priced apart, Anthropic's cache reads and cache writes, Gemini's thought tokens, each to the
 * micro-dollar of lib/pricing/cost.ts's arithmetic, in the usage record's total and its breakdown; a target
 * without a price of its own priced from the catalog, and one with its own price charged at that.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_KEY, FAKE_REASONING_TOKENS, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { FAKE_GEMINI_KEY, FAKE_GEMINI_THOUGHT_TOKENS, startFakeGemini } from "../helpers/fake_gemini.ts";
import { defaultCatalog, lookupPrice } from "../../lib/pricing/catalog.ts";
import { startFakes } from "../helpers/fakes.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";

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

    // With cache_control, the fake reports 40 cache writes and 300 cache reads (five-minute writes).
    const cached = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": TEST_TOKEN,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({
        model: "sonnet",
        max_tokens: 50,
        system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
        messages: [{ role: "user", content: "Hi" }],
      }),
    });
    assert.equal(cached.status, 200);
    await cached.body?.cancel();
    const c = await recordOf(gw, cached.headers.get("x-request-id")!);
    assert.equal(c.prompt_tokens, 20 + 40 + 300);
    assert.equal(micro(c.cost_cache_write), micro(40 * 3.75 / 1e6));
    assert.equal(micro(c.cost), micro((20 * 3 + 300 * 0.3 + 40 * 3.75 + 7 * 15) / 1e6));
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
