/**
 * The semantic lookup's embedding call, over real sockets: the text it embeds meets the embedding alias's
 * content rules and input guardrails as a `/v1/embeddings` request's does (a redaction goes upstream redacted; a
 * refusal means no lookup, recorded on the lookup's own record and logged, never the client's error), and it
 * has a deadline of its own (`semantic.timeout`), past which the embedding call is aborted and the request goes
 * on as an exact miss.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { embed } from "./cache_upstream.ts";

const ADMIN = "gw-semantic-admin-token-0123456789";
const CARD = "4111-1111-1111-1111";

/** An upstream answering chat with `ok` and embeddings as a bag of words; model `hang` embeds never. */
function startUpstream() {
  const inputs: unknown[] = [];
  const aborted = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.json();
    if (new URL(request.url).pathname === "/v1/embeddings") {
      inputs.push(body.input);
      if (body.model === "hang") {
        // Answers nothing until the gateway gives up on it (then the server may shut down).
        request.signal.addEventListener("abort", () => aborted.resolve());
        await aborted.promise;
        return new Response(null, { status: 500 });
      }
      return Response.json({
        object: "list",
        model: body.model,
        data: [{ object: "embedding", index: 0, embedding: embed(String(body.input)) }],
        usage: { prompt_tokens: 3, total_tokens: 3 },
      });
    }
    return Response.json({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    });
  });
  return {
    baseURL: `http://127.0.0.1:${server.addr.port}/v1`,
    inputs,
    aborted: aborted.promise,
    stop: () => server.shutdown(),
  };
}

/** A gateway whose alias `bot` looks up through the embedding alias `embed`, configured by `embed`. */
async function gateway(upstream: { baseURL: string }, embedAlias: string, semantic = "") {
  return await startGateway(`
providers:
  up: { type: openai, base_url: "${upstream.baseURL}", api_key: sk-semantic-upstream-0001 }
guardrails:
  no-cards: { type: pii, entities: [CREDIT_CARD] }
models:
  bot:
    type: chat
    targets: [{ provider: up, model: echo }]
    cache: { semantic: { embeddings: embed, threshold: 0.9${semantic} } }
  embed: ${embedAlias}
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: admin, sha256: ${hashToken(ADMIN)} }
`);
}

async function ask(gw: TestGateway, content: string): Promise<string | null> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "bot", messages: [{ role: "user", content }] }),
  });
  assert.equal(res.status, 200, "the lookup never fails the client's request");
  assert.equal((await res.json()).choices[0].message.content, "ok");
  return res.headers.get("x-cache");
}

/** The lookup's own usage record, once written. */
async function lookupRecord(gw: TestGateway): Promise<Record<string, unknown>> {
  for (let tries = 0;; tries++) {
    const res = await fetch(`${gw.url}/admin/requests?limit=100`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    const records = (await res.json()).data as Record<string, unknown>[];
    const own = records.find((r) => String(r.request_id).endsWith(".semantic"));
    if (own !== undefined || tries === 200) return own ?? {};
    await new Promise((r) => setTimeout(r, 50));
  }
}

const RULES = `"\\\\b\\\\d{4}-\\\\d{4}-\\\\d{4}-\\\\d{4}\\\\b"`;

Deno.test("cache semantic: the embedding alias's redact rule applies to the text the lookup embeds", async () => {
  const up = startUpstream();
  const gw = await gateway(
    up,
    `{ type: embedding, targets: [{ provider: up, model: e }], content_rules: [{ name: card, pattern: ${RULES}, action: redact }] }`,
  );
  try {
    assert.equal(await ask(gw, `my card is ${CARD}`), "MISS");
    assert.equal(up.inputs.length, 1);
    assert.ok(!JSON.stringify(up.inputs).includes(CARD), JSON.stringify(up.inputs));
    const record = await lookupRecord(gw);
    assert.equal(record.status, 200);
    assert.equal(record.outcome, "modify");
    assert.equal(record.rule, "alias.content:card");
  } finally {
    await gw.stop();
    await up.stop();
  }
});

Deno.test("cache semantic: a deny rule or guardrail of the embedding alias means no lookup, a miss", async () => {
  for (
    const [rules, rule] of [
      [`content_rules: [{ name: card, pattern: ${RULES}, action: deny }]`, "alias.content:card"],
      ["guardrails: [no-cards]", "guardrail:no-cards"],
    ]
  ) {
    const up = startUpstream();
    const gw = await gateway(up, `{ type: embedding, targets: [{ provider: up, model: e }], ${rules} }`);
    try {
      assert.equal(await ask(gw, `my card is ${CARD}`), "MISS");
      assert.equal(up.inputs.length, 0, `${rule}: nothing was embedded`);
      const record = await lookupRecord(gw);
      assert.equal(record.status, 400);
      assert.equal(record.outcome, "deny");
      assert.equal(record.rule, rule);
      assert.equal(record.error_code, "content_policy_violation");
      await waitForLog(gw, (line) => line.msg === "semantic_lookup_failed" && line.rule === rule);
    } finally {
      await gw.stop();
      await up.stop();
    }
  }
});

Deno.test("cache semantic: an embedding slower than semantic.timeout is aborted there, and the request misses", async () => {
  const up = startUpstream();
  // The target's own timeouts would let the call run 10 s; the lookup's deadline is 200 ms.
  const gw = await gateway(
    up,
    "{ type: embedding, targets: [{ provider: up, model: hang, timeouts: { first_byte: 10s } }] }",
    ", timeout: 200ms",
  );
  try {
    assert.equal(await ask(gw, "what is the capital of france"), "MISS");
    await up.aborted;
    const record = await lookupRecord(gw);
    assert.equal(record.status, 504);
    assert.equal(record.error_code, "semantic_lookup_timeout");
    await waitForLog(gw, (line) => line.msg === "semantic_lookup_failed" && line.status === 504);
  } finally {
    await gw.stop();
    await up.stop();
  }
});
