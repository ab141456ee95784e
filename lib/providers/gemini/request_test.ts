/**
 * OpenAI request → Gemini request, table-driven. Expected bodies follow the request shapes in Gemini's
 * REST reference (https://ai.google.dev/api/generate-content) and its function-calling and
 * thought-signature guides.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { geminiParamRules, toGeminiRequest } from "./request.ts";
import { urlPart } from "./contents.ts";
import { toolCallIdFor } from "./types.ts";
import type { ChatRequest, JsonObject } from "../../openai/types.ts";
import { applyUnsupportedRules } from "../shared/unsupported_params.ts";

const req = (extra: Partial<ChatRequest> & JsonObject): ChatRequest => ({
  model: "alias",
  messages: [{ role: "user", content: "Hi" }],
  ...extra,
});

const WEATHER = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    },
  },
};

const CASES: { name: string; request: ChatRequest; expected: JsonObject }[] = [
  {
    name: "plain chat",
    request: req({}),
    expected: { contents: [{ role: "user", parts: [{ text: "Hi" }] }] },
  },
  {
    name: "system and developer messages become systemInstruction",
    request: req({
      messages: [
        { role: "system", content: "You are a cat." },
        { role: "developer", content: [{ type: "text", text: "Answer in French." }] },
        { role: "user", content: "Hello there" },
      ],
    }),
    expected: {
      contents: [{ role: "user", parts: [{ text: "Hello there" }] }],
      systemInstruction: { parts: [{ text: "You are a cat." }, { text: "Answer in French." }] },
    },
  },
  {
    name: "system and developer messages alone are the user's turn (Gemini refuses empty contents)",
    request: req({
      messages: [
        { role: "system", content: "Write a haiku about the sea." },
        { role: "developer", content: "In French." },
      ],
    }),
    expected: {
      contents: [{ role: "user", parts: [{ text: "Write a haiku about the sea." }, { text: "In French." }] }],
    },
  },
  {
    name: "multi-turn with assistant, consecutive user turns merged",
    request: req({
      messages: [
        { role: "user", content: "Hello" },
        { role: "assistant", content: "Great to meet you. What would you like to know?" },
        { role: "user", content: "I have two dogs in my house." },
        { role: "user", content: "How many paws are in my house?" },
      ],
    }),
    expected: {
      contents: [
        { role: "user", parts: [{ text: "Hello" }] },
        { role: "model", parts: [{ text: "Great to meet you. What would you like to know?" }] },
        {
          role: "user",
          parts: [{ text: "I have two dogs in my house." }, { text: "How many paws are in my house?" }],
        },
      ],
    },
  },
  {
    name: "tool calls and tool results (JSON object and plain text), signature restored from the id",
    request: req({
      messages: [
        { role: "user", content: "Weather in Paris and Rome?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: toolCallIdFor(
                "AY89a18iOcFus5wr5bW5xN6zZ4aUiCyhgmg6HE2YjtYDV/dwZ5oZlZHeTmiUKv34qq0=",
                () => "call_aaa",
              ),
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            },
            {
              id: "call_bbb",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Rome"}' },
            },
          ],
        },
        {
          role: "tool",
          tool_call_id: toolCallIdFor(
            "AY89a18iOcFus5wr5bW5xN6zZ4aUiCyhgmg6HE2YjtYDV/dwZ5oZlZHeTmiUKv34qq0=",
            () => "call_aaa",
          ),
          content: '{"temp":21}',
        },
        { role: "tool", tool_call_id: "call_bbb", content: "sunny, 25C" },
      ],
      tools: [WEATHER],
      tool_choice: "auto",
    }),
    expected: {
      contents: [
        { role: "user", parts: [{ text: "Weather in Paris and Rome?" }] },
        {
          role: "model",
          parts: [
            {
              functionCall: { name: "get_weather", args: { city: "Paris" } },
              thoughtSignature: "AY89a18iOcFus5wr5bW5xN6zZ4aUiCyhgmg6HE2YjtYDV/dwZ5oZlZHeTmiUKv34qq0=",
            },
            { functionCall: { name: "get_weather", args: { city: "Rome" } } },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "get_weather", response: { temp: 21 } } },
            { functionResponse: { name: "get_weather", response: { content: "sunny, 25C" } } },
          ],
        },
      ],
      tools: [{
        functionDeclarations: [{
          name: "get_weather",
          description: "Weather for a city",
          parametersJsonSchema: WEATHER.function.parameters,
        }],
      }],
      toolConfig: { functionCallingConfig: { mode: "AUTO" } },
    },
  },
  {
    name: "images: data URL → inlineData, http URL → fileData",
    request: req({
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "Caption these." },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          // Gemini refuses `image/jpg` ("Unsupported MIME type"): sent as `image/jpeg`.
          { type: "image_url", image_url: { url: "data:image/jpg;base64,/9j/4AAQ" } },
          { type: "image_url", image_url: { url: "https://example.com/cat.JPG?size=large", detail: "low" } },
          { type: "image_url", image_url: { url: "https://example.com/image" } },
        ],
      }],
    }),
    expected: {
      contents: [{
        role: "user",
        parts: [
          { text: "Caption these." },
          { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
          { inlineData: { mimeType: "image/jpeg", data: "/9j/4AAQ" } },
          { fileData: { fileUri: "https://example.com/cat.JPG?size=large", mimeType: "image/jpeg" } },
          { fileData: { fileUri: "https://example.com/image" } },
        ],
      }],
    },
  },
  {
    name: "generationConfig from sampling, length, stop, n, seed, json_schema",
    request: req({
      temperature: 0.7,
      top_p: 0.9,
      max_tokens: 100,
      max_completion_tokens: 50,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      seed: 42,
      n: 2,
      stop: "END",
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "x",
          strict: true,
          schema: { type: "object", properties: { a: { type: "string" } } },
        },
      },
      user: "ignored",
    }),
    expected: {
      contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      generationConfig: {
        temperature: 0.7,
        topP: 0.9,
        maxOutputTokens: 50,
        presencePenalty: 0.5,
        frequencyPenalty: -0.5,
        seed: 42,
        candidateCount: 2,
        stopSequences: ["END"],
        responseMimeType: "application/json",
        responseJsonSchema: { type: "object", properties: { a: { type: "string" } } },
      },
    },
  },
  {
    name: "json_object, required and named tool_choice",
    request: req({
      response_format: { type: "json_object" },
      tools: [WEATHER],
      tool_choice: { type: "function", function: { name: "get_weather" } },
    }),
    expected: {
      contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      generationConfig: { responseMimeType: "application/json" },
      tools: [{
        functionDeclarations: [{
          name: "get_weather",
          description: "Weather for a city",
          parametersJsonSchema: WEATHER.function.parameters,
        }],
      }],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } },
    },
  },
];

for (const c of CASES) {
  Deno.test(`gemini request: ${c.name}`, () => {
    assert.deepEqual(toGeminiRequest(c.request), c.expected);
  });
}

Deno.test("gemini request: a tool result's and a system prompt's text parts reach Gemini one per line", () => {
  const body = toGeminiRequest(req({
    messages: [
      { role: "system", content: [{ type: "text", text: "Be brief." }, { type: "text", text: "Be kind." }] },
      { role: "user", content: "Weather?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }],
      },
      {
        role: "tool",
        tool_call_id: "call_1",
        content: [{ type: "text", text: "r1" }, { type: "text", text: "r2" }],
      },
    ],
  }));
  assert.deepEqual(body.systemInstruction, { parts: [{ text: "Be brief.\nBe kind." }] });
  assert.deepEqual((body.contents as JsonObject[]).at(-1), {
    role: "user",
    parts: [{ functionResponse: { name: "get_weather", response: { content: "r1\nr2" } } }],
  });
});

Deno.test("gemini request: tool_choice required / none", () => {
  for (const [choice, mode] of [["required", "ANY"], ["none", "NONE"]]) {
    const body = toGeminiRequest(req({ tools: [WEATHER], tool_choice: choice }));
    assert.deepEqual(body.toolConfig, { functionCallingConfig: { mode } });
  }
});

function assert400(fn: () => unknown, param: string) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 400);
    assert.equal(err.param, param);
    return true;
  });
}

Deno.test("gemini request: what Gemini cannot express is a 400 naming the parameter", () => {
  assert400(
    () =>
      toGeminiRequest(req({
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "ftp://x/y.png" } }] }],
      })),
    "messages[0].content[0].image_url.url",
  );
  assert400(
    () => toGeminiRequest(req({ messages: [{ role: "tool", tool_call_id: "call_zzz", content: "x" }] })),
    "messages[0].tool_call_id",
  );
  assert400(
    () =>
      toGeminiRequest(req({
        messages: [{
          role: "assistant",
          tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{not json" } }],
        }],
      })),
    "messages[0].tool_calls[0].function.arguments",
  );
  assert400(() => toGeminiRequest(req({ tools: [{ type: "web_search" }] })), "tools[0].type");
  assert400(() => toGeminiRequest(req({ response_format: { type: "grammar" } })), "response_format.type");
  assert400(
    () => toGeminiRequest(req({ tool_choice: { type: "allowed_tools", allowed_tools: {} } })),
    "tool_choice",
  );
  assert400(() => urlPart("data:image/png,rawbytes", "p"), "p");
});

Deno.test("gemini request: unsupported OpenAI params → 400 by default, dropped when configured", () => {
  const cases: [JsonObject, boolean, string][] = [
    [{ logit_bias: { "50256": -100 } }, false, "logit_bias"],
    [{ logprobs: true }, false, "logprobs"],
    [{ top_logprobs: 3 }, false, "top_logprobs"],
    [{ n: 2 }, true, "n"],
    [{ parallel_tool_calls: false, tools: [WEATHER] }, false, "parallel_tool_calls"],
    [{ reasoning_effort: "minimal" }, false, "reasoning_effort"],
    [{ reasoning_effort: "xhigh" }, false, "reasoning_effort"],
  ];
  for (const [extra, stream, param] of cases) {
    const request = req(extra);
    assert400(() => applyUnsupportedRules(request, geminiParamRules(stream), "error"), param);
    const dropped = applyUnsupportedRules(request, geminiParamRules(stream), "drop");
    assert.equal(param in dropped, false);
  }
  // Values that are fine stay.
  const ok = req({ n: 2, logprobs: false, parallel_tool_calls: true, modalities: ["text"] });
  assert.equal(applyUnsupportedRules(ok, geminiParamRules(false), "error"), ok);
  // Values that change nothing stay too: no parallel calls to forbid without tools the model may call.
  for (const harmless of [{}, { tools: [] }, { tools: [WEATHER], tool_choice: "none" }]) {
    const request = req({ parallel_tool_calls: false, top_logprobs: 0, ...harmless });
    assert.equal(
      applyUnsupportedRules(request, geminiParamRules(false), "error"),
      request,
      JSON.stringify(harmless),
    );
  }
});

Deno.test("gemini request: reasoning_effort → thinkingConfig budget with thoughts included; none turns thinking off", () => {
  const table: [string, JsonObject][] = [
    ["none", { thinkingBudget: 0 }],
    ["low", { thinkingBudget: 1024, includeThoughts: true }],
    ["medium", { thinkingBudget: 8192, includeThoughts: true }],
    ["high", { thinkingBudget: 24576, includeThoughts: true }],
  ];
  for (const [effort, thinkingConfig] of table) {
    const request = req({ reasoning_effort: effort, max_completion_tokens: 30000 });
    assert.equal(applyUnsupportedRules(request, geminiParamRules(false), "error"), request);
    assert.deepEqual(
      toGeminiRequest(request).generationConfig,
      { maxOutputTokens: 30000, thinkingConfig },
      effort,
    );
  }
  assert.equal("generationConfig" in toGeminiRequest(req({})), false, "no effort, no thinkingConfig");
});
