/**
 * OpenAI request → Anthropic request, table-driven. Expected Anthropic bodies follow the request examples of
 * Anthropic's docs (Messages API reference, tool use guide, vision guide).
 */
import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { HISTORY_TOOL_DESCRIPTION } from "../shared/history_tools.ts";
import { assertGatewayError, CONFIG, MODEL, translate, WEATHER_TOOL } from "./request_test_helpers.ts";

const WEATHER_TOOL_ANTHROPIC = {
  name: "get_weather",
  input_schema: WEATHER_TOOL.function.parameters,
  description: "Get the current weather in a given location",
};

interface Case {
  name: string;
  request: JsonObject;
  expected: JsonObject;
}

const CASES: Case[] = [
  {
    name: "plain chat (Messages API reference example), default max_tokens",
    request: { messages: [{ role: "user", content: "Hello, world" }] },
    expected: { model: MODEL, max_tokens: 4096, messages: [{ role: "user", content: "Hello, world" }] },
  },
  {
    name: "system and developer messages are hoisted and concatenated",
    request: {
      messages: [
        { role: "system", content: "You are a helpful assistant." },
        { role: "developer", content: [{ type: "text", text: "Answer in French." }] },
        { role: "user", content: "Who are you?" },
      ],
      max_tokens: 256,
    },
    expected: {
      model: MODEL,
      max_tokens: 256,
      system: "You are a helpful assistant.\nAnswer in French.",
      messages: [{ role: "user", content: "Who are you?" }],
    },
  },
  {
    name: "max_completion_tokens wins over max_tokens; stop string; sampling; user; stream",
    request: {
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 10,
      max_completion_tokens: 20,
      stop: "\n\nHuman:",
      top_p: 0.9,
      top_k: 40,
      user: "user-123",
      stream: true,
      stream_options: { include_usage: true },
      store: false,
      metadata: { team: "a" },
      n: 1,
      logprobs: false,
      presence_penalty: 0,
      response_format: { type: "text" },
    },
    expected: {
      model: MODEL,
      max_tokens: 20,
      messages: [{ role: "user", content: "Hi" }],
      stop_sequences: ["\n\nHuman:"],
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: "user-123" },
      stream: true,
    },
  },
  {
    name: "stop array → stop_sequences",
    request: { messages: [{ role: "user", content: "Hi" }], stop: ["END", "STOP"] },
    expected: {
      model: MODEL,
      max_tokens: 4096,
      messages: [{ role: "user", content: "Hi" }],
      stop_sequences: ["END", "STOP"],
    },
  },
  {
    name: "tools with tool_choice required → any (streaming tool-use example of the docs)",
    request: {
      messages: [{ role: "user", content: "What is the weather like in San Francisco?" }],
      max_tokens: 1024,
      tools: [WEATHER_TOOL],
      tool_choice: "required",
    },
    expected: {
      model: MODEL,
      max_tokens: 1024,
      messages: [{ role: "user", content: "What is the weather like in San Francisco?" }],
      tools: [WEATHER_TOOL_ANTHROPIC],
      tool_choice: { type: "any" },
    },
  },
  {
    name: "multi-turn with tool calls; consecutive tool results merge into one user turn, text after them",
    request: {
      messages: [
        { role: "user", content: "What's the weather in San Francisco and New York?" },
        {
          role: "assistant",
          content: "I'll check both.",
          tool_calls: [
            {
              id: "toolu_01A09q90qw90lq917835lq9",
              type: "function",
              function: { name: "get_weather", arguments: '{"location":"San Francisco, CA"}' },
            },
            {
              id: "toolu_02B",
              type: "function",
              function: { name: "get_weather", arguments: '{"location":"New York, NY"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "toolu_01A09q90qw90lq917835lq9", content: "15 degrees" },
        { role: "tool", tool_call_id: "toolu_02B", content: [{ type: "text", text: "20 degrees" }] },
        { role: "user", content: "Which is warmer?" },
      ],
    },
    expected: {
      model: MODEL,
      max_tokens: 4096,
      messages: [
        { role: "user", content: "What's the weather in San Francisco and New York?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "I'll check both." },
            {
              type: "tool_use",
              id: "toolu_01A09q90qw90lq917835lq9",
              name: "get_weather",
              input: { location: "San Francisco, CA" },
            },
            { type: "tool_use", id: "toolu_02B", name: "get_weather", input: { location: "New York, NY" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_01A09q90qw90lq917835lq9", content: "15 degrees" },
            { type: "tool_result", tool_use_id: "toolu_02B", content: "20 degrees" },
            { type: "text", text: "Which is warmer?" },
          ],
        },
      ],
      // No client tools: the history's, declared and not to be called (request_tool_history_test.ts).
      tools: [{
        name: "get_weather",
        description: HISTORY_TOOL_DESCRIPTION,
        input_schema: { type: "object" },
      }],
      tool_choice: { type: "none" },
    },
  },
  {
    name: "assistant with null content and only tool calls; empty arguments become {}",
    request: {
      messages: [
        { role: "user", content: "Ping" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "toolu_1", type: "function", function: { name: "ping", arguments: "" } }],
        },
        { role: "tool", tool_call_id: "toolu_1", content: "" },
      ],
    },
    expected: {
      model: MODEL,
      max_tokens: 4096,
      messages: [
        { role: "user", content: "Ping" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "ping", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1" }] },
      ],
      tools: [{ name: "ping", description: HISTORY_TOOL_DESCRIPTION, input_schema: { type: "object" } }],
      tool_choice: { type: "none" },
    },
  },
  {
    name: "consecutive user messages merge (Anthropic needs alternating turns)",
    request: {
      messages: [
        { role: "user", content: "First" },
        { role: "user", content: "Second" },
        { role: "assistant", content: "A" },
        { role: "assistant", content: "B" },
      ],
    },
    expected: {
      model: MODEL,
      max_tokens: 4096,
      messages: [
        { role: "user", content: [{ type: "text", text: "First" }, { type: "text", text: "Second" }] },
        { role: "assistant", content: [{ type: "text", text: "A" }, { type: "text", text: "B" }] },
      ],
    },
  },
  {
    // `image/jpg` (which Anthropic refuses) is sent as `image/jpeg`.
    name: "images: data URL → base64 source, https URL → url source (vision guide)",
    request: {
      messages: [{
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/4AAQSkZJRg==" } },
          { type: "image_url", image_url: { url: "data:image/jpg;base64,/9j/4AAQ" } },
          { type: "image_url", image_url: { url: "data:IMAGE/PNG;base64,iVBORw0KGgo=" } },
          { type: "image_url", image_url: { url: "https://upload.wikimedia.org/ant.jpg", detail: "high" } },
          { type: "text", text: "Describe these images." },
        ],
      }],
    },
    expected: {
      model: MODEL,
      max_tokens: 4096,
      messages: [{
        role: "user",
        content: [
          { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQSkZJRg==" } },
          { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
          { type: "image", source: { type: "url", url: "https://upload.wikimedia.org/ant.jpg" } },
          { type: "text", text: "Describe these images." },
        ],
      }],
    },
  },
];

for (const c of CASES) {
  Deno.test(`anthropic request: ${c.name}`, () => {
    assert.deepEqual(translate(c.request), c.expected);
  });
}

Deno.test("anthropic request: tool_choice and parallel_tool_calls table", () => {
  const table: [unknown, unknown, unknown][] = [
    ["auto", undefined, { type: "auto" }],
    ["required", undefined, { type: "any" }],
    ["none", undefined, { type: "none" }],
    [{ type: "function", function: { name: "get_weather" } }, undefined, {
      type: "tool",
      name: "get_weather",
    }],
    [undefined, undefined, undefined],
    [undefined, false, { type: "auto", disable_parallel_tool_use: true }],
    ["required", false, { type: "any", disable_parallel_tool_use: true }],
    [
      { type: "function", function: { name: "get_weather" } },
      false,
      { type: "tool", name: "get_weather", disable_parallel_tool_use: true },
    ],
    ["none", false, { type: "none" }],
    ["auto", true, { type: "auto" }],
  ];
  for (const [choice, parallel, expected] of table) {
    const request: JsonObject = { messages: [{ role: "user", content: "Hi" }], tools: [WEATHER_TOOL] };
    if (choice !== undefined) request.tool_choice = choice;
    if (parallel !== undefined) request.parallel_tool_calls = parallel;
    assert.deepEqual(translate(request).tool_choice, expected, JSON.stringify([choice, parallel]));
  }
  // A tool without parameters still gets the input_schema Anthropic requires.
  const bare = translate({
    messages: [{ role: "user", content: "Hi" }],
    tools: [{ type: "function", function: { name: "now" } }],
  });
  assert.deepEqual(bare.tools, [{ name: "now", input_schema: { type: "object", properties: {} } }]);
});

Deno.test("anthropic request: invalid tool-call arguments → 400 naming the parameter", () => {
  for (const args of ["{not json", "[1,2]", '"text"']) {
    assertGatewayError(
      () =>
        translate({
          messages: [
            { role: "user", content: "Hi" },
            {
              role: "assistant",
              content: null,
              tool_calls: [
                { id: "a", type: "function", function: { name: "f", arguments: "{}" } },
                { id: "b", type: "function", function: { name: "f", arguments: args } },
              ],
            },
          ],
        }),
      400,
      "messages[1].tool_calls[1].function.arguments",
    );
  }
});

Deno.test("anthropic request: content and tools Anthropic cannot take → 400 naming the parameter", () => {
  assertGatewayError(
    () =>
      translate({
        messages: [{
          role: "user",
          content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }],
        }],
      }),
    400,
    "messages[0].content[0].type",
    "unsupported_parameter",
  );
  assertGatewayError(
    () =>
      translate({
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "ftp://x" } }] }],
      }),
    400,
    "messages[0].content[0].image_url.url",
  );
  assertGatewayError(
    () => translate({ messages: [{ role: "function", name: "f", content: "x" }] }),
    400,
    "messages[0].role",
  );
  assertGatewayError(
    () => translate({ messages: [{ role: "user", content: "Hi" }], tools: [{ type: "custom", custom: {} }] }),
    400,
    "tools[0].type",
  );
  assertGatewayError(
    () =>
      translate({
        messages: [{ role: "user", content: "Hi" }],
        tools: [WEATHER_TOOL],
        tool_choice: { type: "allowed_tools", allowed_tools: {} },
      }),
    400,
    "tool_choice",
  );
});

Deno.test("anthropic request: unsupported parameters → 400 by default, left out with drop", () => {
  const unsupported: JsonObject = {
    n: 2,
    logprobs: true,
    top_logprobs: 3,
    presence_penalty: 0.5,
    frequency_penalty: -1,
    logit_bias: { "50256": -100 },
    seed: 42,
    response_format: { type: "grammar", grammar: "root ::= x" },
    audio: { voice: "alloy", format: "mp3" },
    modalities: ["text", "audio"],
    reasoning_effort: "xhigh",
    some_future_param: true,
  };
  const base = { messages: [{ role: "user", content: "Hi" }] };
  for (const [param, value] of Object.entries(unsupported)) {
    assertGatewayError(() => translate({ ...base, [param]: value }), 400, param, "unsupported_parameter");
    const dropped = translate({ ...base, [param]: value }, { ...CONFIG, unsupported_params: "drop" });
    assert.deepEqual(dropped, {
      model: MODEL,
      max_tokens: 4096,
      messages: [{ role: "user", content: "Hi" }],
    });
  }
  // Harmless values of the same parameters are accepted and not sent.
  assert.deepEqual(
    translate({
      ...base,
      n: 1,
      logprobs: false,
      top_logprobs: 0,
      frequency_penalty: 0,
      logit_bias: {},
      seed: null,
    }),
    { model: MODEL, max_tokens: 4096, messages: [{ role: "user", content: "Hi" }] },
  );
});
