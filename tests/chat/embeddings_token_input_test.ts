/**
 * `/v1/embeddings` with token-id input (`int[]`, `int[][]`), in-process over a raw upstream: an alias whose
 * content rules (deny or redact) or input guardrails read the input refuses ids with a 400
 * `token_input_not_checkable` naming `input`, the upstream never called (else a denied text would pass by being
 * tokenized first); an alias without them takes ids as before, and every alias still takes text.
 */
import assert from "node:assert/strict";
import { inProcessGateway } from "../helpers/in_process.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

Deno.test("embeddings: token ids are refused where rules or input guardrails would read the input, taken elsewhere", async () => {
  const up = startRawUpstream();
  up.stepFor = (request) => {
    const input = JSON.parse(request.body).input;
    const count = Array.isArray(input[0]) || typeof input[0] === "string" ? input.length : 1;
    const data = Array.from(
      { length: count },
      (_, index) => ({ object: "embedding", index, embedding: [0.5, 0.25] }),
    );
    const text = JSON.stringify({
      object: "list",
      data,
      model: "m",
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
    return { status: 200, headers: { "content-type": "application/json" }, chunks: [text] };
  };
  const target = `targets: [{ provider: oai, model: m, retries: 0 }]`;
  const gw = inProcessGateway(`
guardrails:
  no-keys: { type: pii, entities: [PRIVATE_KEY], phase: input, action: flag }
providers:
  oai: { type: openai, base_url: "${up.url}/v1", api_key: "sk-upstream-key-abcdef0123456789" }
models:
  emb-deny: { type: embedding, ${target}, content_rules: [{ name: keys, pattern: "BEGIN PRIVATE KEY", action: deny }] }
  emb-redact: { type: embedding, ${target}, content_rules: [{ name: mails, pattern: "\\\\S+@\\\\S+", action: redact }] }
  emb-guarded: { type: embedding, ${target}, guardrails: [no-keys] }
  emb-plain: { type: embedding, ${target} }
  chat-unused: { type: chat, ${target} }
${TEST_TOKENS_YAML}`);
  const embed = async (alias: string, input: unknown) => {
    const res = await gw.fetch("/v1/embeddings", {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: alias, input, encoding_format: "float" }),
    });
    return { status: res.status, body: await res.json() };
  };
  // cl100k_base's ids of "-----BEGIN PRIVATE KEY-----".
  const ids = [15431, 38688, 58893, 12282, 15431];
  try {
    for (
      const [alias, rule] of [
        ["emb-deny", "alias.content:keys"],
        ["emb-redact", "alias.content:mails"],
        ["emb-guarded", "guardrail:no-keys"],
      ]
    ) {
      for (const input of [ids, [ids, [1, 2]]]) {
        const before = up.requests.length;
        const refused = await embed(alias, input);
        const what = `${alias} ${JSON.stringify(input)}: ${JSON.stringify(refused.body)}`;
        assert.equal(refused.status, 400, what);
        assert.equal(refused.body.error.type, "invalid_request_error", what);
        assert.equal(refused.body.error.code, "token_input_not_checkable", what);
        assert.equal(refused.body.error.param, "input", what);
        assert.equal(up.requests.length, before, `${what}: no upstream call`);
        assert.equal(gw.records.at(-1)?.rule, rule, what);
      }
      assert.equal((await embed(alias, ["some text", "more"])).status, 200, alias);
    }
    // What the deny rule refuses as text.
    assert.equal(
      (await embed("emb-deny", "-----BEGIN PRIVATE KEY-----")).body.error.code,
      "content_policy_violation",
    );
    // An alias that reads nothing of its input takes ids at no cost.
    for (const input of [ids, [ids, [1, 2]]]) {
      const taken = await embed("emb-plain", input);
      assert.equal(taken.status, 200, JSON.stringify(taken.body));
      assert.deepEqual(JSON.parse(up.requests.at(-1)!.body).input, input);
    }
  } finally {
    await up.stop();
  }
});
