/**
 * A request refused after its alias was resolved is recorded under that alias, with the stream flag it asked
 * for, whatever refused it: a stored conversation that is not there (before any upstream), the policy, or the
 * alias's targets. Operators filter the usage records by alias; a refusal recorded with `alias: null` is lost
 * from that view.
 */
import assert from "node:assert/strict";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { usageRows } from "../helpers/usage_rows.ts";

interface Row {
  endpoint: string;
  alias: string | null;
  stream: number;
  status: number;
  outcome: string;
}

Deno.test("refused requests: the usage record names the resolved alias and the stream flag", async () => {
  const fake = startFakeOpenAI();
  const gw = await startGateway(`
server: { host: 127.0.0.1, port: 0 }
providers:
  oai: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-gpt:
    type: chat
    targets: [{ provider: oai, model: gpt-4o-mini }]
    content_rules:
      - { name: no-forbidden, pattern: "forbidden", action: deny }
${TEST_TOKENS_YAML}`);
  try {
    const post = async (path: string, body: Record<string, unknown>) => {
      const response = await fetch(`${gw.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      await response.body?.cancel();
      return response.status;
    };
    const missing = { model: "chat-gpt", input: "Hi", previous_response_id: "resp_not_there" };
    const statuses = [
      // Refused before any upstream: the stored conversation is not there.
      await post("/v1/responses", { ...missing, stream: true }),
      await post("/v1/responses", missing),
      await post("/v1/responses/input_tokens", missing),
      // Refused by the policy: a content rule.
      await post("/v1/chat/completions", {
        model: "chat-gpt",
        stream: true,
        messages: [{ role: "user", content: "something forbidden" }],
      }),
      // Not resolved at all: no alias to name.
      await post("/v1/chat/completions", {
        model: "no-such-alias",
        messages: [{ role: "user", content: "Hi" }],
      }),
    ];
    assert.deepEqual(statuses, [404, 404, 404, 400, 404]);
    const rows = await usageRows<Row>(gw, 5);
    const seen = rows.map((r) => [r.endpoint, r.alias, r.stream === 1, r.status]);
    assert.deepEqual(seen, [
      ["responses", "chat-gpt", true, 404],
      ["responses", "chat-gpt", false, 404],
      ["responses", "chat-gpt", false, 404],
      ["chat", "chat-gpt", true, 400],
      ["chat", null, false, 404],
    ]);
    assert.equal(fake.requests.length, 0, "no upstream was called");
  } finally {
    await gw.stop();
    await fake.stop();
  }
});
