/**
 * Routing over real sockets against scripted upstreams: fallback, retries, Retry-After, no retry of client
 * errors, resets before and after the first byte, ejection with probes, saturation, and the admin view.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { type FaultUpstream, startFaultUpstream } from "../helpers/fault_upstream.ts";
import {
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  waitForLog,
} from "../helpers/gateway.ts";
import { waitFor } from "../helpers/usage.ts";
import { backstop, eventually } from "../helpers/backstop.ts";

const ADMIN_TOKEN = "gw-admin-token-0123456789abcdef";

/**
 * How long an ejected target is skipped. The skipped requests are only judged while the admin view says the
 * target is still ejected, and the probe is awaited, not slept for: a loaded machine cannot turn either into a
 * failure. It is long enough that the skipped requests fall inside it on any run that is not badly starved.
 */
const EJECT_COOLDOWN_MS = 3_000;

function configFor(a: FaultUpstream, b: FaultUpstream, routing = ""): string {
  return `
routing:
  backoff_base: 10ms
  backoff_max: 50ms
  eject_after: 3
  eject_cooldown: ${EJECT_COOLDOWN_MS}ms
${routing}
providers:
  a: { type: openai, base_url: "${a.baseURL}" }
  b: { type: openai, base_url: "${b.baseURL}" }
models:
  chat-ab: { type: chat, targets: [ { provider: a, model: a-model }, { provider: b, model: b-model } ] }
  chat-ab-impatient: { type: chat, targets: [ { provider: a, model: a-model, timeouts: { first_byte: 300ms } }, { provider: b, model: b-model } ] }
  chat-a: { type: chat, targets: [ { provider: a, model: a-model, retries: 0, max_in_flight: 1 } ] }
  chat-w: { type: chat, strategy: weighted, targets: [ { provider: a, model: a-model, weight: 1 }, { provider: b, model: b-model, weight: 1 } ] }
${TEST_TOKENS_YAML}
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN_TOKEN)} }
`;
}

async function withRouting(fn: (gw: TestGateway, a: FaultUpstream, b: FaultUpstream) => Promise<void>) {
  const a = startFaultUpstream("a");
  const b = startFaultUpstream("b");
  const gw = await startGateway(configFor(a, b));
  try {
    await fn(gw, a, b);
  } finally {
    await gw.stop();
    await a.stop();
    await b.stop();
  }
}

function chat(gw: TestGateway, model: string, stream = false) {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hi" }] }),
  });
}

Deno.test("routing: 5xx is retried on the same target, then the next target answers", async () => {
  await withRouting(async (gw, a, b) => {
    a.script.push({ status: 500 }, { status: 503 });
    const response = await chat(gw, "chat-ab");
    assert.equal(response.status, 200);
    assert.equal((await response.json()).choices[0].message.content, "answer from b");
    assert.equal(response.headers.get("x-gateway-provider"), "b");
    assert.equal(response.headers.get("x-gateway-attempts"), "3");
    assert.equal(a.hits, 2);
    assert.equal(b.hits, 1);
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "chat-ab");
    assert.deepEqual((line?.attempt_log as { outcome: string }[]).map((x) => x.outcome), [
      "upstream_error",
      "upstream_overloaded",
      "ok",
    ]);
  });
});

Deno.test("routing: a 400 from the upstream is passed on, never retried or sent elsewhere", async () => {
  await withRouting(async (gw, a, b) => {
    a.script.push({ status: 400 });
    const response = await chat(gw, "chat-ab");
    assert.equal(response.status, 400);
    await response.body?.cancel();
    assert.equal(a.hits, 1);
    assert.equal(b.hits, 0);
  });
});

Deno.test("routing: Retry-After is waited for before retrying the same target", async () => {
  await withRouting(async (gw, a, b) => {
    a.script.push({ status: 429, headers: { "retry-after-ms": "300" } });
    const started = performance.now();
    const response = await chat(gw, "chat-ab");
    const elapsed = performance.now() - started;
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-gateway-provider"), "a");
    await response.body?.cancel();
    assert.ok(elapsed >= 300, `waited ${elapsed} ms`);
    assert.equal(a.hits, 2);
    assert.equal(b.hits, 0);
  });
});

Deno.test("routing: connection reset before any byte and a slow first byte both fall back", async () => {
  await withRouting(async (gw, a) => {
    a.script.push({ resetBeforeHeaders: true }, { resetBeforeHeaders: true });
    const reset = await chat(gw, "chat-ab");
    assert.equal(reset.headers.get("x-gateway-provider"), "b");
    await reset.body?.cancel();
    // Held until the fake stops: past the target's 300 ms first byte however slow the machine is (only
    // `chat-ab-impatient` has that timeout, so the other tests' answers from a are never cut by a loaded machine).
    a.script.push({ hold: true }, { hold: true });
    const slow = await chat(gw, "chat-ab-impatient", true);
    assert.equal(slow.status, 200);
    assert.equal(slow.headers.get("x-gateway-provider"), "b");
    assert.match(await slow.text(), /answer [\s\S]*from [\s\S]*"b"[\s\S]*\[DONE\]/);
  });
});

Deno.test("routing: a stream that dies before its first chunk falls back; after it, the client gets an error event", async () => {
  await withRouting(async (gw, a, b) => {
    a.script.push({ cutAfterChunks: 1 });
    const cut = await chat(gw, "chat-ab", true);
    assert.equal(cut.headers.get("x-gateway-provider"), "a");
    const text = await cut.text();
    assert.match(text, /"answer "/, "what arrived before the cut was forwarded");
    assert.match(text, /"error"/);
    assert.ok(!text.includes("[DONE]"));
    assert.equal(b.hits, 0);

    a.script.length = 0;
    a.script.push({ resetBeforeHeaders: true }, { resetBeforeHeaders: true });
    const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: "chat-ab",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    let content = "";
    for await (const c of stream) content += c.choices[0]?.delta.content ?? "";
    assert.equal(content, "answer from b");
  });
});

Deno.test("routing: a target failing eject_after times is skipped, visible as ejected, then probed", async () => {
  await withRouting(async (gw, a) => {
    const admin = () =>
      fetch(`${gw.url}/admin/targets`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    a.script.push({ status: 500 }, { status: 500 }, { status: 500 });
    for (let i = 0; i < 2; i++) await (await chat(gw, "chat-ab")).body?.cancel();
    assert.equal(a.hits, 3, "two requests: a failed twice, then once more, and was ejected");
    const view = await (await admin()).json();
    const ab = view.data.find((x: { alias: string }) => x.alias === "chat-ab");
    assert.equal(ab.targets[0].state, "ejected");
    assert.equal(ab.targets[0].consecutive_failures, 3);
    assert.equal(ab.targets[1].state, "healthy");

    // Skipped while ejected, probed once the cooldown ends: judged by the gateway's own ejected_until (the same
    // clock). A request answered before it was decided during the cooldown and must skip a; one sent after it is
    // decided after it and must probe a. A request a loaded machine delays across the end is judged by neither.
    const ejectedUntil = Date.parse(ab.targets[0].ejected_until);
    let hitsAtProbe: number | undefined;
    const ask = async () => {
      const sentAt = Date.now();
      const answer = await chat(gw, "chat-ab");
      await answer.body?.cancel();
      const fromA = answer.headers.get("x-gateway-provider") === "a";
      if (Date.now() < ejectedUntil) assert.ok(!fromA && a.hits === 3, "skipped during the cooldown");
      if (sentAt >= ejectedUntil) assert.ok(fromA, "probed once the cooldown ended, and it recovered");
      if (fromA) hitsAtProbe ??= a.hits;
    };
    for (let i = 0; i < 3; i++) await ask();
    await eventually("a probed after the cooldown", async () => {
      await ask();
      return hitsAtProbe !== undefined;
    }, { everyMs: 100 });
    assert.equal(hitsAtProbe, 4, "probed by one request, which it answered");
    const after = await (await admin()).json();
    assert.equal(
      after.data.find((x: { alias: string }) => x.alias === "chat-ab").targets[0].state,
      "healthy",
    );

    // Admin endpoints take admin tokens only.
    const asClient = await fetch(`${gw.url}/admin/targets`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    assert.equal(asClient.status, 401);
    await asClient.body?.cancel();
  });
});

Deno.test("routing: a 403 or 404 moves to the next target but never ejects it (a client's reference can cause them)", async () => {
  await withRouting(async (gw, a, b) => {
    // eject_after is 3: four such answers in a row would have ejected a.
    a.script.push({ status: 404 }, { status: 403 }, { status: 404 }, { status: 403 });
    for (let i = 0; i < 4; i++) {
      const response = await chat(gw, "chat-ab");
      assert.equal(response.headers.get("x-gateway-provider"), "b");
      await response.body?.cancel();
    }
    assert.equal(a.hits, 4, "each tried once, never retried");
    const served = await chat(gw, "chat-ab");
    assert.equal(served.headers.get("x-gateway-provider"), "a", "a still serves");
    await served.body?.cancel();
    const view = await (await fetch(`${gw.url}/admin/targets`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    })).json();
    const ab = view.data.find((x: { alias: string }) => x.alias === "chat-ab");
    assert.equal(ab.targets[0].state, "healthy");
    assert.ok(b.hits >= 4);
  });
});

Deno.test("routing: with every target saturated the answer is a quick 503 with Retry-After", async () => {
  await withRouting(async (gw, a) => {
    // The first request is held upstream (so in flight) until the test releases it, after the second's answer:
    // that answer must come while the slot is taken (a gateway waiting for the slot never answers, and the
    // backstop fails it), however long a loaded machine takes to send it.
    a.script.push({ hold: true });
    const hitsBefore = a.hits;
    let slowDone = false;
    const slow = chat(gw, "chat-a").finally(() => slowDone = true);
    await waitFor(() => a.hits > hitsBefore);
    const busy = await backstop(chat(gw, "chat-a"), "the answer while the target's one slot is taken");
    assert.ok(!slowDone, "answered while the target's one slot is taken");
    a.release();
    assert.equal(busy.status, 503);
    assert.equal(busy.headers.get("retry-after"), "1");
    assert.equal((await busy.json()).error.code, "no_target_available");
    assert.equal((await slow).status, 200);
  });
});

Deno.test("routing: weighted traffic reaches both targets", async () => {
  await withRouting(async (gw, a, b) => {
    const seen = { a: 0, b: 0 };
    for (let i = 0; i < 60; i++) {
      const r = await chat(gw, "chat-w");
      seen[r.headers.get("x-gateway-provider") as "a" | "b"]++;
      await r.body?.cancel();
    }
    assert.ok(seen.a > 10 && seen.b > 10, JSON.stringify(seen));
    assert.equal(a.hits + b.hits, 60);
  });
});
