/**
 * The semantic cache (issue 24, acceptance 6), over real sockets. The upstream embeds a text as the bag of its
 * lower-case words (cache_upstream.ts), so similarities are known in advance: the same words in another case
 * or with punctuation are 1.0; one extra word among seven is 7/√56 ≈ 0.935; "tell me the capital city of
 * France" against "what is the capital city of France" shares 5 of 7 words, 5/7 ≈ 0.714.
 *
 * - a paraphrase above the alias's threshold (0.9) hits (`HIT-SEMANTIC`, `x-cache-similarity`);
 * - below it misses, and a client may raise the threshold per request but never lower it;
 * - a different system prompt never hits, however similar the last turn;
 * - each semantic lookup is one embeddings call of the gateway's own, recorded without a token.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { startCacheUpstream } from "./cache_upstream.ts";

const ADMIN = "gw-cache-admin-token-0123456789";

async function ask(gw: TestGateway, messages: unknown[], headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "bot", messages }),
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  return {
    cache: res.headers.get("x-cache"),
    similarity: res.headers.get("x-cache-similarity"),
    text: body.choices[0].message.content as string,
  };
}

const user = (content: string) => [{ role: "user", content }];

Deno.test("cache semantic: paraphrases above the threshold hit, below miss; another system prompt never hits", async () => {
  const up = startCacheUpstream();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  bot:
    type: chat
    targets: [{ provider: up, model: echo }]
    cache: { semantic: { embeddings: embed, threshold: 0.9 } }
  embed: { type: embedding, targets: [{ provider: up, model: bag-of-words }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: admin, sha256: ${hashToken(ADMIN)} }
`);
  try {
    const first = await ask(gw, user("what is the capital city of france"));
    assert.equal(first.cache, "MISS");

    const same = await ask(gw, user("What is the capital city of France?"));
    assert.equal(same.cache, "HIT-SEMANTIC", "the same words in another case and with a question mark");
    assert.equal(same.similarity, "1.000");
    assert.equal(same.text, first.text);

    // A client's max-age holds for a semantic hit as for an exact one: once the entry is older, a miss.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const young = await ask(gw, user("what is the capital city of FRANCE"), { "cache-control": "max-age=1" });
    assert.equal(young.cache, "MISS", "the entry is over a second old");

    const raised = await ask(gw, user("What is the capital city of France please"), {
      "x-cache-semantic-threshold": "0.99",
    });
    assert.equal(raised.cache, "MISS", "0.935 is above the alias's 0.9 but below the client's 0.99");

    const lowered = await ask(gw, user("Tell me the capital city of France"), {
      "x-cache-semantic-threshold": "0.5",
    });
    assert.equal(lowered.cache, "MISS", "0.714 is below 0.9; a client cannot lower the threshold");

    const prompted = await ask(gw, [
      { role: "system", content: "Answer in French." },
      { role: "user", content: "what is the capital city of france" },
    ]);
    assert.equal(prompted.cache, "MISS", "the same last turn under another system prompt");

    assert.equal(up.calls.length, 5, "one upstream call per miss, none for the semantic hit");
    assert.equal(up.embeddings, 6, "one embedding per exact miss: the gateway's own calls");

    // The embedding calls are the gateway's own usage: records of their own, with no token.
    const records = await waitForRecords(gw, 12);
    const own = records.filter((r) => String(r.request_id).endsWith(".semantic"));
    assert.equal(own.length, 6);
    assert.ok(own.every((r) => r.token === null && r.endpoint === "embeddings" && r.alias === "embed"));
    const hits = records.filter((r) => r.cache === "hit_semantic");
    assert.equal(hits.length, 1);
    assert.equal(hits[0].prompt_tokens, 0);
    assert.equal(hits[0].saved_tokens, 28);
  } finally {
    await gw.stop();
    await up.stop();
  }
});

async function waitForRecords(gw: TestGateway, count: number): Promise<Record<string, unknown>[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await fetch(`${gw.url}/admin/requests?limit=100`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    const page = await res.json();
    const records = page.data as Record<string, unknown>[];
    if (records.length >= count || Date.now() > deadline) return records;
    await new Promise((r) => setTimeout(r, 50));
  }
}
