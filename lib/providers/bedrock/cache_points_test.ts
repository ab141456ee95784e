/** The chat form's prompt-caching markers as Converse `cachePoint` blocks (`./cache_points.ts`, `./cache_dropped.ts`). */
import assert from "node:assert/strict";
import { toConverseRequest } from "./request.ts";
import { bedrockCacheDropped } from "./cache_dropped.ts";
import { req, TOOL_USE_ID, TOP_SONG_TOOL } from "./request_test_helpers.ts";
import type { ChatMessage } from "../../openai/types.ts";

const CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const NOVA = "amazon.nova-pro-v1:0";
const EPHEMERAL = { type: "ephemeral" };
const POINT = { cachePoint: { type: "default" } };

const MESSAGES: ChatMessage[] = [
  { role: "system", content: "Be brief.", cache_control: { type: "ephemeral", ttl: "1h" } },
  { role: "user", content: [{ type: "text", text: "Weather?", cache_control: EPHEMERAL }] },
  {
    role: "assistant",
    content: null,
    tool_calls: [{
      id: TOOL_USE_ID,
      type: "function",
      function: { name: "top_song", arguments: '{"sign":"WZPZ"}' },
    }],
  },
  { role: "tool", tool_call_id: TOOL_USE_ID, content: "Elemental Hotel", cache_control: EPHEMERAL },
  { role: "user", content: "Thanks.", cache_control: { type: "ephemeral", ttl: "5m", scope: "global" } },
];

Deno.test("bedrock cache points: Claude gets a cachePoint after each marked block, a tool result's after the result", () => {
  const body = toConverseRequest(req({ messages: MESSAGES }), CLAUDE);
  assert.deepEqual(body.system, [{ text: "Be brief." }, { cachePoint: { type: "default", ttl: "1h" } }]);
  assert.deepEqual(body.messages, [
    { role: "user", content: [{ text: "Weather?" }, POINT] },
    {
      role: "assistant",
      content: [{ toolUse: { toolUseId: TOOL_USE_ID, name: "top_song", input: { sign: "WZPZ" } } }],
    },
    {
      role: "user",
      content: [
        { toolResult: { toolUseId: TOOL_USE_ID, content: [{ text: "Elemental Hotel" }], status: "success" } },
        POINT,
        { text: "Thanks." },
        { cachePoint: { type: "default", ttl: "5m" } },
      ],
    },
  ]);
  // A cachePoint has no `scope`: named, the rest of that marker sent.
  assert.deepEqual(bedrockCacheDropped(CLAUDE, req({ messages: MESSAGES })), [
    "messages[4].cache_control.scope",
  ]);
});

Deno.test("bedrock cache points: another model gets none, and every marker is named", () => {
  const body = toConverseRequest(req({ messages: MESSAGES }), NOVA);
  assert.doesNotMatch(JSON.stringify(body), /cachePoint|cache_control/);
  assert.deepEqual(bedrockCacheDropped(NOVA, req({ messages: MESSAGES })), [
    "messages[0].cache_control",
    "messages[1].content[0].cache_control",
    "messages[3].cache_control",
    "messages[4].cache_control",
  ]);
});

Deno.test("bedrock cache points: past four, the first two and the last two", () => {
  const messages: ChatMessage[] = ["a", "b", "c", "d", "e", "f"].map((text, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: text,
    cache_control: EPHEMERAL,
  }));
  const body = toConverseRequest(req({ messages }), CLAUDE);
  assert.deepEqual(
    (body.messages as { content: unknown[] }[]).map((m) => m.content),
    [
      [{ text: "a" }, POINT],
      [{ text: "b" }, POINT],
      [{ text: "c" }],
      [{ text: "d" }],
      [{ text: "e" }, POINT],
      [
        { text: "f" },
        POINT,
      ],
    ],
  );
  assert.deepEqual(bedrockCacheDropped(CLAUDE, req({ messages })), [
    "messages[2].cache_control",
    "messages[3].cache_control",
  ]);
});

Deno.test("bedrock cache points: a tool call's marker becomes a cachePoint after its toolUse, or is named", () => {
  const messages: ChatMessage[] = [
    { role: "user", content: "Weather?" },
    {
      role: "assistant",
      content: "",
      tool_calls: [{
        id: TOOL_USE_ID,
        type: "function",
        function: { name: "top_song", arguments: "{}" },
        cache_control: EPHEMERAL,
      }],
    },
    { role: "tool", tool_call_id: TOOL_USE_ID, content: "Elemental Hotel" },
  ];
  const body = toConverseRequest(req({ messages }), CLAUDE);
  assert.deepEqual((body.messages as { content: unknown[] }[])[1].content, [
    { toolUse: { toolUseId: TOOL_USE_ID, name: "top_song", input: {} } },
    POINT,
  ]);
  assert.deepEqual(bedrockCacheDropped(CLAUDE, req({ messages })), []);
  assert.deepEqual(bedrockCacheDropped(NOVA, req({ messages })), ["messages[1].tool_calls[0].cache_control"]);
});

/** The tool list LiteLLM takes a marker on, and nanobot marks: the last tool, here with a one-hour ttl. */
const MARKED_TOOLS = [
  TOP_SONG_TOOL,
  {
    type: "function",
    function: { name: "weather", parameters: { type: "object" } },
    cache_control: { type: "ephemeral", ttl: "1h" },
  },
];

Deno.test("bedrock cache points: a tool definition's marker becomes a cachePoint after its toolSpec, first in the four", () => {
  const messages: ChatMessage[] = [
    { role: "system", content: "Be brief.", cache_control: EPHEMERAL },
    ...["a", "b", "c", "d"].map((text, i): ChatMessage => ({
      role: i % 2 === 0 ? "user" : "assistant",
      content: text,
      cache_control: EPHEMERAL,
    })),
  ];
  const request = req({ messages, tools: MARKED_TOOLS });
  const body = toConverseRequest(request, CLAUDE);
  const tools = (body.toolConfig as { tools: unknown[] }).tools;
  assert.deepEqual(tools.slice(1), [
    { toolSpec: { name: "weather", inputSchema: { json: { type: "object" } } } },
    { cachePoint: { type: "default", ttl: "1h" } },
  ]);
  // Six markers in Bedrock's order (tools, system, turns): the tool's and the system's, then the last two.
  assert.deepEqual(body.system, [{ text: "Be brief." }, POINT]);
  assert.deepEqual(bedrockCacheDropped(CLAUDE, request), [
    "messages[1].cache_control",
    "messages[2].cache_control",
  ]);
  assert.deepEqual(bedrockCacheDropped(NOVA, request), [
    ...messages.map((_, i) => `messages[${i}].cache_control`),
    "tools[1].cache_control",
  ]);
  assert.doesNotMatch(JSON.stringify(toConverseRequest(request, NOVA)), /cachePoint/);
});

Deno.test("bedrock cache points: a marked tool that is not sent (tool_choice none, no tool history) is named", () => {
  const request = req({
    messages: [{ role: "user", content: "Hi" }],
    tools: MARKED_TOOLS,
    tool_choice: "none",
  });
  assert.equal(toConverseRequest(request, CLAUDE).toolConfig, undefined);
  assert.deepEqual(bedrockCacheDropped(CLAUDE, request), ["tools[1].cache_control"]);
});
