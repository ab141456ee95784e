/**
 * A request's tool definitions are part of its prompt, and a coding agent's are most of it (Claude Code and
 * Codex send tens of thousands of tokens of tool schemas): the estimate a budget reserves and TPM charges up
 * front counts them, so concurrent agent requests cannot overshoot a budget by their tools. Deterministic: the
 * first request is held at the upstream until the second has been judged.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway } from "../helpers/gateway.ts";

const SECRET = "gw-tools-token-0123456789abcdef";

/** A tool whose schema is about 2,000 tokens by the rough estimate (8,000 characters). */
const BIG_TOOL = {
  type: "function",
  function: {
    name: "edit_file",
    description: "Edits a file. ".repeat(560),
    parameters: { type: "object", properties: { path: { type: "string" } } },
  },
};

async function secondWhileFirstHeld(tokenRule: string, tools: unknown[]) {
  const first = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  let calls = 0;
  const ac = new AbortController();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {} },
    async (req) => {
      await req.json();
      if (calls++ === 0) {
        first.resolve();
        await release.promise;
      }
      return Response.json({
        id: "chatcmpl-x",
        object: "chat.completion",
        created: 1,
        model: "m",
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 2000, completion_tokens: 1, total_tokens: 2001 },
      });
    },
  );
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "http://127.0.0.1:${server.addr.port}/v1", api_key: "sk-x" }
models:
  chat-a: { type: chat, targets: [{ provider: up, model: m }] }
tokens:
  - { name: agent, sha256: ${hashToken(SECRET)}, models: ["*"], ${tokenRule} }
`);
  const ask = () =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-a", messages: [{ role: "user", content: "fix the bug" }], tools }),
    });
  try {
    const held = ask();
    await first.promise;
    const res = await ask();
    const body = await res.json();
    release.resolve();
    const firstAnswer = await held;
    assert.equal(firstAnswer.status, 200, await firstAnswer.text());
    return { status: res.status, code: body.error?.code ?? null };
  } finally {
    release.resolve();
    await gw.stop();
    ac.abort();
    await server.finished;
  }
}

Deno.test("tool estimate: a token budget reserves the tools' tokens, so a second agent request does not fit", async () => {
  // 3,000 tokens: the first reserves ~2,000 for its tool; a second ~2,000 would pass the cap.
  const denied = await secondWhileFirstHeld("budget: { tokens: 3000, period: day }", [BIG_TOOL]);
  assert.deepEqual(denied, { status: 429, code: "insufficient_quota" });
  // Without the tool both fit: the estimate is the tools, not something else.
  const admitted = await secondWhileFirstHeld("budget: { tokens: 3000, period: day }", []);
  assert.deepEqual(admitted, { status: 200, code: null });
});

Deno.test("tool estimate: TPM charges the tools' tokens up front", async () => {
  const denied = await secondWhileFirstHeld("limits: { tpm: 3000 }", [BIG_TOOL]);
  assert.deepEqual(denied, { status: 429, code: "rate_limit_exceeded" });
});
