/**
 * OpenAI → Converse request translation. The tool example is AWS's own ("Call a tool with the Converse API",
 * docs.aws.amazon.com/bedrock/latest/userguide/tool-use-inference-call.html): tool `top_song`, station WZPZ,
 * tool use id `tooluse_kZJMlvQmRJ6eAyJE5GIl7Q`, result `{"song":"Elemental Hotel","artist":"8 Storey Hike"}`.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { bedrockParamRules, isClaudeModel, toConverseRequest } from "./request.ts";

/** The rules for a model that is not Claude. */
const NOVA = bedrockParamRules("amazon.nova-pro-v1:0");
import type { ChatRequest, JsonObject } from "../../openai/types.ts";
import { applyUnsupportedRules } from "../shared/unsupported_params.ts";
import { req, TOOL_USE_ID, TOP_SONG_TOOL } from "./request_test_helpers.ts";

Deno.test("bedrock request: plain chat", () => {
  assert.deepEqual(toConverseRequest(req({ messages: [{ role: "user", content: "Hello" }] })), {
    messages: [{ role: "user", content: [{ text: "Hello" }] }],
  });
});

Deno.test("bedrock request: system and developer messages, inference parameters", () => {
  const body = toConverseRequest(req({
    messages: [
      { role: "system", content: "You are terse." },
      { role: "developer", content: [{ type: "text", text: "Answer in French." }] },
      { role: "user", content: [{ type: "text", text: "Hi" }, { type: "text", text: "there" }] },
    ],
    max_tokens: 10,
    max_completion_tokens: 20,
    temperature: 0.5,
    top_p: 0.9,
    stop: "END",
  }));
  assert.deepEqual(body, {
    system: [{ text: "You are terse." }, { text: "Answer in French." }],
    messages: [{ role: "user", content: [{ text: "Hi" }, { text: "there" }] }],
    inferenceConfig: { maxTokens: 20, temperature: 0.5, topP: 0.9, stopSequences: ["END"] },
  });
});

Deno.test("bedrock request: system and developer messages alone are the user's turn (Converse refuses no turns)", () => {
  const body = toConverseRequest(req({
    messages: [
      { role: "system", content: "Write a haiku about the sea." },
      { role: "developer", content: [{ type: "text", text: "In French." }] },
    ],
  }));
  assert.deepEqual(body, {
    messages: [{ role: "user", content: [{ text: "Write a haiku about the sea." }, { text: "In French." }] }],
  });
  // Blank system text is no turn: nothing to move.
  assert.deepEqual(toConverseRequest(req({ messages: [{ role: "system", content: " " }] })), {
    messages: [],
  });
});

Deno.test("bedrock request: AWS's top_song example, tool call and result over several turns", () => {
  const body = toConverseRequest(
    req({
      messages: [
        { role: "user", content: "What is the most popular song on WZPZ?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: TOOL_USE_ID,
            type: "function",
            function: { name: "top_song", arguments: '{"sign":"WZPZ"}' },
          }, { id: "tooluse_2", type: "function", function: { name: "top_song", arguments: "" } }],
        },
        {
          role: "tool",
          tool_call_id: TOOL_USE_ID,
          content: '{"song":"Elemental Hotel","artist":"8 Storey Hike"}',
        },
        { role: "tool", tool_call_id: "tooluse_2", content: [{ type: "text", text: "unknown" }] },
        { role: "user", content: "Thanks!" },
        { role: "user", content: "And on WKRP?" },
      ],
      tools: [TOP_SONG_TOOL],
      tool_choice: { type: "function", function: { name: "top_song" } },
    }),
    "us.amazon.nova-pro-v1:0",
  );
  assert.deepEqual(body.messages, [
    { role: "user", content: [{ text: "What is the most popular song on WZPZ?" }] },
    {
      role: "assistant",
      content: [
        { toolUse: { toolUseId: TOOL_USE_ID, name: "top_song", input: { sign: "WZPZ" } } },
        { toolUse: { toolUseId: "tooluse_2", name: "top_song", input: {} } },
      ],
    },
    {
      role: "user",
      content: [
        {
          toolResult: {
            toolUseId: TOOL_USE_ID,
            content: [{ text: '{"song":"Elemental Hotel","artist":"8 Storey Hike"}' }],
            status: "success",
          },
        },
        { toolResult: { toolUseId: "tooluse_2", content: [{ text: "unknown" }], status: "success" } },
        { text: "Thanks!" },
        { text: "And on WKRP?" },
      ],
    },
  ]);
  assert.deepEqual(body.toolConfig, {
    tools: [{
      toolSpec: {
        name: "top_song",
        description: TOP_SONG_TOOL.function.description,
        inputSchema: { json: TOP_SONG_TOOL.function.parameters },
      },
    }],
    toolChoice: { tool: { name: "top_song" } },
  });
});

Deno.test("bedrock request: tool_choice auto, required, none", () => {
  const messages = [{ role: "user", content: "x" }];
  const choice = (tool_choice: unknown, extra: JsonObject[] = []) =>
    toConverseRequest(
      req({
        messages: [...messages, ...extra] as ChatRequest["messages"],
        tools: [TOP_SONG_TOOL],
        tool_choice,
      }),
    )
      .toolConfig as JsonObject | undefined;
  assert.deepEqual(choice(undefined)?.toolChoice, { auto: {} });
  assert.deepEqual(choice("auto")?.toolChoice, { auto: {} });
  assert.deepEqual(choice("required")?.toolChoice, { any: {} });
  assert.equal(choice("none"), undefined);
  // With tool blocks in the history Converse needs a toolConfig: tools are sent without a choice.
  const history = [
    {
      role: "assistant",
      tool_calls: [{ id: "t1", type: "function", function: { name: "top_song", arguments: "{}" } }],
    },
    { role: "tool", tool_call_id: "t1", content: "ok" },
  ];
  const withHistory = choice("none", history);
  assert.ok(withHistory);
  assert.equal(withHistory.toolChoice, undefined);
  assert.equal((withHistory.tools as unknown[]).length, 1);
});

Deno.test("bedrock request: images as data URLs; remote URLs and other types are 400s naming the part", () => {
  const body = toConverseRequest(req({
    messages: [{
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "low" } },
        { type: "image_url", image_url: { url: "data:image/jpg;base64,/9j/4AAQ" } },
      ],
    }],
  }));
  assert.deepEqual(body.messages, [{
    role: "user",
    content: [
      { text: "What is this?" },
      { image: { format: "png", source: { bytes: "iVBORw0KGgo=" } } },
      { image: { format: "jpeg", source: { bytes: "/9j/4AAQ" } } },
    ],
  }]);
  const bad = (url: string) => () =>
    toConverseRequest(req({
      messages: [{
        role: "user",
        content: [{ type: "text", text: "x" }, { type: "image_url", image_url: { url } }],
      }],
    }));
  const param = (p: string, code?: string) => (err: unknown) =>
    err instanceof GatewayError && err.status === 400 && err.param === p &&
    (code === undefined || err.code === code);
  assert.throws(
    bad("https://example.com/cat.png"),
    param("messages[0].content[1].image_url", "unsupported_image_url"),
  );
  assert.throws(
    bad("data:image/bmp;base64,Qk0="),
    param("messages[0].content[1].image_url", "unsupported_image_type"),
  );
  assert.throws(bad("data:image/png;base64,***"), param("messages[0].content[1].image_url"));
  assert.throws(
    () =>
      toConverseRequest(req({
        messages: [{
          role: "user",
          content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }],
        }],
      })),
    param("messages[0].content[0].type", "unsupported_content_type"),
  );
});

Deno.test("bedrock request: malformed tool arguments and unsupported roles are 400s", () => {
  const param = (p: string) => (err: unknown) => err instanceof GatewayError && err.param === p;
  assert.throws(
    () =>
      toConverseRequest(req({
        messages: [{
          role: "assistant",
          tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: "{" } }],
        }],
      })),
    param("messages[0].tool_calls[0].function.arguments"),
  );
  assert.throws(
    () =>
      toConverseRequest(req({
        messages: [{
          role: "assistant",
          tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: "[1]" } }],
        }],
      })),
    param("messages[0].tool_calls[0].function.arguments"),
  );
  assert.throws(
    () => toConverseRequest(req({ messages: [{ role: "function", name: "f", content: "x" }] })),
    param("messages[0].role"),
  );
});

Deno.test("bedrock request: unsupported OpenAI parameters error by default and drop on request", () => {
  const base = req({ messages: [{ role: "user", content: "x" }] });
  const cases: [string, unknown, boolean][] = [
    ["n", 2, true],
    ["n", 1, false],
    ["logprobs", true, true],
    ["logprobs", false, false],
    ["top_logprobs", 2, true],
    ["top_logprobs", 0, false],
    ["logit_bias", { "50256": -100 }, true],
    ["logit_bias", {}, false],
    ["presence_penalty", 0.5, true],
    ["presence_penalty", 0, false],
    ["frequency_penalty", -1, true],
    ["seed", 7, true],
    ["response_format", { type: "grammar", grammar: "root ::= x" }, true],
    ["response_format", { type: "text" }, false],
    ["response_format", { type: "json_object" }, false],
    ["response_format", { type: "json_schema", json_schema: { name: "g" } }, false],
    ["parallel_tool_calls", true, false],
    ["modalities", ["text", "audio"], true],
    ["modalities", ["text"], false],
  ];
  for (const [param, value, unsupported] of cases) {
    const request = { ...base, [param]: value };
    if (!unsupported) {
      assert.equal(applyUnsupportedRules(request, NOVA, "error"), request, param);
      continue;
    }
    assert.throws(
      () => applyUnsupportedRules(request, NOVA, "error"),
      (err: unknown) =>
        err instanceof GatewayError && err.param === param && err.code === "unsupported_parameter",
      param,
    );
    assert.equal(param in applyUnsupportedRules(request, NOVA, "drop"), false);
  }
  // parallel_tool_calls: false is refused beside tools the model may call; without them it changes nothing.
  const parallelOff = { ...base, parallel_tool_calls: false, tools: [TOP_SONG_TOOL] };
  assert.throws(() => applyUnsupportedRules(parallelOff, NOVA, "error"), GatewayError);
  for (const harmless of [{ tools: undefined }, { tools: [] }, { tool_choice: "none" }]) {
    const request = { ...parallelOff, ...harmless };
    assert.equal(applyUnsupportedRules(request, NOVA, "error"), request, JSON.stringify(harmless));
  }
});

Deno.test("bedrock request: reasoning_effort → Claude thinking in additionalModelRequestFields", () => {
  const claude = "us.anthropic.claude-sonnet-4-20250514-v1:0";
  assert.ok(isClaudeModel(claude));
  assert.ok(
    isClaudeModel("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-7-sonnet-20250219-v1:0"),
  );
  assert.ok(!isClaudeModel("amazon.nova-pro-v1:0"));
  const request = req({ reasoning_effort: "medium" });
  assert.equal(applyUnsupportedRules(request, bedrockParamRules(claude), "error"), request);
  const body = toConverseRequest(request, claude);
  assert.deepEqual(body.additionalModelRequestFields, { thinking: { type: "enabled", budget_tokens: 8192 } });
  assert.deepEqual(body.inferenceConfig, { maxTokens: 4096 + 8192 });
  const bounded = toConverseRequest(req({ reasoning_effort: "high", max_completion_tokens: 10000 }), claude);
  assert.deepEqual(bounded.additionalModelRequestFields, {
    thinking: { type: "enabled", budget_tokens: 9999 },
  });
  assert.deepEqual(bounded.inferenceConfig, { maxTokens: 10000 });
  assert.equal(
    "additionalModelRequestFields" in toConverseRequest(req({ reasoning_effort: "none" }), claude),
    false,
  );
  // Other models: no field to put it in, so it stays a 400 naming the parameter.
  assert.throws(
    () => applyUnsupportedRules(request, bedrockParamRules("amazon.nova-pro-v1:0"), "error"),
    (err: unknown) => err instanceof GatewayError && err.param === "reasoning_effort",
  );
  assert.throws(
    () =>
      applyUnsupportedRules(
        req({ reasoning_effort: "xhigh" }),
        bedrockParamRules(claude),
        "error",
      ),
    (err: unknown) => err instanceof GatewayError && err.param === "reasoning_effort",
  );
  // A tool loop under way: Claude would need the signed thinking block back, so no thinking for that step.
  const loop = toConverseRequest(
    req({
      reasoning_effort: "high",
      tools: [TOP_SONG_TOOL],
      messages: [
        { role: "user", content: "Top song?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: TOOL_USE_ID,
            type: "function",
            function: { name: "top_song", arguments: "{}" },
          }],
        },
        { role: "tool", tool_call_id: TOOL_USE_ID, content: "Elemental Hotel" },
      ],
    }),
    claude,
  );
  assert.equal("additionalModelRequestFields" in loop, false);
  assert.equal("inferenceConfig" in loop, false);
});

Deno.test("bedrock request: reasoning_effort beside what Claude refuses with thinking is refused or dropped, by name", () => {
  const claude = bedrockParamRules("anthropic.claude-3-7-sonnet-20250219-v1:0");
  const tools = [TOP_SONG_TOOL];
  const named = { type: "function", function: { name: "top_song" } };
  const excluding: [JsonObject, string][] = [
    [{ tools, tool_choice: "required" }, "a 'tool_choice' that forces a tool"],
    [{ tools, tool_choice: named }, "a 'tool_choice' that forces a tool"],
    [{ temperature: 0.2 }, "a 'temperature' other than 1"],
    [{ top_p: 0.5 }, "'top_p' below 0.95"],
  ];
  for (const [extra, why] of excluding) {
    const request = req({ reasoning_effort: "low", ...extra });
    assert.throws(
      () => applyUnsupportedRules(request, claude, "error"),
      (err: unknown) =>
        err instanceof GatewayError && err.param === "reasoning_effort" &&
        err.code === "unsupported_parameter" &&
        err.message.includes(why),
      JSON.stringify(extra),
    );
    // Dropped: no thinking, and the client's tool choice and sampling are sent as asked.
    const body = toConverseRequest(applyUnsupportedRules(request, claude, "drop"), "anthropic.claude-x");
    assert.equal("additionalModelRequestFields" in body, false, JSON.stringify(extra));
  }
  const dropped = toConverseRequest(
    applyUnsupportedRules(req({ reasoning_effort: "low", temperature: 0.2 }), claude, "drop"),
    "anthropic.claude-x",
  );
  assert.deepEqual(dropped.inferenceConfig, { temperature: 0.2 });
  // What thinking allows stays: tool_choice auto, temperature 1, top_p from 0.95, effort none beside anything.
  for (
    const extra of [
      { tools, tool_choice: "auto" },
      { temperature: 1, top_p: 0.95 },
      { reasoning_effort: "none", temperature: 0 },
    ]
  ) {
    const request = req({ reasoning_effort: "low", ...extra });
    assert.equal(applyUnsupportedRules(request, claude, "error"), request, JSON.stringify(extra));
  }
  // Where thinking is left off anyway (a forced answer tool, a tool loop under way), nothing is refused.
  const format = req({ reasoning_effort: "low", temperature: 0.2, response_format: { type: "json_object" } });
  assert.equal(applyUnsupportedRules(format, claude, "error"), format);
  const loop = req({
    reasoning_effort: "low",
    temperature: 0.2,
    tools,
    tool_choice: "required",
    messages: [
      { role: "user", content: "Top song?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: TOOL_USE_ID, type: "function", function: { name: "top_song", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: TOOL_USE_ID, content: "Elemental Hotel" },
    ],
  });
  assert.equal(applyUnsupportedRules(loop, claude, "error"), loop);
});
