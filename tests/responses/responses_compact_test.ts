/**
 * `POST /v1/responses/compact` (what Codex calls before the context window fills) over real sockets: passed
 * through to a native target, which compacts the conversation itself; summarised through the alias itself on a
 * translated target, whose answer keeps the user's messages and adds the gateway's own `compaction` item; and
 * that item sent back later is read by a translated and by a native target alike. One usage record each.
 */
import assert from "node:assert/strict";
import { FAKE_ANSWER, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import {
  type FakeNativeUpstream,
  NATIVE_COMPACTION,
  NATIVE_KEY,
  NATIVE_USAGE,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { type Fakes as FakeSet, startFakes } from "../helpers/fakes.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

const schemas = await loadOpenApiSchemas();

type Fakes = FakeSet<{ native: FakeNativeUpstream; chat: FakeUpstream }>;
type Json = Record<string, unknown>;

/** A token whose policy caps every answer at 77 output tokens. */
const CAPPED_TOKEN = "gw-capped-token-0123456789abcdef";
const CAPPED_YAML = `  - name: capped
    environment: test
    sha256: ${hashToken(CAPPED_TOKEN)}
    models: ["*"]
    max_tokens: 77
`;

const startAll = (): Fakes => startFakes({ native: startFakeNativeResponses, chat: startFakeOpenAI });

function configFor(f: Fakes): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  native: { type: openai, base_url: "${f.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  chat: { type: openai, base_url: "${f.chat.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-native: { type: chat, targets: [ { provider: native, model: resp-ok } ] }
  chat-translated: { type: chat, targets: [ { provider: chat, model: gpt-ok } ] }
  chat-refusing: { type: chat, targets: [ { provider: chat, model: gpt-refuse } ] }
${TEST_TOKENS_YAML}${CAPPED_YAML}`;
}

async function post(
  gw: TestGateway,
  path: string,
  body: unknown,
  token = TEST_TOKEN,
): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${gw.baseURL}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/** A conversation as Codex sends it to be compacted (store off, every item in the input). */
const CONVERSATION = [
  { role: "user", content: "Create a landing page for a dog café." },
  {
    type: "message",
    role: "assistant",
    content: [{ type: "output_text", text: "Here is index.html with a hero section.", annotations: [] }],
  },
  { role: "user", content: "Now add a booking form." },
];

Deno.test("responses compact: a native target compacts itself; its item goes back to it as sent", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const { status, json } = await post(gw, "/responses/compact", {
      model: "chat-native",
      input: CONVERSATION,
    });
    assert.equal(status, 200, JSON.stringify(json));
    assert.equal(json.object, "response.compaction");
    assert.match(String(json.id), /^resp_/);
    const sent = fakes.native.requests.at(-1)!;
    assert.equal(sent.path, "/v1/responses/compact");
    assert.equal(sent.body.model, "resp-ok");
    const output = json.output as Json[];
    const compaction = output.at(-1)!;
    assert.deepEqual([compaction.type, compaction.encrypted_content], ["compaction", NATIVE_COMPACTION]);
    assert.deepEqual((json.usage as Json).input_tokens, NATIVE_USAGE.input);
    // The compacted conversation continues on the same target, the upstream's item passed back unchanged.
    const next = await post(gw, "/responses", {
      model: "chat-native",
      store: false,
      input: [...output, { role: "user", content: "Go on." }],
    });
    assert.equal(next.status, 200, JSON.stringify(next.json));
    const input = fakes.native.requests.at(-1)!.body.input as Json[];
    assert.equal(input.find((i) => i.type === "compaction")?.encrypted_content, NATIVE_COMPACTION);
    // On a translated target, the upstream's item is state the model cannot read: refused, naming it.
    const refused = await post(gw, "/responses", {
      model: "chat-translated",
      input: [...output, { role: "user", content: "Go on." }],
    });
    assert.equal(refused.status, 400);
    assert.equal((refused.json.error as Json).param, `input[${output.length - 1}].type`);
  });
});

Deno.test("responses compact: a translated target summarises through the alias; the gateway's item is read back by any target", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const { status, json } = await post(gw, "/responses/compact", {
      model: "chat-translated",
      input: CONVERSATION,
      client_metadata: { "x-codex-turn-metadata": "{}" },
    });
    assert.equal(status, 200, JSON.stringify(json));
    assert.equal(json.object, "response.compaction");
    const asked = fakes.chat.requests.at(-1)!.body as { messages: { role: string; content: string }[] };
    assert.equal(asked.messages.at(-1)!.role, "user");
    assert.match(asked.messages.at(-1)!.content, /^Compact the conversation above/);
    const output = json.output as Json[];
    // The user's messages are kept, as OpenAI's items (id, status, input_text parts: what the SDK parses);
    // the rest is the gateway's compaction item, its summary the alias's answer.
    schemas?.assert("CompactResource", json, "translated compaction");
    assert.deepEqual(
      output.slice(0, -1).map((item) => [item.type, item.role, item.status, item.content]),
      [CONVERSATION[0].content, CONVERSATION[2].content].map((text) => [
        "message",
        "user",
        "completed",
        [{ type: "input_text", text }],
      ]),
    );
    for (const kept of output.slice(0, -1)) assert.match(String(kept.id), /^msg_[0-9a-f]{48}$/);
    const item = output.at(-1)!;
    assert.equal(item.type, "compaction");
    assert.match(String(item.encrypted_content), /^gwc1\./);
    assert.equal(typeof (json.usage as Json).total_tokens, "number");

    // Sent back to a translated target: the summary, as the user's message.
    const next = await post(gw, "/responses", {
      model: "chat-translated",
      store: false,
      input: [...output, { role: "user", content: "Go on." }],
    });
    assert.equal(next.status, 200, JSON.stringify(next.json));
    const messages = fakes.chat.requests.at(-1)!.body.messages as { role: string; content: unknown }[];
    const summary = messages.find((m) => typeof m.content === "string" && m.content.includes(FAKE_ANSWER));
    assert.ok(summary, JSON.stringify(messages));
    assert.equal(summary.role, "user");
    assert.match(String(summary.content), /^Summary of the conversation so far/);

    // Sent to a native target, which could not read the gateway's item: the summary as an input_text message.
    const native = await post(gw, "/responses", {
      model: "chat-native",
      store: false,
      input: [...output, { role: "user", content: "Go on." }],
    });
    assert.equal(native.status, 200, JSON.stringify(native.json));
    const input = fakes.native.requests.at(-1)!.body.input as Json[];
    assert.equal(input.some((i) => i.type === "compaction"), false);
    const text = JSON.stringify(input);
    assert.ok(text.includes(FAKE_ANSWER) && text.includes("input_text"), text);

    // One usage record per request, under the endpoint `responses`, the compaction's with its tokens.
    const rows = await pollUsageRows<
      { endpoint: string; alias: string; prompt_tokens: number; dropped: string }
    >(
      gw,
      (r) => r.length >= 3,
      { sql: "SELECT endpoint, alias, prompt_tokens, dropped FROM usage ORDER BY rowid" },
    );
    assert.equal(rows.length, 3);
    assert.deepEqual(rows.map((r) => r.endpoint), ["responses", "responses", "responses"]);
    assert.ok(rows[0].prompt_tokens > 0);
    assert.equal(rows[0].dropped, "client_metadata");
  });
});

Deno.test("responses compact: a stored conversation's user messages keep their stored ids", async () => {
  await withFakeGateway(startAll, configFor, async (gw) => {
    const first = await post(gw, "/responses", { model: "chat-translated", input: "My name is Ada." });
    assert.equal(first.status, 200, JSON.stringify(first.json));
    const { status, json } = await post(gw, "/responses/compact", {
      model: "chat-translated",
      previous_response_id: first.json.id,
      input: [{ role: "user", content: [{ type: "input_text", text: "Plan a landing page." }] }],
    });
    assert.equal(status, 200, JSON.stringify(json));
    schemas?.assert("CompactResource", json, "compaction after previous_response_id");
    const listed = await fetch(`${gw.baseURL}/responses/${first.json.id}/input_items`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    }).then((res) => res.json()) as { data: Json[] };
    const kept = (json.output as Json[]).slice(0, -1);
    assert.deepEqual(kept.map((item) => (item.content as Json[])[0].text), [
      "My name is Ada.",
      "Plan a landing page.",
    ]);
    assert.equal(kept[0].id, listed.data[0].id);
  });
});

Deno.test("responses compact: an upstream that answers with no summary is a 502, recorded with the tokens it used", async () => {
  await withFakeGateway(startAll, configFor, async (gw) => {
    // gpt-refuse answers with a refusal, no content: nothing to compact into, though the upstream worked.
    const { status } = await post(gw, "/responses/compact", { model: "chat-refusing", input: CONVERSATION });
    assert.equal(status, 502);
    const [row] = await pollUsageRows<
      { status: number; prompt_tokens: number; completion_tokens: number; tokens_estimated: number }
    >(gw, (r) => r.length >= 1, {
      sql: "SELECT status, prompt_tokens, completion_tokens, tokens_estimated FROM usage ORDER BY rowid",
    });
    assert.equal(row.status, 502);
    // The fake's usage: 11 prompt and 7 completion tokens, as it reported them.
    assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.tokens_estimated], [11, 7, 0]);
  });
});

Deno.test("responses compact: the token's max_tokens ceiling limits the summary as it limits a response", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const created = await post(
      gw,
      "/responses",
      { model: "chat-translated", input: CONVERSATION },
      CAPPED_TOKEN,
    );
    assert.equal(created.status, 200, JSON.stringify(created.json));
    assert.equal(fakes.chat.requests.at(-1)!.body.max_completion_tokens, 77);
    const { status, json } = await post(
      gw,
      "/responses/compact",
      { model: "chat-translated", input: CONVERSATION },
      CAPPED_TOKEN,
    );
    assert.equal(status, 200, JSON.stringify(json));
    // The summary request is the one the upstream got: the ceiling the budget reserved for is on it.
    const asked = fakes.chat.requests.at(-1)!.body;
    assert.match(JSON.stringify(asked.messages), /Compact the conversation above/);
    assert.equal(asked.max_completion_tokens, 77);
  });
});

Deno.test("responses compact: input is optional as in OpenAI's spec; a stored conversation alone is compacted and counted, not answered again", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const first = await post(gw, "/responses", { model: "chat-translated", input: "My name is Ada." });
    assert.equal(first.status, 200, JSON.stringify(first.json));
    // What client.responses.compact({ model, previous_response_id }) sends: no input at all, or input null.
    for (const body of [{}, { input: null }]) {
      const { status, json } = await post(gw, "/responses/compact", {
        model: "chat-translated",
        previous_response_id: first.json.id,
        ...body,
      });
      assert.equal(status, 200, JSON.stringify(json));
      schemas?.assert("CompactResource", json, "compaction of a stored conversation alone");
      const kept = (json.output as Json[]).slice(0, -1);
      assert.deepEqual(kept.map((item) => (item.content as Json[])[0].text), ["My name is Ada."]);
      const asked = JSON.stringify(fakes.chat.requests.at(-1)!.body.messages);
      assert.match(asked, /My name is Ada\./);
      assert.match(asked, /Compact the conversation above/);
    }
    // A token count may read the stored conversation alone too.
    const count = await post(gw, "/responses/input_tokens", {
      model: "chat-translated",
      previous_response_id: first.json.id,
    });
    assert.equal(count.status, 200, JSON.stringify(count.json));
    assert.ok((count.json.input_tokens as number) > 0, JSON.stringify(count.json));
    // With neither input nor previous_response_id there is nothing to answer: the missing input is named. A
    // create needs an input even with a previous_response_id: the stored conversation ends with the model's
    // answer, which alone would be sent as a prefill (an Anthropic target continues it or refuses it).
    const calls = fakes.chat.requests.length;
    const bodies: [string, Json][] = [
      ["/responses", { model: "chat-translated", input: null }],
      ["/responses/compact", { model: "chat-translated", input: null }],
      ["/responses", { model: "chat-translated", previous_response_id: first.json.id }],
      ["/responses", { model: "chat-translated", previous_response_id: first.json.id, stream: true }],
    ];
    for (const [path, body] of bodies) {
      const none = await post(gw, path, body);
      assert.equal(none.status, 400, JSON.stringify(body));
      assert.deepEqual(none.json, {
        error: {
          message: "Missing required parameter: 'input'.",
          type: "invalid_request_error",
          param: "input",
          code: "missing_required_parameter",
        },
      }, JSON.stringify(body));
    }
    assert.equal(fakes.chat.requests.length, calls);
  });
});
