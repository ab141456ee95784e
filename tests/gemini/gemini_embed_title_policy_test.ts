/**
 * A Gemini embed request's `title` is text a Gemini target's model reads beside the content (Google reads it with
 * a `RETRIEVAL_DOCUMENT`), so the alias's content rules and input guardrails judge it as they judge the content:
 * a deny rule or guardrail that matches it refuses the request before any upstream call, a redact rule or a
 * masking guardrail changes what the target is sent, in `:embedContent` and in each request of
 * `:batchEmbedContents`. The gateway's own token count (Gemini reports none for embeddings) counts it too. An
 * alias without a Gemini target sends the title nowhere, so nothing judges it there.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { FAKE_GEMINI_KEY, type FakeGemini, startFakeGemini } from "../helpers/fake_gemini.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";
import { countTokens } from "../../lib/usage/estimate.ts";

const config = (fake: FakeGemini) => `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
  gem: { type: gemini, base_url: "${fake.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
guardrails:
  contacts: { type: pii, entities: [EMAIL], action: mask }
  cards: { type: pii, entities: [CREDIT_CARD], action: deny }
models:
  gemini-emb:
    type: embedding
    targets: [ { provider: gem, model: gemini-embedding-001 } ]
    content_rules:
      - { name: ssn, pattern: "SSN-[0-9]{4}", action: redact }
      - { name: nope, pattern: forbidden, action: deny }
  guarded-emb:
    type: embedding
    targets: [ { provider: gem, model: gemini-embedding-001 } ]
    guardrails: [contacts, cards]
  plain-emb: { type: embedding, targets: [ { provider: gem, model: gemini-embedding-001 } ] }
  local-emb:
    type: embedding
    targets: [ { provider: local, model: hash } ]
    content_rules:
      - { name: nope, pattern: forbidden, action: deny }
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${TEST_TOKENS_YAML}`;

function withGemini(fn: (gw: InProcessGateway, fake: FakeGemini) => Promise<void>): Promise<void> {
  return withInProcessGateway(() => {
    const fake = startFakeGemini();
    return { fakes: fake, config: config(fake) };
  }, fn);
}

async function post(
  gw: InProcessGateway,
  alias: string,
  method: "embedContent" | "batchEmbedContents",
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers; id: string }> {
  const response = await gw.fetch(`/v1beta/models/${alias}:${method}`, {
    method: "POST",
    headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    json: await response.json(),
    headers: response.headers,
    id: response.headers.get("x-request-id") ?? "",
  };
}

const doc = (text: string, title?: string) => ({
  content: { parts: [{ text }] },
  taskType: "RETRIEVAL_DOCUMENT",
  ...(title === undefined ? {} : { title }),
});

Deno.test("gemini embed title: a deny rule refuses it as it refuses the content, before any upstream call", async () => {
  await withGemini(async (gw, fake) => {
    const inContent = await post(gw, "gemini-emb", "embedContent", doc("forbidden"));
    assert.equal(inContent.status, 400, "the control: the same word in the content");
    for (
      const [method, body] of [
        ["embedContent", doc("hello", "forbidden SSN-1234")],
        ["batchEmbedContents", { requests: [doc("a", "fine"), doc("b", "a forbidden title")] }],
      ] as const
    ) {
      const calls = fake.requests.length;
      const { status, json, id } = await post(gw, "gemini-emb", method, body);
      assert.equal(status, 400, `${method}: ${JSON.stringify(json)}`);
      assert.equal((json.error as { status: string }).status, "INVALID_ARGUMENT");
      assert.equal(fake.requests.length, calls, `${method}: Gemini was sent nothing`);
      const record = gw.records.find((r) => r.request_id === id)!;
      assert.equal(record.outcome, "deny");
      assert.equal(record.rule, "alias.content:nope");
    }
  });
});

Deno.test("gemini embed title: a redact rule redacts it as it redacts the content, in every request of a batch", async () => {
  await withGemini(async (gw, fake) => {
    const one = await post(gw, "gemini-emb", "embedContent", doc("hello SSN-5678", "Patient SSN-1234"));
    assert.equal(one.status, 200, JSON.stringify(one.json));
    const sent = fake.requests.at(-1)!.body;
    assert.deepEqual(sent.content, { parts: [{ text: "hello [REDACTED]" }] });
    assert.equal(sent.title, "Patient [REDACTED]");
    const record = gw.records.find((r) => r.request_id === one.id)!;
    assert.equal(record.outcome, "modify");
    assert.equal(record.rule, "alias.content:ssn");
    // Only the title matches: the request is modified all the same.
    const titleOnly = await post(gw, "gemini-emb", "batchEmbedContents", {
      requests: [doc("first", "SSN-1111 and SSN-2222"), doc("second"), doc("third", "no number")],
    });
    assert.equal(titleOnly.status, 200, JSON.stringify(titleOnly.json));
    const requests = fake.requests.at(-1)!.body.requests as Record<string, unknown>[];
    assert.deepEqual(requests.map((r) => r.title), ["[REDACTED] and [REDACTED]", undefined, "no number"]);
    assert.equal(gw.records.find((r) => r.request_id === titleOnly.id)!.outcome, "modify");
  });
});

Deno.test("gemini embed title: the input guardrails check it: a mask reaches Gemini masked, a deny refuses", async () => {
  await withGemini(async (gw, fake) => {
    const masked = await post(
      gw,
      "guarded-emb",
      "embedContent",
      doc("write to me", "Contact bob@example.com"),
    );
    assert.equal(masked.status, 200, JSON.stringify(masked.json));
    const title = String(fake.requests.at(-1)!.body.title);
    assert.ok(!title.includes("bob@example.com"), title);
    assert.match(title, /^Contact <EMAIL_\d+>$/);
    const record = gw.records.find((r) => r.request_id === masked.id)!;
    assert.equal(record.outcome, "modify");
    assert.equal(record.rule, "guardrail:contacts");
    const calls = fake.requests.length;
    const denied = await post(gw, "guarded-emb", "batchEmbedContents", {
      requests: [doc("a"), doc("b", "card 4111 1111 1111 1111")],
    });
    assert.equal(denied.status, 400, JSON.stringify(denied.json));
    assert.equal(fake.requests.length, calls, "Gemini was sent nothing");
    assert.equal(gw.records.find((r) => r.request_id === denied.id)!.rule, "guardrail:cards");
  });
});

Deno.test("gemini embed title: nothing judges a title no target reads; a title that is no string is Google's 400", async () => {
  await withGemini(async (gw) => {
    // The builtin target goes without the title (named in x-gateway-dropped): its words reach no model.
    const other = await post(gw, "local-emb", "embedContent", doc("hello", "forbidden"));
    assert.equal(other.status, 200, JSON.stringify(other.json));
    assert.equal(other.headers.get("x-gateway-dropped"), "taskType,title");
    for (const value of [1234, { text: "forbidden" }, ["forbidden"]]) {
      const { status, json } = await post(gw, "gemini-emb", "batchEmbedContents", {
        requests: [doc("a"), { ...doc("b"), title: value }],
      });
      assert.equal(status, 400, JSON.stringify(value));
      assert.match((json.error as { message: string }).message, /'requests\[1\]\.title'/);
    }
  });
});

Deno.test("gemini embed title: the gateway's own count of a Gemini call counts the title it sent", async () => {
  await withGemini(async (gw) => {
    const title = "A rather long title about the history of the capital cities of Europe";
    const without = await post(gw, "plain-emb", "embedContent", doc("Paris is the capital of France."));
    const withTitle = await post(
      gw,
      "plain-emb",
      "embedContent",
      doc("Paris is the capital of France.", title),
    );
    const batch = await post(gw, "plain-emb", "batchEmbedContents", {
      requests: [doc("Paris is the capital of France.", title), doc("Berlin.")],
    });
    for (const answer of [without, withTitle, batch]) {
      assert.equal(answer.status, 200, JSON.stringify(answer.json));
    }
    const prompt = (id: string) => {
      const record = gw.records.find((r) => r.request_id === id)!;
      assert.equal(record.tokens_estimated, true, "the fake Gemini reports no token counts");
      return record.prompt_tokens;
    };
    assert.equal(prompt(without.id), await countTokens(["Paris is the capital of France."]));
    assert.equal(prompt(withTitle.id), await countTokens(["Paris is the capital of France.", title]));
    assert.equal(prompt(batch.id), await countTokens(["Paris is the capital of France.", "Berlin.", title]));
  });
});
