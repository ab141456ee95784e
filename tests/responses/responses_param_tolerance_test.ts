/**
 * What `POST /v1/responses` does with what its chat form asks and a translated target's parameter rules refuse
 * (`reasoning.effort: "xhigh"`, which Claude's and Gemini's thinking budgets do not have), over real sockets:
 * the alias's target that would refuse it is skipped for one that takes it, every time, and the 400 (in the
 * Responses API's terms) comes only when none does; a target that drops it is named in `x-gateway-dropped`
 * and the usage record; a `strict` alias sends it where it is served.
 *
 * (`top_logprobs` and `include` never reach the chat form: a translated target goes without them, named, by
 * the request's own tolerance.)
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { ANTHROPIC_OK, GEMINI_OK, json, OPENAI_OK, withMixedVendors } from "../helpers/mixed_vendors.ts";

async function post(gw: TestGateway, body: Record<string, unknown>) {
  const response = await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ input: "hi", store: false, ...body }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

Deno.test("responses tolerance: a target that refuses the request's reasoning effort is skipped for one that takes it", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(OPENAI_OK);
    for (
      const model of [
        "chat-mixed-anthropic",
        "chat-weighted-anthropic",
        "chat-mixed-gemini",
        "chat-weighted-bedrock",
      ]
    ) {
      for (let i = 0; i < 6; i++) {
        const before = up.requests.length;
        const answer = await post(gw, { model, reasoning: { effort: "xhigh" } });
        assert.equal(answer.status, 200, `${model}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.headers.get("x-gateway-provider"), "openai");
        assert.equal(answer.body.reasoning.effort, "xhigh");
        assert.equal(up.requests.length, before + 1);
        assert.equal(JSON.parse(up.requests.at(-1)!.body).reasoning_effort, "xhigh");
      }
    }
    // No target takes it: the 400 names the client's field, and no upstream is called.
    const before = up.requests.length;
    const refused = await post(gw, { model: "chat-translated", reasoning: { effort: "xhigh" } });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, "reasoning.effort");
    assert.equal(refused.body.error.code, "unsupported_parameter");
    assert.equal(up.requests.length, before);
  });
});

Deno.test("responses tolerance: what a drop target leaves out of the chat form is named in x-gateway-dropped and the record", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(GEMINI_OK);
    const answer = await post(gw, { model: "chat-only-geminidrop", reasoning: { effort: "xhigh" }, foo: 1 });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.headers.get("x-gateway-dropped"), "foo,reasoning.effort");
    assert.equal(JSON.parse(up.requests.at(-1)!.body).generationConfig?.thinkingConfig, undefined);
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "chat-only-geminidrop");
    assert.equal(line.dropped, "foo,reasoning.effort");
    // A strict alias sends it to the target that serves it.
    up.next = json(OPENAI_OK);
    const strict = await post(gw, { model: "chat-strict-geminidrop", reasoning: { effort: "xhigh" } });
    assert.equal(strict.status, 200);
    assert.equal(strict.headers.get("x-gateway-provider"), "openai");
    assert.equal(strict.headers.get("x-gateway-dropped"), null);
  });
});

Deno.test("responses tolerance: a compaction too skips the target that refuses its reasoning effort", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(OPENAI_OK);
    for (const model of ["chat-mixed-anthropic", "chat-weighted-anthropic"]) {
      for (let i = 0; i < 4; i++) {
        const response = await fetch(`${gw.baseURL}/responses/compact`, {
          method: "POST",
          headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ model, input: "hi", reasoning: { effort: "xhigh" } }),
        });
        const body = await response.json();
        assert.equal(response.status, 200, `${model}: ${JSON.stringify(body)}`);
        assert.equal(response.headers.get("x-gateway-provider"), "openai");
        assert.equal(body.object, "response.compaction");
      }
    }
  });
});

Deno.test("responses tolerance: text.verbosity and prompt_cache_retention reach the target as chat fields, whose rules decide; truncation auto is named as dropped", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(OPENAI_OK);
    // An OpenAI target gets both fields.
    const served = await post(gw, {
      model: "chat-strict-geminidrop",
      text: { verbosity: "low" },
      prompt_cache_retention: "24h",
    });
    assert.equal(served.status, 200, JSON.stringify(served.body));
    assert.equal(served.headers.get("x-gateway-provider"), "openai");
    assert.equal(served.headers.get("x-gateway-dropped"), null);
    assert.equal(served.body.text.verbosity, "low");
    const sent = JSON.parse(up.requests.at(-1)!.body);
    assert.equal(sent.verbosity, "low");
    assert.equal(sent.prompt_cache_retention, "24h");
    // Claude has no verbosity: a style hint, its target goes without it and says so (no `drop` needed).
    up.next = json(ANTHROPIC_OK);
    const claude = await post(gw, {
      model: "chat-mixed-anthropic",
      text: { verbosity: "low" },
      prompt_cache_retention: "24h",
    });
    assert.equal(claude.status, 200, JSON.stringify(claude.body));
    assert.equal(claude.headers.get("x-gateway-provider"), "anthropic");
    assert.equal(claude.headers.get("x-gateway-dropped"), "text.verbosity");
    assert.equal(claude.body.text.verbosity, "low");
    const toClaude = JSON.parse(up.requests.at(-1)!.body);
    assert.equal(toClaude.verbosity, undefined);
    assert.equal(toClaude.prompt_cache_retention, undefined);
    // truncation "auto" has no chat form: named as dropped, and a strict alias refuses it.
    up.next = json(OPENAI_OK);
    const truncated = await post(gw, { model: "chat-mixed-anthropic", truncation: "auto" });
    assert.equal(truncated.status, 200, JSON.stringify(truncated.body));
    assert.equal(truncated.headers.get("x-gateway-dropped"), "truncation");
    const strict = await post(gw, { model: "chat-strict-geminidrop", truncation: "auto" });
    assert.equal(strict.status, 400);
    assert.equal(strict.body.error.param, "truncation");
  });
});
