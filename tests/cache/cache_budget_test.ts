/**
 * What a cache hit costs (issue 24, acceptance 5), over real sockets: 100 hits leave the token's budget and
 * its tpm where the one miss put them and are charged to its rpm; their usage records say `cache: hit` with
 * zero tokens and cost and what they saved, and `/admin/usage` per token and per alias sums the hits, lookups
 * and savings. Counters are read through `/admin/explain`, which takes nothing.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { startCacheUpstream } from "./cache_upstream.ts";

const ADMIN = "gw-cache-admin-token-0123456789";
/** The upstream's usage per answer (cache_upstream.ts): 20 prompt + 8 completion tokens. */
const TOKENS = 28;
/** At 1 per million prompt tokens and 2 per million completion tokens. */
const COST = (20 * 1 + 8 * 2) / 1_000_000;

interface Limit {
  rule: string;
  used: number;
}

async function explain(gw: TestGateway) {
  const res = await fetch(`${gw.url}/admin/explain?token=one&model=priced`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  const limit = (rule: string) => (body.limits as Limit[]).find((l) => l.rule === rule)!.used;
  return {
    rpm: limit("token.rpm"),
    tpm: limit("token.tpm"),
    budget: body.budget.used as number,
    period: body.budget.period_id as string,
  };
}

async function ask(gw: TestGateway): Promise<string | null> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "priced", messages: [{ role: "user", content: "Hi" }] }),
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
  return res.headers.get("x-cache");
}

Deno.test("cache budgets: 100 hits leave the token budget and tpm unchanged, are charged rpm, and show as savings", async () => {
  const up = startCacheUpstream();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  priced:
    type: chat
    targets: [{ provider: up, model: echo, price: { input: 1, output: 2 } }]
    cache: {}
tokens:
  - name: one
    sha256: ${hashToken(TEST_TOKEN)}
    models: ["*"]
    limits: { rpm: 120, tpm: 1000000 }
    budget: { tokens: 1000000, period: month }
admin_tokens:
  - { name: admin, sha256: ${hashToken(ADMIN)} }
`);
  try {
    assert.equal(await ask(gw), "MISS");
    // The miss's settlement (its real usage) is done once its record is in: wait for the budget to show it.
    let before = await explain(gw);
    for (let i = 0; before.budget < TOKENS && i < 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      before = await explain(gw);
    }
    assert.equal(before.budget, TOKENS, "the miss spent its tokens");
    for (let i = 0; i < 100; i++) assert.equal(await ask(gw), "HIT");
    assert.equal(up.calls.length, 1);
    const after = await explain(gw);
    if (after.period === before.period) assert.equal(after.budget, before.budget, "hits spend no budget");
    // tpm is a bucket that refills with time, so it can only have gone down; one charged hit would add 28.
    assert.ok(after.tpm <= before.tpm, `tpm unchanged by hits: ${before.tpm} → ${after.tpm}`);
    // rpm refills at 2 a second; 100 charged hits leave it far above the 1 of the miss whatever the pace.
    assert.ok(after.rpm >= 50, `hits are charged to rpm: ${after.rpm}`);

    const headers = { authorization: `Bearer ${ADMIN}` };
    const deadline = Date.now() + 10_000;
    let records: Record<string, unknown>[] = [];
    while (records.length < 101 && Date.now() < deadline) {
      const page = await (await fetch(`${gw.url}/admin/requests?limit=200`, { headers })).json();
      records = page.data;
      if (records.length < 101) await new Promise((r) => setTimeout(r, 50));
    }
    const hits = records.filter((r) => r.cache === "hit");
    assert.equal(hits.length, 100);
    for (const hit of hits) {
      assert.equal(hit.prompt_tokens, 0);
      assert.equal(hit.completion_tokens, 0);
      assert.equal(hit.cost, 0);
      assert.equal(hit.saved_tokens, TOKENS);
      assert.ok(Math.abs(Number(hit.saved_cost) - COST) < 1e-12);
      assert.equal(hit.provider, "up", "a hit names the target that filled its entry");
    }
    for (const group of ["token", "alias"]) {
      const report = await (await fetch(`${gw.url}/admin/usage?group_by=${group}`, { headers })).json();
      assert.equal(report.groups.length, 1, group);
      const row = report.groups[0];
      assert.equal(row.key[group], group === "token" ? "one" : "priced");
      assert.equal(row.cache_hits, 100, group);
      assert.equal(row.cache_lookups, 101, group);
      assert.equal(row.saved_tokens, 100 * TOKENS, group);
      assert.ok(Math.abs(row.saved_cost - 100 * COST) < 1e-9, group);
      assert.equal(row.prompt_tokens + row.completion_tokens, TOKENS, `${group}: only the miss spent`);
    }
  } finally {
    await gw.stop();
    await up.stop();
  }
});

Deno.test("cache budgets: a streamed hit is replayed whole under budget.stop_streams, and saves the entry's usage", async () => {
  const up = startCacheUpstream();
  const SMALL = "gw-cache-small-token-0123456789";
  // The answer echoes the question: ~1,000 tokens of prompt and ~1,000 of answer by the stream guard's
  // estimate, more than the small token's 1,500-token budget allows one stream, were it charged.
  const question = "lorem ipsum dolor sit amet ".repeat(150);
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  shared: { type: chat, targets: [{ provider: up, model: echo }], cache: { scope: shared } }
tokens:
  - { name: big, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
  - name: small
    sha256: ${hashToken(SMALL)}
    models: ["*"]
    budget: { tokens: 1500, period: month, stop_streams: true }
`);
  try {
    const ask = (token: string, stream: boolean) =>
      fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "shared", stream, messages: [{ role: "user", content: question }] }),
      });
    const fill = await ask(TEST_TOKEN, false);
    assert.equal(fill.headers.get("x-cache"), "MISS");
    const answer = (await fill.json()).choices[0].message.content as string;

    const res = await ask(SMALL, true);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-cache"), "HIT");
    const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) =>
      e.slice(6)
    );
    assert.equal(events.at(-1), "[DONE]", `the hit ran to its end: ${events.at(-1)?.slice(0, 200)}`);
    const streamed = events.slice(0, -1).map((e) => JSON.parse(e).choices?.[0]?.delta?.content ?? "").join(
      "",
    );
    assert.equal(streamed, answer);
    assert.equal(up.calls.length, 1);

    const record = await waitForLog(gw, (l) => l.msg === "request" && l.token === "small");
    assert.equal(record.cache, "hit");
    assert.equal(record.error_code, undefined);
    assert.equal(record.prompt_tokens, 0);
    assert.equal(record.saved_tokens, TOKENS, "what the entry's answer used, as a JSON hit records");
  } finally {
    await gw.stop();
    await up.stop();
  }
});
