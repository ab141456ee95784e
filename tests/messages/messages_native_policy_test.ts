/**
 * Content rules on a Messages request passed through to an `anthropic` provider: the chat form reads a text
 * document as a plain-text file, so its matches are redacted in the passed-through body too; a document of
 * content blocks, which only a Claude target reads, is judged by deny rules and redacted as well.
 */
import assert from "node:assert/strict";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

const SSN = /\d{3}-\d{2}-\d{4}/g;

async function withClaude(
  fn: (post: (messages: unknown[]) => Promise<Response>, sent: () => string) => Promise<void>,
) {
  const fake = startFakeAnthropic();
  const gw = await startGateway(`
providers:
  claude: { type: anthropic, base_url: "${fake.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
models:
  chat-claude:
    type: chat
    targets: [{ provider: claude, model: claude-ok }]
    content_rules:
      - { name: forbidden, pattern: FORBIDDENWORD, action: deny }
      - { name: ssn, pattern: '\\b\\d{3}-\\d{2}-\\d{4}\\b', action: redact }
${TEST_TOKENS_YAML}`);
  const post = (messages: unknown[]) =>
    fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": TEST_TOKEN,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({
        model: "chat-claude",
        max_tokens: 100,
        system: "ssn 000-11-2222",
        tools: [{ name: "lookup", input_schema: { type: "object", properties: {} } }],
        messages,
      }),
    });
  try {
    await fn(post, () => JSON.stringify(fake.requests.at(-1)?.body ?? {}));
  } finally {
    await gw.stop();
    await fake.stop();
  }
}

const textDocument = (data: string) => ({
  type: "document",
  source: { type: "text", media_type: "text/plain", data },
});
const contentDocument = (text: string) => ({
  type: "document",
  source: { type: "content", content: [{ type: "text", text }] },
});

Deno.test("messages native policy: documents and tool results are redacted as the chat form is", async () => {
  await withClaude(async (post, sent) => {
    const res = await post([
      {
        role: "user",
        content: [textDocument("patient ssn 111-22-3333"), { type: "text", text: "444-55-6666" }],
      },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "lookup", input: {} }] },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "t1", content: [textDocument("record 777-88-9999")] },
          contentDocument("cited 555-66-7777"),
        ],
      },
    ]);
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    assert.deepEqual(sent().match(SSN) ?? [], [], sent());
  });
});

Deno.test("messages native policy: deny rules judge a document only Claude reads", async () => {
  await withClaude(async (post, sent) => {
    const res = await post([{
      role: "user",
      content: [contentDocument("FORBIDDENWORD"), { type: "text", text: "hi" }],
    }]);
    const body = await res.json();
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.match(JSON.stringify(body), /content_policy_violation|content policy/);
    assert.ok(!sent().includes("FORBIDDENWORD"), "the forbidden text reached the upstream");
  });
});
