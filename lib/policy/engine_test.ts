import assert from "node:assert/strict";
import type { Endpoint } from "../config/schema.ts";
import type { ResolvedContentRule } from "../config/types.ts";
import type { JsonObject } from "../openai/types.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createPolicyEngine } from "./engine.ts";
import { clock, denial, fire, header, model, setup, token } from "./engine_test_helpers.ts";

for (const scope of ["token", "alias"] as const) {
  Deno.test(`${scope} RPM 20: exactly 20 of 60 concurrent requests pass, the rest get 429 with Retry-After`, async () => {
    const { c, engine, req } = setup(
      scope === "token" ? { limits: { rpm: 20 } } : { aliasLimits: { rpm: 20 } },
    );
    const first = await fire(60, () => engine.admit(req()));
    assert.equal(first.admitted.length, 20);
    assert.equal(first.denied.length, 40);
    for (const err of first.denied) {
      assert.equal(err.status, 429);
      assert.equal(err.type, "requests");
      assert.equal(err.code, "rate_limit_exceeded");
      assert.equal(err.rule, `${scope}.rpm`);
      assert.ok(Number(header(err, "retry-after")) >= 1);
      assert.equal(header(err, "retry-after"), "3");
      assert.equal(header(err, "retry-after-ms"), "3000");
      assert.equal(header(err, "x-ratelimit-remaining-requests"), "0");
      assert.equal(header(err, "x-ratelimit-limit-requests"), "20");
    }
    const who = scope === "token" ? "token web-prod" : "model chat-default";
    assert.equal(
      first.denied[0].message,
      `Rate limit reached for ${who} on requests per min (RPM): Limit 20, Used 20, Requested 1. ` +
        "Please try again in 3s.",
    );
    // settling does not give requests back: RPM counts requests started
    await Promise.all(first.admitted.map((a) => a.settle({ tokens: 5, cost: 0 })));
    assert.equal((await fire(5, () => engine.admit(req()))).admitted.length, 0);
    c.advance(60_000);
    const second = await fire(60, () => engine.admit(req()));
    assert.equal(second.admitted.length, 20);
    assert.equal(second.denied.length, 40);
  });
}

Deno.test("TPM 1000, estimates of 100: exactly 10 of 30 pass; settling at 50 each refunds 500, so 5 more pass", async () => {
  const { c, engine, req } = setup({ limits: { tpm: 1000 } });
  const first = await fire(30, () => engine.admit(req({ estimatedTokens: 100 })));
  assert.equal(first.admitted.length, 10);
  assert.equal(first.denied.length, 20);
  const err = first.denied[0];
  assert.equal(err.status, 429);
  assert.equal(err.type, "tokens");
  assert.equal(err.code, "rate_limit_exceeded");
  assert.equal(err.rule, "token.tpm");
  assert.equal(header(err, "retry-after"), "6"); // 100 tokens at 1000 per minute
  assert.equal(header(err, "x-ratelimit-remaining-tokens"), "0");
  assert.match(
    err.message,
    /on tokens per min \(TPM\): Limit 1000, Used 1000, Requested 100\. Please try again in 6s\./,
  );
  assert.equal(first.admitted[9].headers["x-ratelimit-remaining-tokens"], "0");
  assert.equal(first.admitted[0].headers["x-ratelimit-remaining-tokens"], "900");

  await Promise.all(first.admitted.map((a) => a.settle({ tokens: 50, cost: 0 })));
  const second = await fire(30, () => engine.admit(req({ estimatedTokens: 100 })));
  assert.equal(second.admitted.length, 5);
  // usage above the estimate is charged on settle and overdraws the bucket: 5 × 300 more → level -1500
  await Promise.all(second.admitted.map((a) => a.settle({ tokens: 400, cost: 0 })));
  const overdrawn = await denial(engine.admit(req({ estimatedTokens: 100 })));
  assert.equal(header(overdrawn, "retry-after"), "96"); // 1600 tokens at 1000 per minute
  c.advance(96_000);
  assert.equal((await fire(3, () => engine.admit(req({ estimatedTokens: 100 })))).admitted.length, 1);
  c.advance(60_000);
  assert.equal((await fire(30, () => engine.admit(req({ estimatedTokens: 100 })))).admitted.length, 10);
});

Deno.test("alias TPM is shared by every token, streams settle the same way", async () => {
  const { engine, req } = setup({ aliasLimits: { tpm: 300 } });
  const other = token({ name: "batch" });
  const a = await engine.admit(req({ estimatedTokens: 200 }));
  const denied = await denial(engine.admit(req({ identity: other, estimatedTokens: 200 })));
  assert.equal(denied.rule, "alias.tpm");
  await a.settle({ tokens: 20, cost: 0 }); // the stream ended after 20 tokens
  await engine.admit(req({ identity: other, estimatedTokens: 200 }));
});

Deno.test("a TPM estimate above the whole limit is charged the limit and needs a full bucket", async () => {
  const { engine, req } = setup({ limits: { tpm: 1000 } });
  const big = await engine.admit(req({ estimatedTokens: 5000 }));
  assert.equal(big.headers["x-ratelimit-remaining-tokens"], "0");
  const err = await denial(engine.admit(req({ estimatedTokens: 5000 })));
  assert.match(err.message, /Requested 1000\./);
});

Deno.test("estimatedTokens as a function sees the body after the max_tokens ceiling", async () => {
  const { store, req } = setup({ limits: { tpm: 1000 } });
  const engine = createPolicyEngine(store);
  const identity = token({ limits: { tpm: 1000 }, maxTokens: 100 });
  const body: JsonObject = { messages: [{ role: "user", content: "hi" }], max_tokens: 4000 };
  const a = await engine.admit(req({ identity, body, estimatedTokens: (b) => 10 + Number(b?.max_tokens) }));
  assert.equal(a.headers["x-ratelimit-remaining-tokens"], "890");
  assert.equal(a.outcome, "modify");
  assert.equal(a.rule, "token.max_tokens");
});

Deno.test("concurrency 3: 3 admitted, the rest denied until one settles", async () => {
  const { engine, req } = setup({ limits: { concurrent: 3 } });
  const first = await fire(10, () => engine.admit(req()));
  assert.equal(first.admitted.length, 3);
  assert.equal(first.denied.length, 7);
  const err = first.denied[0];
  assert.equal(err.status, 429);
  assert.equal(err.rule, "token.concurrent");
  assert.equal(err.code, "rate_limit_exceeded");
  assert.equal(err.type, "requests");
  assert.equal(header(err, "retry-after"), "1");
  assert.match(err.message, /on concurrent requests: Limit 3, Used 3, Requested 1\./);
  await first.admitted[0].settle({ tokens: 0, cost: 0 });
  await first.admitted[0].settle({ tokens: 0, cost: 0 }); // idempotent: releases once
  const second = await fire(10, () => engine.admit(req()));
  assert.equal(second.admitted.length, 1);
});

Deno.test("alias concurrency is shared across tokens", async () => {
  const { engine, req } = setup({ aliasLimits: { concurrent: 2 } });
  await engine.admit(req());
  await engine.admit(req({ identity: token({ name: "other" }) }));
  assert.equal(
    (await denial(engine.admit(req({ identity: token({ name: "third" }) })))).rule,
    "alias.concurrent",
  );
});

Deno.test("denials roll back: an RPM-denied request takes no TPM, a TPM-denied one no RPM", async () => {
  const { c, engine, req } = setup({ limits: { rpm: 5, tpm: 1000, concurrent: 100 } });
  // RPM denies 25 of 30 requests; TPM is charged for the 5 admitted only
  const a = await fire(30, () => engine.admit(req({ estimatedTokens: 100 })));
  assert.equal(a.admitted.length, 5);
  assert.ok(a.denied.every((d) => d.rule === "token.rpm"));
  assert.equal(a.denied[0].headers && header(a.denied[0], "x-ratelimit-remaining-tokens"), "500");
  c.advance(60_000);
  // TPM denies the 400-token requests after two; RPM is charged for those two only
  const b = await fire(5, () => engine.admit(req({ estimatedTokens: 400 })));
  assert.equal(b.admitted.length, 2);
  assert.ok(b.denied.every((d) => d.rule === "token.tpm"));
  assert.equal(b.admitted[1].headers["x-ratelimit-remaining-requests"], "3");
  assert.equal((await fire(10, () => engine.admit(req({ estimatedTokens: 10 })))).admitted.length, 3);
  // nor is a concurrency slot kept by a denied request
  const c2 = setup({ limits: { rpm: 1, concurrent: 1 } });
  const ok = await c2.engine.admit(c2.req());
  await ok.settle({ tokens: 0, cost: 0 });
  assert.equal((await denial(c2.engine.admit(c2.req()))).rule, "token.rpm");
  c2.c.advance(60_000);
  await c2.engine.admit(c2.req());
});

Deno.test("the first failing rule in order is named: concurrency, then RPM, then TPM (token before alias)", async () => {
  const { engine, req } = setup({ limits: { rpm: 1, tpm: 10 }, aliasLimits: { rpm: 1 } });
  await engine.admit(req({ estimatedTokens: 10 }));
  const err = await denial(engine.admit(req({ estimatedTokens: 10 })));
  assert.equal(err.rule, "token.rpm");
  // Retry-After waits for every failing limit: RPM in 60 s, TPM in 60 s
  assert.equal(header(err, "retry-after"), "60");
});

Deno.test("endpoints: a token limited to chat gets 403 endpoint_not_allowed elsewhere, before anything is counted", async () => {
  const { engine, req } = setup();
  const identity = token({ endpoints: new Set<Endpoint>(["chat"]), limits: { rpm: 1 } });
  const err = await denial(engine.admit(req({ identity, endpoint: "embeddings" })));
  assert.equal(err.status, 403);
  assert.equal(err.type, "permission_error");
  assert.equal(err.code, "endpoint_not_allowed");
  assert.equal(err.rule, "token.endpoints");
  assert.equal(err.headers, undefined);
  await engine.admit(req({ identity }));
});

const pii: ResolvedContentRule = {
  name: "email",
  regex: /[a-z]+@[a-z]+\.com/gi,
  action: "redact",
  message: null,
  replacement: "[EMAIL]",
};
const secret: ResolvedContentRule = {
  name: "secret",
  regex: /top secret/gi,
  action: "deny",
  message: "No secrets, please.",
  replacement: "",
};

Deno.test("content rules: deny as 400 content_policy_violation before any counter; redact modifies", async () => {
  const { engine, req } = setup({ limits: { rpm: 1 } });
  const alias = model({ contentRules: [pii, secret] });
  const denied = await denial(engine.admit(req({
    model: alias,
    body: { messages: [{ role: "system", content: "ok" }, { role: "user", content: "this is TOP SECRET" }] },
  })));
  assert.equal(denied.status, 400);
  assert.equal(denied.code, "content_policy_violation");
  assert.equal(denied.param, "messages[1].content");
  assert.equal(denied.rule, "alias.content:secret");
  assert.equal(denied.message, "No secrets, please.");
  const body: JsonObject = { messages: [{ role: "user", content: "mail bob@example.com" }] };
  const a = await engine.admit(req({ model: alias, body }));
  assert.equal(a.outcome, "modify");
  assert.equal(a.rule, "alias.content:email");
  assert.deepEqual(body.messages, [{ role: "user", content: "mail [EMAIL]" }]);
});

Deno.test("max_tokens ceiling and redaction together: outcome modify with both rules", async () => {
  const { engine, req } = setup();
  const identity = token({ maxTokens: 256 });
  const body: JsonObject = { messages: [{ role: "user", content: "to a@b.com" }] };
  const a = await engine.admit(req({ identity, model: model({ contentRules: [pii] }), body }));
  assert.equal(a.rule, "alias.content:email,token.max_tokens");
  assert.equal(body.max_completion_tokens, 256);
  const under: JsonObject = { messages: [], max_completion_tokens: 10 };
  const b = await engine.admit(req({ identity, body: under }));
  assert.equal(b.outcome, "allow");
  assert.equal(b.rule, null);
  assert.deepEqual(under, { messages: [], max_completion_tokens: 10 });
  // embeddings have no max_tokens
  const embed: JsonObject = { input: "x" };
  assert.equal((await engine.admit(req({ identity, endpoint: "embeddings", body: embed }))).outcome, "allow");
  assert.deepEqual(embed, { input: "x" });
});

Deno.test("headers: the most restrictive of token and alias limits; none when no limit applies", async () => {
  const { engine, req } = setup({ limits: { rpm: 100, tpm: 1000 }, aliasLimits: { rpm: 3, tpm: 50_000 } });
  const a = await engine.admit(req({ estimatedTokens: 100 }));
  assert.deepEqual(a.headers, {
    "x-ratelimit-limit-requests": "3",
    "x-ratelimit-remaining-requests": "2",
    "x-ratelimit-reset-requests": "20s",
    "x-ratelimit-limit-tokens": "1000",
    "x-ratelimit-remaining-tokens": "900",
    "x-ratelimit-reset-tokens": "6s",
  });
  const plain = setup({ limits: { concurrent: 5 }, budget: { tokens: 10, period: "day" } });
  assert.deepEqual((await plain.engine.admit(plain.req())).headers, {});
  // /v1/models: no alias, nothing to charge; token limits still apply and are reported
  const m = await engine.admit(
    req({ endpoint: "models", model: undefined, body: undefined, estimatedTokens: 0 }),
  );
  assert.equal(m.headers["x-ratelimit-limit-requests"], "100");
  assert.equal(m.headers["x-ratelimit-remaining-requests"], "98");
  assert.equal(m.headers["x-ratelimit-remaining-tokens"], "900");
});

Deno.test("settle never rejects: a failing store is reported to onError", async () => {
  const c = clock();
  const base = createMemoryCounterStore(c.now);
  const errors: unknown[] = [];
  const engine = createPolicyEngine({ ...base, release: () => Promise.reject(new Error("store down")) }, {
    now: c.now,
    onError: (err) => errors.push(err),
  });
  const a = await engine.admit({
    identity: token({ limits: { concurrent: 1, tpm: 100 } }),
    endpoint: "chat",
    estimatedTokens: 10,
  });
  await a.settle({ tokens: 5, cost: 0 });
  assert.equal(errors.length, 1);
  assert.equal(
    (await base.reserve([{
      kind: "bucket",
      key: "token:cfg_web-prod:tpm",
      limit: 100,
      windowMs: 60_000,
      amount: 0,
    }]))
      .results[0].remaining,
    95,
  );
});
