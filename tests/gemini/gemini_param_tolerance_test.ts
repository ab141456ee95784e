/**
 * What the Gemini API's `generateContent` and `streamGenerateContent` do with what their chat form asks and a
 * translated target's parameter rules refuse (`generationConfig.seed` and the penalties, which Claude and
 * Converse do not take), over real sockets: the alias's target that would refuse it is skipped for one that
 * takes it, every time, and Google's 400 naming the client's field comes only when none does; a target that
 * drops it is named in `x-gateway-dropped` and the usage record; a `strict` alias sends it where it is served.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { ANTHROPIC_OK, json, OPENAI_OK, withMixedVendors } from "../helpers/mixed_vendors.ts";

async function generate(gw: TestGateway, alias: string, generationConfig: Record<string, unknown>) {
  const response = await fetch(`${gw.url}/v1beta/models/${alias}:generateContent`, {
    method: "POST",
    headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }], generationConfig }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

Deno.test("gemini tolerance: a target that refuses a generation setting is skipped for one that takes it", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(OPENAI_OK);
    const cases: [string, Record<string, unknown>][] = [
      ["chat-mixed-anthropic", { seed: 7 }],
      ["chat-weighted-anthropic", { presencePenalty: 0.5 }],
      ["chat-weighted-bedrock", { seed: 7 }],
    ];
    for (const [model, config] of cases) {
      for (let i = 0; i < 6; i++) {
        const before = up.requests.length;
        const answer = await generate(gw, model, config);
        assert.equal(answer.status, 200, `${model}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.headers.get("x-gateway-provider"), "openai");
        assert.equal(up.requests.length, before + 1);
      }
    }
    assert.equal(JSON.parse(up.requests.at(-1)!.body).seed, 7);
    // No target takes it: Google's 400 names the client's field, and no upstream is called.
    const before = up.requests.length;
    const refused = await generate(gw, "chat-translated", { seed: 7 });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.status, "INVALID_ARGUMENT");
    assert.match(refused.body.error.message, /'generationConfig\.seed'/);
    assert.equal(up.requests.length, before);
  });
});

Deno.test("gemini tolerance: what a drop target leaves out of the chat form is named in x-gateway-dropped and the record", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(ANTHROPIC_OK);
    const answer = await generate(gw, "chat-only-anthropicdrop", { seed: 7, temperature: 0.5 });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.headers.get("x-gateway-dropped"), "generationConfig.seed");
    const sent = JSON.parse(up.requests.at(-1)!.body);
    assert.equal(sent.temperature, 0.5);
    assert.equal("seed" in sent, false);
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "chat-only-anthropicdrop");
    assert.equal(line.dropped, "generationConfig.seed");
    // A strict alias sends it to the target that serves it.
    up.next = json(OPENAI_OK);
    const strict = await generate(gw, "chat-strict-anthropicdrop", { seed: 7 });
    assert.equal(strict.status, 200);
    assert.equal(strict.headers.get("x-gateway-provider"), "openai");
    assert.equal(strict.headers.get("x-gateway-dropped"), null);
  });
});
