/**
 * What an answer the output guardrails withhold costs, over real sockets: the upstream answered it, and spent
 * its tokens, whether or not the client got it. Its usage record carries the upstream's usage (or, for a stream
 * cut before the upstream reported any, the tokenizer's count of all the upstream sent, the text held back from
 * the client included), and the token's budget is charged with it as for any answered request.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { countTokens } from "../../lib/usage/estimate.ts";
import { nthLog, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { startScriptedChat } from "../helpers/scripted_chat.ts";

const TOKEN = "gw-guardrails-usage-token-0123456789";
const ADMIN = "gw-guardrails-usage-admin-012345678";
const CARD = "4111 1111 1111 1111";
/** The scripted upstream's usage per answer: 10 prompt + 5 completion tokens. */
const REPORTED = { prompt: 10, completion: 5 };

async function post(gw: TestGateway, path: string, body: Record<string, unknown>) {
  const res = await fetch(`${gw.baseURL}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/**
 * The usage record of the `n`th request (1-based), as its access-log line: at once for an answer whose record is
 * written before it is sent, and as it comes for a stream, whose record follows the client's last byte: it is
 * written once the stream's usage is known, and a stream refused mid-answer (the upstream reported no usage) is
 * counted by the token-count worker, whose first count loads the tokenizer (under a second alone, past 5 s with the
 * whole suite on 2 cores). Awaited as the event, not against a clock.
 */
function record(gw: TestGateway, n: number): Promise<Record<string, unknown>> {
  return nthLog(gw, (l) => l.msg === "request", n);
}

/** An upstream whose stream says all of `text` in its first chunk (the scripted one opens with a role chunk). */
function startFirstChunkUpstream(text: string) {
  const upstream = { baseURL: "", calls: 0, stop: () => server.shutdown() };
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    await request.body?.cancel();
    upstream.calls++;
    const chunk = {
      id: "chatcmpl-first",
      object: "chat.completion.chunk",
      created: 1,
      model: "scripted",
      choices: [{ index: 0, delta: { role: "assistant", content: text }, finish_reason: "stop" }],
    };
    return new Response(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`, {
      headers: { "content-type": "text/event-stream" },
    });
  });
  upstream.baseURL = `http://127.0.0.1:${server.addr.port}/v1`;
  return upstream;
}

async function budgetUsed(gw: TestGateway): Promise<number> {
  const res = await fetch(`${gw.url}/admin/explain?token=app&model=chat-guarded`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  return (await res.json()).budget.used as number;
}

Deno.test("guardrails usage: an answer withheld by an output guardrail is recorded and charged with what the upstream spent", async () => {
  const up = startScriptedChat();
  const firstChunk = startFirstChunkUpstream(`Your card is ${CARD}, thanks.`);
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
  first: { type: openai, base_url: "${firstChunk.baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  no-cards: { type: pii, entities: [CREDIT_CARD], phase: output, action: deny }
models:
  chat-guarded:
    type: chat
    targets: [ { provider: up, model: scripted, retries: 0, price: { input: 1, output: 2 } } ]
    guardrails: [no-cards]
  chat-first:
    type: chat
    targets: [ { provider: first, model: scripted, retries: 0 } ]
    guardrails: [no-cards]
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"], budget: { tokens: 1000000, period: month } }
admin_tokens:
  - { name: ops, token: ${ADMIN} }
`);
  try {
    const answer = `Your card is ${CARD}, thanks.`;
    up.answer = () => ({ content: [answer] });
    const ask = [{ role: "user", content: "card?" }];
    const whole: [string, Record<string, unknown>][] = [
      ["/chat/completions", { model: "chat-guarded", messages: ask }],
      ["/messages", { model: "chat-guarded", max_tokens: 50, messages: ask }],
      ["/responses", { model: "chat-guarded", input: "card?" }],
    ];
    let n = 0;
    let spent = 0;
    for (const [path, body] of whole) {
      const res = await post(gw, path, body);
      assert.equal(res.status, 400, path);
      assert.ok(!res.text.includes("4111"), path);
      const r = await record(gw, ++n);
      assert.equal(r.outcome, "deny", path);
      assert.equal(r.prompt_tokens, REPORTED.prompt, `${path}: the upstream's usage`);
      assert.equal(r.completion_tokens, REPORTED.completion, path);
      assert.ok(Math.abs(Number(r.cost) - 20 / 1_000_000) < 1e-12, `${path}: its cost`);
      spent += REPORTED.prompt + REPORTED.completion;
    }

    // A stream refused mid-answer: the upstream's usage chunk never came, so what it sent is counted, the
    // text held back from the client too.
    const pieces = ["Hello there. ", "Your card is 4111 1111", " 1111 1111, thanks."];
    up.answer = () => ({ content: pieces });
    const streamed = await post(gw, "/chat/completions", {
      model: "chat-guarded",
      stream: true,
      messages: ask,
    });
    assert.equal(streamed.status, 200);
    assert.ok(!streamed.text.includes("data: [DONE]") && !streamed.text.includes("4111"));
    const r = await record(gw, ++n);
    assert.equal(r.outcome, "deny");
    assert.equal(
      r.completion_tokens,
      await countTokens(pieces),
      "all the upstream sent, held-back text included",
    );
    assert.ok(Number(r.prompt_tokens) > 0);
    spent += Number(r.prompt_tokens) + Number(r.completion_tokens);

    // A stream refused at its first chunk (the card in it) answers 400, and is counted as well.
    const first = await post(gw, "/chat/completions", { model: "chat-first", stream: true, messages: ask });
    assert.equal(first.status, 400);
    const f = await record(gw, ++n);
    assert.equal(f.completion_tokens, await countTokens([answer]));
    assert.ok(Number(f.prompt_tokens) > 0);
    spent += Number(f.prompt_tokens) + Number(f.completion_tokens);

    assert.equal(up.seen.length + firstChunk.calls, n);
    // Settlement follows the record; wait for the last one to land in the budget.
    let used = await budgetUsed(gw);
    for (let i = 0; used !== spent && i < 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      used = await budgetUsed(gw);
    }
    assert.equal(used, spent, "the token's budget is charged what the upstream spent");
  } finally {
    await gw.stop();
    await up.stop();
    await firstChunk.stop();
  }
});
