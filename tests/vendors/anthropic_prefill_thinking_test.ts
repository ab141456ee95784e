/**
 * End to end, in-process gateway over a raw Anthropic upstream: `reasoning_effort` beside a `temperature` is
 * judged on the turns the translation sends, not on the chat messages as the client wrote them. The translation
 * leaves out a blank turn (Anthropic refuses blank text) and moves system messages into `system`, so:
 *
 * - `[user, assistant ""]` ends with the user's turn once sent: thinking would be on, beside temperature 0.2,
 *   which Claude refuses. The gateway refuses the effort by name itself (or with `drop` leaves it out and names
 *   it), rather than sending thinking beside the temperature and passing Claude's 400 on;
 * - `[user, assistant "Autumn", system "Be brief."]` ends with the assistant prefill once sent: thinking stays
 *   off, so nothing is refused and the temperature is sent.
 */
import assert from "node:assert/strict";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

const ANSWER = JSON.stringify({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5",
  content: [{ type: "text", text: "ok" }],
  stop_reason: "end_turn",
  usage: { input_tokens: 3, output_tokens: 1 },
});

function withGateway(
  fn: (
    post: (model: string, body: Record<string, unknown>) => Promise<Response>,
    sent: () => unknown[],
  ) => Promise<void>,
) {
  return withInProcessGateway(() => {
    const up = startRawUpstream();
    up.next = { status: 200, headers: { "content-type": "application/json" }, chunks: [ANSWER] };
    return {
      fakes: up,
      config: `
providers:
  ant: { type: anthropic, base_url: "${up.url}", api_key: "sk-ant-fake-upstream-0123456789" }
  ant-drop: { type: anthropic, base_url: "${up.url}", api_key: "sk-ant-fake-upstream-0123456789", unsupported_params: drop }
models:
  chat-claude: { type: chat, targets: [{ provider: ant, model: claude-sonnet-4-5, retries: 0 }] }
  chat-drop: { type: chat, targets: [{ provider: ant-drop, model: claude-sonnet-4-5, retries: 0 }] }
${TEST_TOKENS_YAML}`,
    };
  }, (gw, up) => {
    const post = (model: string, body: Record<string, unknown>) =>
      gw.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model, ...body }),
      });
    return fn(post, () => up.requests.map((r) => JSON.parse(r.body)));
  });
}

const BLANK_PREFILLS = [
  [{ role: "user", content: "Write a haiku" }, { role: "assistant", content: "" }],
  [{ role: "user", content: "Write a haiku" }, {
    role: "assistant",
    content: [{ type: "text", text: " \n" }],
  }],
];

Deno.test("anthropic e2e: a blank final assistant turn is left out, so reasoning_effort beside a temperature is refused by name", async () => {
  await withGateway(async (post, sent) => {
    for (const messages of BLANK_PREFILLS) {
      const res = await post("chat-claude", { messages, reasoning_effort: "low", temperature: 0.2 });
      const body = await res.json();
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(body.error.code, "unsupported_parameter");
      assert.equal(body.error.param, "reasoning_effort");
      assert.match(body.error.message, /temperature/);
    }
    assert.equal(sent().length, 0, "nothing reaches Anthropic");
  });
});

Deno.test("anthropic e2e: with drop, the effort beside a blank final assistant turn is left out and named, the temperature sent", async () => {
  await withGateway(async (post, sent) => {
    const res = await post("chat-drop", {
      messages: BLANK_PREFILLS[0],
      reasoning_effort: "low",
      temperature: 0.2,
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    assert.equal(res.headers.get("x-gateway-dropped"), "reasoning_effort");
    const body = sent().at(-1) as Record<string, unknown>;
    assert.equal("thinking" in body, false);
    assert.equal(body.temperature, 0.2);
    assert.deepEqual(body.messages, [{ role: "user", content: "Write a haiku" }]);
  });
});

Deno.test("anthropic e2e: thinking on after a blank final assistant turn leaves top_k out and names it", async () => {
  await withGateway(async (post, sent) => {
    const res = await post("chat-claude", { messages: BLANK_PREFILLS[1], reasoning_effort: "low", top_k: 5 });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    assert.equal(res.headers.get("x-gateway-dropped"), "top_k");
    const body = sent().at(-1) as Record<string, unknown>;
    assert.deepEqual(body.thinking, { type: "enabled", budget_tokens: 2048 });
    assert.equal("top_k" in body, false);
  });
});

Deno.test("anthropic e2e: a prefill followed by a system message or a blank user turn keeps thinking off, and nothing is refused", async () => {
  await withGateway(async (post, sent) => {
    const prefill = [{ role: "user", content: "Write a haiku" }, { role: "assistant", content: "Autumn" }];
    for (const last of [{ role: "system", content: "Be brief." }, { role: "user", content: " " }]) {
      const res = await post("chat-claude", {
        messages: [...prefill, last],
        reasoning_effort: "low",
        temperature: 0.2,
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      assert.equal(res.headers.get("x-gateway-dropped"), null);
      const body = sent().at(-1) as Record<string, unknown>;
      assert.equal("thinking" in body, false);
      assert.equal(body.temperature, 0.2);
      assert.deepEqual(body.messages, [
        { role: "user", content: "Write a haiku" },
        { role: "assistant", content: "Autumn" },
      ]);
    }
  });
});
