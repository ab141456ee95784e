/**
 * Input guardrails on a request passed through to a target that speaks its API natively (Responses to an OpenAI
 * target with `native_responses`, Messages to Claude, the Gemini API to Gemini): the texts only that target reads
 * (a Responses reasoning item no assistant turn follows, its summary beside a kept reasoning text, a plain-text
 * `input_file`; a Messages document of content blocks, a document in a tool result; a Gemini model turn's
 * thought) are checked as a chat text is. A guardrail that denies a word refuses the request before any upstream
 * call; one that rewrites it has the native target sent the rewritten text (passed through, not over the chat
 * form), and the vendors' token counts too. A fake webhook guardrail denies `DENYMARK` and replaces `MASKMARK`.
 */
import assert from "node:assert/strict";
import {
  DENY_MARK as DENY,
  type FakeWebhook,
  markerVerdict,
  MASK_MARK as MASK,
  MASKED_MARK as MASKED,
  startFakeWebhook,
} from "../helpers/fake_guardrails.ts";
import {
  type FakeNativeUpstream,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { FAKE_ANTHROPIC_KEY, type FakeAnthropic, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_GEMINI_KEY, type FakeGemini, startFakeGemini } from "../helpers/fake_gemini.ts";
import { startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { withInProcessGateway, withTestGateway } from "../helpers/with_gateway.ts";
import { decodeUtf8Base64, encodeUtf8Base64 } from "../../lib/encoding/utf8_base64.ts";

interface Fakes {
  hook: FakeWebhook;
  responses: FakeNativeUpstream;
  claude: FakeAnthropic;
  gemini: FakeGemini;
}

/** The fakes, and a config with an alias (cached) on each native target under the webhook guardrail. */
function setup() {
  const fakes = startFakes({
    hook: startFakeWebhook,
    responses: startFakeNativeResponses,
    claude: startFakeAnthropic,
    gemini: startFakeGemini,
  });
  fakes.hook.answer = markerVerdict;
  return {
    fakes,
    config: `
providers:
  native: { type: openai, base_url: "${fakes.responses.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  claude: { type: anthropic, base_url: "${fakes.claude.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  gem: { type: gemini, base_url: "${fakes.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
guardrails:
  hook: { type: webhook, url: "${fakes.hook.url}/check" }
  cards: { type: pii, entities: [CREDIT_CARD], action: deny }
  contacts: { type: pii, entities: [EMAIL], action: mask }
models:
  resp-pii: { type: chat, targets: [{ provider: native, model: resp-ok }], guardrails: [cards, contacts] }
  chat-resp: { type: chat, targets: [{ provider: native, model: resp-ok }], guardrails: [hook], cache: {} }
  chat-claude: { type: chat, targets: [{ provider: claude, model: claude-ok }], guardrails: [hook], cache: {} }
  chat-gem: { type: chat, targets: [{ provider: gem, model: gem-ok }], guardrails: [hook], cache: {} }
${TEST_TOKENS_YAML}`,
  };
}

function withNative(fn: (gw: InProcessGateway, fakes: Fakes) => Promise<void>): Promise<void> {
  return withInProcessGateway(setup, fn);
}

/** What one upstream was sent, each body as JSON text with its plain-text files decoded. */
interface Sent {
  path: string;
  body: string;
}

function decoded(body: unknown): string {
  return JSON.stringify(body, (key, value) => {
    if (typeof value !== "string") return value;
    const url = /^data:text\/plain;base64,(.*)$/.exec(value);
    if (url) return decodeUtf8Base64(url[1]) ?? value;
    return key === "data" ? decodeUtf8Base64(value) ?? value : value;
  });
}

/** One client API: where it is posted, how its body is built from its turns, and what its upstream was sent. */
interface Api {
  name: string;
  post(gw: InProcessGateway, turns: unknown[]): Promise<Response>;
  sent(fakes: Fakes): Sent[];
  /** The upstream path of a native passthrough. */
  native: string;
  /** Its texts only a native target reads, each holding `word`; and a plain chat text, the control. */
  cases(word: string): Record<string, unknown[]>;
}

const textFile = (text: string) => `data:text/plain;base64,${encodeUtf8Base64(text)}`;
const contentDocument = (text: string) => ({
  type: "document",
  source: { type: "content", content: [{ type: "text", text }] },
});
const LOOKUP = { name: "lookup", input_schema: { type: "object", properties: {} } };

const RESPONSES: Api = {
  name: "responses",
  post: (gw, input) =>
    gw.fetch("/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-resp", input }),
    }),
  sent: (fakes) => fakes.responses.requests.map((r) => ({ path: r.path, body: decoded(r.body) })),
  native: "/v1/responses",
  cases: (word) => ({
    chat_text: [{ role: "user", content: `hi ${word}` }],
    reasoning_summary: [
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: `thought ${word}` }] },
      { role: "user", content: "hi" },
    ],
    reasoning_summary_beside_text: [
      {
        type: "reasoning",
        id: "rs_1",
        content: [{ type: "reasoning_text", text: "fine" }],
        summary: [{ type: "summary_text", text: `thought ${word}` }],
      },
      { type: "message", role: "assistant", content: "ok" },
      { role: "user", content: "hi" },
    ],
    input_file_text: [{
      role: "user",
      content: [{ type: "input_file", filename: "a.txt", file_data: textFile(`doc ${word}`) }],
    }],
  }),
};

const MESSAGES: Api = {
  name: "messages",
  post: (gw, messages) =>
    gw.fetch("/v1/messages", {
      method: "POST",
      headers: {
        "x-api-key": TEST_TOKEN,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "chat-claude", max_tokens: 50, tools: [LOOKUP], messages }),
    }),
  sent: (fakes) => fakes.claude.requests.map((r) => ({ path: r.path, body: decoded(r.body) })),
  native: "/v1/messages",
  cases: (word) => ({
    chat_text: [{ role: "user", content: `hi ${word}` }],
    content_document: [{
      role: "user",
      content: [contentDocument(`doc ${word}`), { type: "text", text: "hi" }],
    }],
    tool_result_document: [
      { role: "user", content: "look it up" },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "lookup", input: {} }] },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "t1", content: [contentDocument(`record ${word}`)] }],
      },
    ],
  }),
};

const GEMINI: Api = {
  name: "gemini",
  post: (gw, contents) =>
    gw.fetch("/v1beta/models/chat-gem:generateContent", {
      method: "POST",
      headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify({ contents }),
    }),
  sent: (fakes) => fakes.gemini.requests.map((r) => ({ path: r.method, body: decoded(r.body) })),
  native: "generateContent",
  cases: (word) => ({
    chat_text: [{ role: "user", parts: [{ text: `hi ${word}` }] }],
    model_thought: [
      { role: "user", parts: [{ text: "hi" }] },
      { role: "model", parts: [{ text: `thought ${word}`, thought: true }, { text: "hello" }] },
      { role: "user", parts: [{ text: "again" }] },
    ],
  }),
};

const APIS = [RESPONSES, MESSAGES, GEMINI];

Deno.test("guardrails native texts: a denied word only a native target reads refuses the request, as in a chat text", async () => {
  await withNative(async (gw, fakes) => {
    for (const api of APIS) {
      for (const [name, turns] of Object.entries(api.cases(DENY))) {
        const at = `${api.name} ${name}`;
        const before = api.sent(fakes).length;
        const res = await api.post(gw, turns);
        const text = await res.text();
        assert.equal(res.status, 400, `${at}: ${text}`);
        assert.match(text, /rejected by guardrail hook/, at);
        assert.equal(api.sent(fakes).length, before, `${at}: the upstream was sent nothing`);
        const record = gw.records.at(-1)!;
        assert.equal(record.outcome, "deny", at);
        assert.equal(record.rule, "guardrail:hook", at);
      }
    }
  });
});

Deno.test("guardrails native texts: a rewritten word only a native target reads reaches it rewritten, passed through", async () => {
  await withNative(async (gw, fakes) => {
    for (const api of APIS) {
      for (const [name, turns] of Object.entries(api.cases(MASK))) {
        if (name === "chat_text") continue;
        const at = `${api.name} ${name}`;
        const before = api.sent(fakes).length;
        const res = await api.post(gw, turns);
        assert.equal(res.status, 200, `${at}: ${await res.clone().text()}`);
        await res.body?.cancel();
        const sent = api.sent(fakes).slice(before);
        assert.equal(sent.length, 1, at);
        assert.equal(sent[0].path, api.native, `${at}: passed through natively`);
        assert.ok(!sent[0].body.includes(MASK), `${at}: the upstream got the word: ${sent[0].body}`);
        assert.ok(sent[0].body.includes(MASKED), `${at}: the rewritten text is sent: ${sent[0].body}`);
        const record = gw.records.at(-1)!;
        assert.equal(record.outcome, "modify", at);
        assert.equal(record.rule, "guardrail:hook", at);
      }
    }
  });
});

Deno.test("guardrails native texts: the built-in recognizers: a denial names the native text, a mask is its placeholder", async () => {
  await withNative(async (gw, fakes) => {
    const post = (input: unknown[]) =>
      gw.fetch("/v1/responses", {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "resp-pii", input }),
      });
    const denied = await post(RESPONSES.cases("card 4111 1111 1111 1111").reasoning_summary);
    const error = (await denied.json()).error;
    assert.equal(denied.status, 400, JSON.stringify(error));
    assert.equal(error.code, "content_policy_violation");
    assert.equal(error.param, "input[0].summary[0].text");
    assert.match(error.message, /CREDIT_CARD/);
    const masked = await post(RESPONSES.cases("write to bob@example.com").input_file_text);
    assert.equal(masked.status, 200, await masked.clone().text());
    await masked.body?.cancel();
    const sent = RESPONSES.sent(fakes).at(-1)!;
    assert.equal(sent.path, "/v1/responses");
    assert.ok(!sent.body.includes("bob@example.com"), sent.body);
    assert.match(sent.body, /doc write to <EMAIL_1>/);
    assert.equal(gw.records.at(-1)!.rule, "guardrail:contacts");
  });
});

Deno.test("guardrails native texts: with a chat text rewritten too, the request is still passed through, the word never sent", async () => {
  await withNative(async (gw, fakes) => {
    const before = fakes.claude.requests.length;
    const res = await MESSAGES.post(gw, [{
      role: "user",
      content: [contentDocument(`doc ${MASK}`), { type: "text", text: `hi ${MASK}` }],
    }]);
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    const sent = MESSAGES.sent(fakes).slice(before);
    assert.equal(sent.length, 1);
    assert.ok(!sent[0].body.includes(MASK), sent[0].body);
    assert.ok(sent[0].body.includes(`hi ${MASKED}`), sent[0].body);
    assert.ok(sent[0].body.includes(`doc ${MASKED}`), `the document is sent, rewritten: ${sent[0].body}`);
    assert.equal(res.headers.get("x-gateway-dropped"), null);
    assert.equal(gw.records.at(-1)!.outcome, "modify");
  });
});

Deno.test("guardrails native texts: a vendor's token count is sent the rewritten texts, and a denied word is refused", async () => {
  await withNative(async (gw, fakes) => {
    const counts: {
      name: string;
      path: string;
      headers: Record<string, string>;
      body: (word: string) => unknown;
      sent: () => Sent[];
    }[] = [
      {
        name: "messages count_tokens",
        path: "/v1/messages/count_tokens",
        headers: { "x-api-key": TEST_TOKEN, "anthropic-version": "2023-06-01" },
        body: (word: string) => ({
          model: "chat-claude",
          messages: [{
            role: "user",
            content: [contentDocument(`doc ${word}`), { type: "text", text: `hi ${word}` }],
          }],
        }),
        sent: () => MESSAGES.sent(fakes),
      },
      {
        name: "gemini countTokens",
        path: "/v1beta/models/chat-gem:countTokens",
        headers: { "x-goog-api-key": TEST_TOKEN },
        body: (word: string) => ({ contents: GEMINI.cases(word).model_thought }),
        sent: () => GEMINI.sent(fakes),
      },
      {
        name: "responses input_tokens",
        path: "/v1/responses/input_tokens",
        headers: { authorization: `Bearer ${TEST_TOKEN}` },
        body: (word: string) => ({ model: "chat-resp", input: RESPONSES.cases(word).reasoning_summary }),
        sent: () => RESPONSES.sent(fakes),
      },
    ];
    for (const count of counts) {
      const post = (word: string) =>
        gw.fetch(count.path, {
          method: "POST",
          headers: { ...count.headers, "content-type": "application/json" },
          body: JSON.stringify(count.body(word)),
        });
      let before = count.sent().length;
      const masked = await post(MASK);
      assert.equal(masked.status, 200, `${count.name}: ${await masked.clone().text()}`);
      await masked.body?.cancel();
      const sent = count.sent().slice(before);
      assert.equal(sent.length, 1, count.name);
      assert.ok(!sent[0].body.includes(MASK), `${count.name}: the vendor got the word: ${sent[0].body}`);
      assert.ok(sent[0].body.includes(MASKED), `${count.name}: ${sent[0].body}`);
      before = count.sent().length;
      const denied = await post(DENY);
      assert.equal(denied.status, 400, `${count.name}: ${await denied.clone().text()}`);
      await denied.body?.cancel();
      assert.equal(count.sent().length, before, `${count.name}: the vendor was sent nothing`);
    }
  });
});

Deno.test("guardrails native texts: a request whose native text was rewritten is neither served from nor written to the cache", async () => {
  await withTestGateway(setup, async (gw, fakes) => {
    const post = (turns: unknown[]) =>
      fetch(`${gw.url}/v1/messages`, {
        method: "POST",
        headers: {
          "x-api-key": TEST_TOKEN,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
        },
        body: JSON.stringify({ model: "chat-claude", max_tokens: 50, tools: [LOOKUP], messages: turns }),
      });
    const clean = MESSAGES.cases("fine").content_document;
    const masked = MESSAGES.cases(MASK).content_document;
    const statuses: (string | null)[] = [];
    for (const turns of [clean, clean, masked, masked]) {
      const res = await post(turns);
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      statuses.push(res.headers.get("x-cache"));
    }
    assert.deepEqual(statuses, ["MISS", "HIT", "BYPASS", "BYPASS"]);
    assert.equal(fakes.claude.requests.length, 3, "each rewritten request went upstream");
  });
});
