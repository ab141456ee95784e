/**
 * Every request field issue 12 lists for `POST /v1/responses`, sent at once as a client would, through a
 * translated target (an OpenAI-compatible chat upstream) and a native Responses upstream: each is accepted,
 * reaches the upstream in its form, and is echoed in the Response where OpenAI echoes it — whole and streamed,
 * every Response and event validated against OpenAI's published spec. Then the refusals: `background: true`,
 * a wrong type and a wrong value of each field are OpenAI's 400 naming the `param`, on both paths, and no
 * bad body gets a 5xx.
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
import { checkEvents, checkResponse, parseSse } from "../helpers/responses_conformance.ts";
import { type Fakes as FakeSet, startFakes } from "../helpers/fakes.ts";

const schemas = await loadOpenApiSchemas();

type Fakes = FakeSet<{ chat: FakeUpstream; native: FakeNativeUpstream }>;

const startAll = (): Fakes => startFakes({ chat: startFakeOpenAI, native: startFakeNativeResponses });

const config = (f: Fakes) => `
server: { host: 127.0.0.1, port: 0 }
providers:
  chat: { type: openai, base_url: "${f.chat.baseURL}", api_key: "${FAKE_KEY}" }
  native: { type: openai, base_url: "${f.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-translated: { type: chat, targets: [ { provider: chat, model: gpt-ok } ] }
  chat-native: { type: chat, targets: [ { provider: native, model: resp-ok } ] }
${TEST_TOKENS_YAML}`;

function withGateway(fn: (gw: TestGateway, fakes: Fakes) => Promise<void>) {
  return withFakeGateway(startAll, config, fn);
}

async function post(gw: TestGateway, body: unknown): Promise<Response> {
  return await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

const TOOL = {
  type: "function",
  name: "get_time",
  description: "The time in a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
  strict: true,
};
const FORMAT = {
  type: "json_schema",
  name: "greeting",
  schema: {
    type: "object",
    properties: { greeting: { type: "string" } },
    required: ["greeting"],
    additionalProperties: false,
  },
  strict: true,
};

/** Input holding every item kind the issue lists. */
const INPUT = [
  { role: "system", content: "Be terse." },
  { role: "developer", content: [{ type: "input_text", text: "Use English." }] },
  {
    role: "user",
    content: [
      { type: "input_text", text: "What time is it in Paris?" },
      { type: "input_image", image_url: "https://example.com/clock.png", detail: "low" },
    ],
  },
  {
    type: "reasoning",
    id: "rs_earlier",
    summary: [{ type: "summary_text", text: "The user wants the time." }],
  },
  {
    type: "function_call",
    id: "fc_earlier",
    call_id: "call_t1",
    name: "get_time",
    arguments: '{"city":"Paris"}',
  },
  { type: "function_call_output", call_id: "call_t1", output: "12:00" },
  {
    type: "message",
    role: "assistant",
    id: "msg_earlier",
    status: "completed",
    content: [{ type: "output_text", text: "It is noon.", annotations: [] }],
  },
  { role: "user", content: "Thanks, greet me." },
];

/** Every top-level field the issue lists, with values OpenAI accepts. */
function everyField(model: string, previous: string | null): Record<string, unknown> {
  return {
    model,
    input: INPUT,
    instructions: "Answer as JSON.",
    tools: [TOOL],
    tool_choice: "auto",
    parallel_tool_calls: false,
    text: { format: FORMAT },
    max_output_tokens: 300,
    temperature: 0.4,
    top_p: 0.9,
    reasoning: { effort: "low", summary: "auto" },
    store: true,
    ...(previous ? { previous_response_id: previous } : {}),
    metadata: { ticket: "T-1", team: "search" },
    user: "user-42",
    safety_identifier: "sid-42",
    prompt_cache_key: "cache-42",
    truncation: "disabled",
    include: ["reasoning.encrypted_content"],
  };
}

/** The echo OpenAI gives of `everyField`'s parameters. */
function assertEchoed(response: Record<string, unknown>, alias: string, previous: string | null): void {
  checkResponse(schemas, response);
  assert.equal(response.model, alias);
  assert.equal(response.instructions, "Answer as JSON.");
  assert.deepEqual(response.tools, [TOOL]);
  assert.equal(response.tool_choice, "auto");
  assert.equal(response.parallel_tool_calls, false);
  assert.deepEqual((response.text as { format: unknown }).format, FORMAT);
  assert.equal(response.max_output_tokens, 300);
  assert.equal(response.temperature, 0.4);
  assert.equal(response.top_p, 0.9);
  assert.deepEqual(response.reasoning, { effort: "low", summary: "auto" });
  assert.equal(response.store, true);
  assert.equal(response.previous_response_id, previous);
  assert.deepEqual(response.metadata, { ticket: "T-1", team: "search" });
  assert.equal(response.truncation, "disabled");
}

Deno.test("responses fields: every listed field is accepted, reaches a translated upstream and is echoed", async () => {
  await withGateway(async (gw, fakes) => {
    const res = await post(gw, everyField("chat-translated", null));
    assert.equal(res.status, 200, await res.clone().text());
    const first = await res.json();
    assertEchoed(first, "chat-translated", null);
    // OpenAI echoes these three too (the spec's Response has them, as strings).
    assert.equal(first.user, "user-42");
    assert.equal(first.safety_identifier, "sid-42");
    assert.equal(first.prompt_cache_key, "cache-42");
    const sent = fakes.chat.requests.at(-1)!.body;
    assert.equal(sent.model, "gpt-ok");
    assert.equal(sent.tool_choice, "auto");
    assert.equal(sent.parallel_tool_calls, false);
    assert.equal(sent.temperature, 0.4);
    assert.equal(sent.top_p, 0.9);
    assert.equal(sent.reasoning_effort, "low");
    assert.equal(sent.user, "user-42");
    assert.equal(sent.safety_identifier, "sid-42");
    assert.equal(sent.prompt_cache_key, "cache-42");
    assert.equal(sent.max_completion_tokens ?? sent.max_tokens, 300);
    assert.deepEqual(sent.response_format, {
      type: "json_schema",
      json_schema: { name: "greeting", schema: FORMAT.schema, strict: true },
    });
    const messages = sent.messages as Record<string, unknown>[];
    // The reasoning item has no chat form: it is accepted and left out; everything else keeps its order.
    assert.deepEqual(messages.map((m) => m.role), [
      "system",
      "system",
      "developer",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
    ]);
    assert.deepEqual(messages[3].content, [
      { type: "text", text: "What time is it in Paris?" },
      { type: "image_url", image_url: { url: "https://example.com/clock.png", detail: "low" } },
    ]);
    assert.deepEqual(messages[4].tool_calls, [{
      id: "call_t1",
      type: "function",
      function: { name: "get_time", arguments: '{"city":"Paris"}' },
    }]);
    const text = JSON.stringify(messages);
    for (
      const said of [
        "Answer as JSON.",
        "Be terse.",
        "Use English.",
        "What time is it in Paris?",
        "12:00",
        "It is noon.",
        "Thanks, greet me.",
      ]
    ) {
      assert.ok(text.includes(said), `${said} reached the upstream: ${text}`);
    }

    // The same fields streamed, chained to the first answer: every event valid, the final Response echoes.
    const streamed = await post(gw, { ...everyField("chat-translated", first.id), stream: true });
    assert.equal(streamed.status, 200);
    const done = checkEvents(schemas, parseSse(await streamed.text()));
    assertEchoed(done, "chat-translated", first.id);
    const chained = JSON.stringify(fakes.chat.requests.at(-1)!.body.messages);
    assert.equal(
      chained.split("What time is it in Paris?").length - 1,
      2,
      "the earlier turn is rebuilt before the new",
    );

    // The other text formats.
    for (const format of [{ type: "text" }, { type: "json_object" }]) {
      const r = await post(gw, { model: "chat-translated", input: "JSON please", text: { format } });
      assert.equal(r.status, 200);
      const body = await r.json();
      checkResponse(schemas, body);
      assert.deepEqual(body.text.format, format);
      assert.deepEqual(fakes.chat.requests.at(-1)!.body.response_format ?? { type: "text" }, format);
    }
  });
});

Deno.test("responses fields: every listed field passes through to a native upstream as sent", async () => {
  await withGateway(async (gw, fakes) => {
    const res = await post(gw, everyField("chat-native", null));
    assert.equal(res.status, 200, await res.clone().text());
    const first = await res.json();
    assertEchoed(first, "chat-native", null);
    const { model: _, ...rest } = everyField("chat-native", null);
    const sent = fakes.native.requests.at(-1)!.body;
    assert.equal(sent.model, "resp-ok");
    for (const [key, value] of Object.entries(rest)) {
      assert.deepEqual(sent[key], value, `${key} reaches the native upstream as sent`);
    }

    const streamed = await post(gw, { ...everyField("chat-native", first.id), stream: true });
    assert.equal(streamed.status, 200);
    const done = checkEvents(schemas, parseSse(await streamed.text()));
    assertEchoed(done, "chat-native", first.id);
  });
});

/** Bodies every Responses endpoint refuses with 400 and the param OpenAI names. */
const REFUSED: [string, Record<string, unknown>, string][] = [
  ["background", { background: true }, "background"],
  ["a field of the wrong type", { store: "yes" }, "store"],
  ["input of a wrong type", { input: 7 }, "input"],
  ["instructions not a string", { instructions: 1 }, "instructions"],
  ["tools not an array", { tools: {} }, "tools"],
  ["a function tool without a name", { tools: [{ type: "function" }] }, "tools[0].name"],
  ["an unknown tool_choice", { tool_choice: "sometimes" }, "tool_choice"],
  ["parallel_tool_calls not a boolean", { parallel_tool_calls: "yes" }, "parallel_tool_calls"],
  ["an unknown text.format", { text: { format: { type: "yaml" } } }, "text.format.type"],
  [
    "json_schema without a name",
    { text: { format: { type: "json_schema", schema: {} } } },
    "text.format.name",
  ],
  ["max_output_tokens not an integer", { max_output_tokens: 20.5 }, "max_output_tokens"],
  ["temperature above 2", { temperature: 3 }, "temperature"],
  ["top_p above 1", { top_p: 1.5 }, "top_p"],
  ["reasoning not an object", { reasoning: "low" }, "reasoning"],
  ["stream not a boolean", { stream: "yes" }, "stream"],
  ["store not a boolean", { store: "yes" }, "store"],
  ["metadata not an object", { metadata: "x" }, "metadata"],
  ["user not a string", { user: 5 }, "user"],
  ["safety_identifier not a string", { safety_identifier: 5 }, "safety_identifier"],
  ["prompt_cache_key not a string", { prompt_cache_key: 5 }, "prompt_cache_key"],
  ["an unknown truncation", { truncation: "sometimes" }, "truncation"],
  ["an unknown text.verbosity", { text: { verbosity: "terse" } }, "text.verbosity"],
  ["include not an array", { include: "all" }, "include"],
];

Deno.test("responses fields: a long unknown field name or many of them are dropped and named in a bounded header", async () => {
  await withGateway(async (gw) => {
    const long = `x_${"a".repeat(120)}`;
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, i]));
    for (const stream of [false, true]) {
      for (const extra of [{ [long]: 1 }, many]) {
        const res = await post(gw, { model: "chat-translated", input: "Hi", stream, ...extra });
        const text = await res.text();
        assert.equal(res.status, 200, text.slice(0, 300));
        const dropped = res.headers.get("x-gateway-dropped")!;
        assert.ok(dropped.length <= 33 * 97, "bounded");
        assert.ok(dropped.endsWith("..."), dropped);
      }
    }
  });
});

Deno.test("responses fields: an unknown field reaches a native target as sent; a translated one answers without it and says so", async () => {
  await withGateway(async (gw, fakes) => {
    const translated = await post(gw, { model: "chat-translated", input: "Hi", frobnicate: 1 });
    assert.equal(translated.status, 200);
    assert.equal(translated.headers.get("x-gateway-dropped"), "frobnicate");
    await translated.body?.cancel();
    assert.equal(fakes.chat.requests.at(-1)!.body.frobnicate, undefined);
    const native = await post(gw, { model: "chat-native", input: "Hi", frobnicate: 1 });
    assert.equal(native.status, 200);
    assert.equal(native.headers.get("x-gateway-dropped"), null);
    await native.body?.cancel();
    assert.equal(fakes.native.requests.at(-1)!.body.frobnicate, 1);
  });
});

Deno.test("responses fields: background, a wrong type and bad values are OpenAI's 400 with param, on both paths", async (t) => {
  await withGateway(async (gw, fakes) => {
    for (const alias of ["chat-translated", "chat-native"]) {
      for (const [what, fields, param] of REFUSED) {
        await t.step(`${alias}: ${what}`, async () => {
          const before = fakes.chat.requests.length + fakes.native.requests.length;
          const res = await post(gw, { model: alias, input: "Hi", ...fields });
          const body = await res.json();
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.deepEqual(Object.keys(body), ["error"]);
          assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
          assert.equal(body.error.type, "invalid_request_error");
          assert.equal(body.error.param, param, body.error.message);
          assert.equal(typeof body.error.message, "string");
          assert.equal(
            fakes.chat.requests.length + fakes.native.requests.length,
            before,
            "a refused request reaches no upstream",
          );
        });
      }
    }
  });
});

/** Values the spec refuses that the gateway once let through (the "Was BUG" notes). */
const LET_THROUGH: [string, Record<string, unknown>, string][] = [
  // Was BUG: CreateResponse's `max_output_tokens` has `minimum: 16` in the spec (OpenAI answers 400 "integer below
  // minimum value"); the gateway accepts 3, sends it upstream and echoes it. Validation of max_output_tokens in
  // lib/api/responses/request.ts (or validate.ts) checks only for a positive integer.
  ["max_output_tokens below 16", { max_output_tokens: 3 }, "max_output_tokens"],
  // Was BUG: `reasoning.effort` outside the spec's ReasoningEffort enum (none, minimal, low, medium, high, xhigh,
  // max) is accepted, sent upstream as reasoning_effort "extreme" and echoed as `reasoning.effort: "extreme"`,
  // so the Response itself no longer validates against the spec's `Response`. Expected: 400 with param
  // `reasoning.effort`. The reasoning object's check in lib/api/responses/request.ts reads effort as any
  // string.
  ["an unknown reasoning effort", { reasoning: { effort: "extreme" } }, "reasoning.effort"],
  // Was BUG: likewise `reasoning.summary` outside the spec's enum (auto, concise, detailed) is accepted and echoed
  // as `"verbose"`, a Response the spec's `Response` refuses.
  ["an unknown reasoning summary", { reasoning: { summary: "verbose" } }, "reasoning.summary"],
];

Deno.test({
  name: "responses fields: max_output_tokens below 16 and unknown reasoning values are 400s naming the param",
  fn: async () => {
    await withGateway(async (gw) => {
      for (const alias of ["chat-translated", "chat-native"]) {
        for (const [what, fields, param] of LET_THROUGH) {
          const res = await post(gw, { model: alias, input: "Hi", ...fields });
          const body = await res.json();
          assert.equal(res.status, 400, `${alias}, ${what}: ${JSON.stringify(body).slice(0, 300)}`);
          assert.equal(body.error.param, param);
        }
      }
    });
  },
});

Deno.test("responses fields: a tool_choice that forces a call with no function tool is a 400 naming it, unless a native target takes it", async () => {
  await withGateway(async (gw, fakes) => {
    const forcing: Record<string, unknown>[] = [
      { tool_choice: "required" },
      { tool_choice: { type: "function", name: "get_time" } },
      {
        tool_choice: {
          type: "allowed_tools",
          mode: "required",
          tools: [{ type: "function", name: "get_time" }],
        },
      },
      // The built-in tool is dropped on a translated target: nothing would be left to call.
      { tools: [{ type: "web_search" }], tool_choice: "required" },
    ];
    for (const fields of forcing) {
      const before = fakes.chat.requests.length;
      const res = await post(gw, { model: "chat-translated", input: "Hi", ...fields });
      const body = await res.json();
      assert.equal(res.status, 400, `${JSON.stringify(fields)}: ${JSON.stringify(body)}`);
      assert.equal(body.error.param, "tool_choice");
      assert.equal(fakes.chat.requests.length, before, "no upstream is asked");
    }
    // A native target runs the built-in tool: it gets the request as sent.
    const native = await post(gw, { model: "chat-native", input: "Hi", ...forcing[3] });
    assert.equal(native.status, 200, await native.clone().text());
    await native.body?.cancel();
    assert.equal(fakes.native.requests.at(-1)!.body.tool_choice, "required");
    // A choice that forces nothing, and a forced call with a function tool, are served.
    for (
      const fields of [{ tool_choice: "auto" }, { tool_choice: "none" }, {
        tools: [TOOL],
        tool_choice: "required",
      }]
    ) {
      const res = await post(gw, { model: "chat-translated", input: "Hi", ...fields });
      assert.equal(res.status, 200, `${JSON.stringify(fields)}: ${await res.clone().text()}`);
      await res.body?.cancel();
    }
  });
});
