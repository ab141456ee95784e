/**
 * Request fields only an upstream speaking the Responses API natively can honour — a `prompt` template (kept
 * upstream), `top_logprobs` above 0 (the chat form does not carry log probabilities back), `input_file` parts
 * and images by `file_id` (files in the upstream's account) — end to end over real sockets: passed through as
 * sent to a native target, routed only to the native targets of a mixed alias, and a 400 naming the field when
 * the alias has none (nothing reaches an upstream). `max_tool_calls` bounds built-in tool calls only, so every
 * target honours it; `conversation` stays refused everywhere (upstream state no token scope guards).
 */
import assert from "node:assert/strict";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import {
  type FakeNativeUpstream,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { checkResponse } from "../helpers/responses_conformance.ts";
import { type Fakes as FakeSet, startFakes } from "../helpers/fakes.ts";

const schemas = await loadOpenApiSchemas();

type Fakes = FakeSet<{ native: FakeNativeUpstream; chat: FakeUpstream }>;

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
  chat-mixed: { type: chat, targets: [ { provider: chat, model: gpt-ok }, { provider: native, model: resp-ok } ] }
${TEST_TOKENS_YAML}`;
}

async function post(gw: TestGateway, body: unknown): Promise<Response> {
  return await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

const PDF = "data:application/pdf;base64,JVBERi0xLjQK";

/** Native-only uses: the request fields, the param a translated-only alias names, what the upstream must get. */
const NATIVE_ONLY: [string, Record<string, unknown>, string, (body: Record<string, unknown>) => unknown][] = [
  [
    "a prompt template",
    { prompt: { id: "pmpt_123", version: "2", variables: { city: "Paris" } } },
    "prompt",
    (b) => b.prompt,
  ],
  ["top_logprobs above 0", { top_logprobs: 5 }, "top_logprobs", (b) => b.top_logprobs],
  [
    "an input_file part",
    {
      input: [{
        role: "user",
        content: [
          { type: "input_text", text: "Summarise this." },
          { type: "input_file", filename: "a.pdf", file_data: PDF },
        ],
      }],
    },
    "input[0].content[1].type",
    (b) => (b.input as { content: unknown[] }[])[0].content[1],
  ],
  [
    "an image by file_id",
    {
      input: [{
        role: "user",
        content: [{ type: "input_text", text: "What is this?" }, {
          type: "input_image",
          file_id: "file-abc",
          detail: "auto",
        }],
      }],
    },
    "input[0].content[1].file_id",
    (b) => (b.input as { content: unknown[] }[])[0].content[1],
  ],
];

/**
 * What a translated target can answer without (the tolerance rule): dropped and named in `x-gateway-dropped`.
 * Everything else in the table is content the model must read, refused without a native target.
 */
const ANSWERED_WITHOUT = new Set(["top_logprobs"]);

Deno.test("responses native-only fields: passed through to a native target, routed to one, else a 400 naming the field", async (t) => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    for (const [what, fields, param, sent] of NATIVE_ONLY) {
      const request = { input: "Hi", ...fields };
      await t.step(`${what}: a native target gets it as sent`, async () => {
        const res = await post(gw, { model: "chat-native", ...request });
        const body = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        checkResponse(schemas, body);
        assert.deepEqual(sent(fakes.native.requests.at(-1)!.body), sent(request));
      });
      await t.step(`${what}: a mixed alias routes it to its native target only`, async () => {
        const chatCalls = fakes.chat.requests.length;
        for (let i = 0; i < 3; i++) {
          const res = await post(gw, { model: "chat-mixed", ...request });
          assert.equal(res.status, 200);
          assert.equal(res.headers.get("x-gateway-provider"), "native");
          await res.body?.cancel();
        }
        assert.equal(fakes.chat.requests.length, chatCalls, "the translated target never saw it");
      });
      if (ANSWERED_WITHOUT.has(param)) {
        await t.step(`${what}: a translated-only alias answers without it and names ${param}`, async () => {
          const res = await post(gw, { model: "chat-translated", ...request });
          const body = await res.json();
          assert.equal(res.status, 200, JSON.stringify(body));
          assert.equal(res.headers.get("x-gateway-dropped"), param);
          assert.equal(fakes.chat.requests.at(-1)!.body[param], undefined, "not sent to the chat upstream");
        });
        continue;
      }
      await t.step(`${what}: a translated-only alias is a 400 naming ${param}`, async () => {
        const before = fakes.chat.requests.length + fakes.native.requests.length;
        const res = await post(gw, { model: "chat-translated", ...request });
        const body = await res.json();
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(body.error.type, "invalid_request_error");
        assert.equal(body.error.param, param);
        assert.match(body.error.message, /natively/);
        assert.equal(fakes.chat.requests.length + fakes.native.requests.length, before, "no upstream call");
      });
    }
  });
});

Deno.test("responses native-only fields: top_logprobs 0 and max_tool_calls serve a translated target; conversation and out-of-range values are refused everywhere", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const res = await post(gw, { model: "chat-translated", input: "Hi", top_logprobs: 0, max_tool_calls: 3 });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    checkResponse(schemas, body);
    assert.equal(body.max_tool_calls, 3, "echoed as the request set it");
    assert.equal(body.top_logprobs, 0);
    assert.equal(
      fakes.chat.requests.at(-1)!.body.top_logprobs,
      undefined,
      "no log probabilities asked upstream",
    );

    const native = await post(gw, { model: "chat-native", input: "Hi", max_tool_calls: 2 });
    assert.equal(native.status, 200);
    await native.body?.cancel();
    assert.equal(fakes.native.requests.at(-1)!.body.max_tool_calls, 2);

    const before = fakes.chat.requests.length + fakes.native.requests.length;
    for (const alias of ["chat-native", "chat-translated"]) {
      for (
        const [fields, param] of [
          [{ conversation: "conv_123" }, "conversation"],
          [{ top_logprobs: 21 }, "top_logprobs"],
          [{ max_tool_calls: -1 }, "max_tool_calls"],
          [{ prompt: "pmpt_123" }, "prompt"],
          [{ prompt: {} }, "prompt.id"],
        ] as const
      ) {
        const refused = await post(gw, { model: alias, input: "Hi", ...fields });
        const error = (await refused.json()).error;
        assert.equal(refused.status, 400, `${alias} ${JSON.stringify(fields)}`);
        assert.equal(error.param, param);
      }
    }
    assert.equal(
      fakes.chat.requests.length + fakes.native.requests.length,
      before,
      "no refusal went upstream",
    );
  });
});

Deno.test("responses tool outputs with images: a native target gets them as sent; a translated one as a user message", async () => {
  await withFakeGateway(startAll, configFor, async (gw, fakes) => {
    const screenshot = { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=" };
    const input = [
      { role: "user", content: "What does the page show?" },
      { type: "function_call", call_id: "call_1", name: "screenshot", arguments: "{}" },
      {
        type: "function_call_output",
        call_id: "call_1",
        output: [{ type: "input_text", text: "the page" }, screenshot],
      },
    ];
    const native = await post(gw, { model: "chat-native", input });
    assert.equal(native.status, 200, await native.clone().text());
    await native.body?.cancel();
    assert.deepEqual(fakes.native.requests.at(-1)!.body.input, input, "passed through as sent");

    const translated = await post(gw, { model: "chat-translated", input });
    assert.equal(translated.status, 200, await translated.clone().text());
    await translated.body?.cancel();
    const messages = fakes.chat.requests.at(-1)!.body.messages as { role: string; content: unknown }[];
    assert.deepEqual(messages.slice(-2), [
      { role: "tool", tool_call_id: "call_1", content: "the page" },
      {
        role: "user",
        content: [
          { type: "text", text: "(returned by the tool)" },
          { type: "image_url", image_url: { url: screenshot.image_url, detail: "auto" } },
        ],
      },
    ]);
  });
});
