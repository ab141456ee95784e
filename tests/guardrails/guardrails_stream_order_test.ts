/**
 * Output guardrails on a stream run as on a JSON answer, over real sockets: in the order the alias lists them,
 * each seeing what the ones before it left. A webhook after a built-in `mask` is sent the placeholder, never the
 * value; one after a built-in `deny` is never sent what that guardrail refuses (the built-in's sliding window
 * has judged every character the webhook gets). A service is never asked about an empty text, and the usage
 * record holds one outcome per guardrail, however many segments and lanes (content, reasoning) the stream had.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { nthLog, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type ScriptedChat, startScriptedChat } from "../helpers/scripted_chat.ts";
import { type FakeWebhook, startFakeWebhook } from "../helpers/fake_guardrails.ts";

const TOKEN = "gw-stream-order-0123456789abcdef";
const ADMIN = "gw-stream-order-admin-0123456789";
const EMAIL = "bob.private@corp-mail.org";
const CARD = "4111 1111 1111 1111";

interface Rig {
  gw: TestGateway;
  up: ScriptedChat;
  hook: FakeWebhook;
}

async function withRig(fn: (rig: Rig) => Promise<void>) {
  const up = startScriptedChat();
  const hook = startFakeWebhook();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-scripted-0123456789 }
guardrails:
  mask-email: { type: pii, entities: [EMAIL], phase: output, action: mask }
  deny-card: { type: pii, entities: [CREDIT_CARD], phase: output, action: deny }
  flag-ip: { type: pii, entities: [IP_ADDRESS], phase: output, action: flag }
  hook-out: { type: webhook, url: "${hook.url}/check", phase: output, timeout: 5s, on_failure: fail_open }
models:
  masked: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [mask-email, hook-out] }
  denied: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [deny-card, hook-out] }
  mask-only: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [mask-email] }
  hooked: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [hook-out] }
  three: { type: chat, targets: [ { provider: up, model: s, retries: 0 } ], guardrails: [mask-email, hook-out, flag-ip] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`);
  try {
    await fn({ gw, up, hook });
  } finally {
    await gw.stop();
    await Promise.all([up.stop(), hook.stop()]);
  }
}

/** A chat completion of `model`, streamed or not: its status and whole body (a stream read to its end). */
async function ask(
  gw: TestGateway,
  model: string,
  stream: boolean,
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "who?" }] }),
  });
  return { status: res.status, text: await res.text() };
}

/** The content the client read: a JSON answer's message, or a stream's deltas joined. */
function contentOf(text: string, stream: boolean): string {
  if (!stream) return JSON.parse(text).choices[0].message.content;
  return text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)))
    .map((c) => c.choices?.[0]?.delta?.content ?? "").join("");
}

/** The texts the webhook was sent, call by call. */
function sent(hook: FakeWebhook): string[][] {
  return hook.calls.map((c) => (c.body as { texts: string[] }).texts);
}

Deno.test("guardrails stream order: a webhook after a built-in mask gets the placeholder, streamed as in JSON", async () => {
  await withRig(async ({ gw, up, hook }) => {
    // The address split across chunks (its first part an address too, `…corp-mail.or`), then enough text for
    // a second segment of the stream.
    up.answer = () => ({
      content: ["Contact bob.private@corp-mail.or", "g for details. ", "x".repeat(300)],
    });
    for (const stream of [false, true]) {
      hook.calls.length = 0;
      const res = await ask(gw, "masked", stream);
      assert.equal(res.status, 200, res.text);
      assert.ok(!res.text.includes("corp-mail"), `stream=${stream}: the client got the placeholder`);
      // The same placeholder streamed as in JSON: none was issued for the part of the address.
      assert.equal(contentOf(res.text, stream), `Contact <EMAIL_1> for details. ${"x".repeat(300)}`);
      const texts = sent(hook);
      assert.ok(texts.length > 0, `stream=${stream}: the webhook was asked`);
      assert.ok(
        !JSON.stringify(texts).includes("corp-mail"),
        `stream=${stream}: the webhook never got the address`,
      );
      assert.match(texts.flat().join(""), /^Contact <EMAIL_1> for details\. x{300}$/, `stream=${stream}`);
      assert.ok(
        texts.every((call) => call.length > 0 && call.every((t) => t !== "")),
        `stream=${stream}: no call asked about nothing: ${
          JSON.stringify(texts.map((c) => c.map((t) => t.length)))
        }`,
      );
    }
  });
});

Deno.test("guardrails stream order: a stream masks with the placeholders a JSON answer gives", async () => {
  await withRig(async ({ gw, up }) => {
    // Each address's first chunk is an address too (`….or`, `….c`): no placeholder is issued for that part.
    up.answer = () => ({
      content: ["Write bob.private@corp-mail.or", "g or ann@example.c", "om today."],
    });
    for (const stream of [false, true]) {
      const res = await ask(gw, "mask-only", stream);
      assert.equal(res.status, 200, res.text);
      assert.equal(contentOf(res.text, stream), "Write <EMAIL_1> or <EMAIL_2> today.", `stream=${stream}`);
    }
  });
});

Deno.test("guardrails stream order: a stream's webhook is asked about each segment, never about nothing", async () => {
  await withRig(async ({ gw, up, hook }) => {
    // About 320 characters, whose last chunk fills a segment: nothing is left for the stream's end.
    up.answer = () => ({ content: ["Intro. ", "and then: ", "x".repeat(300)] });
    const res = await ask(gw, "hooked", true);
    assert.equal(res.status, 200, res.text);
    const texts = sent(hook);
    assert.equal(texts.flat().join(""), `Intro. and then: ${"x".repeat(300)}`);
    assert.ok(
      texts.every((call) => call.length > 0 && call.every((t) => t !== "")),
      `no call asked about nothing: ${JSON.stringify(texts.map((c) => c.map((t) => t.length)))}`,
    );
  });
});

Deno.test("guardrails stream order: a webhook after a built-in deny is never sent what it refuses", async () => {
  await withRig(async ({ gw, up, hook }) => {
    // Harmless text first, so the webhook is asked about a segment before the card comes.
    up.answer = () => ({
      content: ["a".repeat(300), ` Card ${CARD.slice(0, 9)}`, `${CARD.slice(9)} `, "b".repeat(300)],
    });
    const json = await ask(gw, "denied", false);
    assert.equal(json.status, 400, json.text);
    assert.equal(hook.calls.length, 0, "a JSON answer is refused before the webhook is asked");

    const streamed = await ask(gw, "denied", true);
    assert.equal(streamed.status, 200);
    assert.match(streamed.text, /content_policy_violation/, "the stream ends with the error event");
    assert.ok(!streamed.text.includes("data: [DONE]") && !streamed.text.includes("4111"));
    const texts = JSON.stringify(sent(hook));
    assert.ok(!texts.includes("4111") && !texts.includes("1111"), `the webhook never got the card: ${texts}`);
    assert.ok(!texts.includes("b"), "nor anything after it");
  });
});

Deno.test("guardrails stream order: one outcome per guardrail in the record, streamed as in JSON", async () => {
  await withRig(async ({ gw, up, hook }) => {
    // A service that fails on every call, let through (fail_open): each segment of each lane fails.
    hook.faults.failStatus = 500;
    up.answer = () => ({
      reasoning: ["The user asks who. ", "r".repeat(400)],
      content: [`Write to ${EMAIL} `, "y".repeat(300), " from 10.1.2.3 ", "z".repeat(300)],
    });
    const records: Record<string, unknown>[] = [];
    for (const [n, stream] of [[1, false], [2, true]] as const) {
      hook.calls.length = 0;
      const res = await ask(gw, "three", stream);
      assert.equal(res.status, 200, res.text);
      assert.ok(!res.text.includes(EMAIL) && res.text.includes("10.1.2.3"));
      if (stream) assert.ok(hook.calls.length > 2, "the stream asked the service per segment and lane");
      const line = await nthLog(gw, (l) => l.msg === "request" && l.path === "/v1/chat/completions", n);
      assert.equal(line.stream === true, stream);
      const rows = await (await fetch(`${gw.url}/admin/requests?guardrail=hook-out`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      })).json();
      records.push(rows.data[0]);
    }
    const expected = [
      { name: "mask-email", phase: "output", action: "mask", types: ["EMAIL"] },
      { name: "hook-out", phase: "output", action: "error", error: "unavailable" },
      { name: "flag-ip", phase: "output", action: "flag", types: ["IP_ADDRESS"] },
    ];
    for (const [i, r] of records.entries()) {
      const label = i === 0 ? "JSON" : "stream";
      assert.equal(r.stream, i === 1, label);
      assert.deepEqual(r.guardrails, expected, label);
      assert.equal(r.rule, "guardrail:mask-email,guardrail:hook-out,guardrail:flag-ip", label);
      assert.equal(r.outcome, "modify", label);
    }
  });
});
