/** The chat form's prompt-caching markers in the Anthropic request (`./cache_control.ts`, `./cache_dropped.ts`). */
import assert from "node:assert/strict";
import { translate } from "./request_test_helpers.ts";
import { anthropicCacheDropped } from "./cache_dropped.ts";
import type { JsonObject } from "../../openai/types.ts";

const EPHEMERAL = { type: "ephemeral" };
const PNG = "data:image/png;base64,iVBORw0KGgo=";

Deno.test("anthropic cache_control: a request without markers is translated as before", () => {
  const body = translate({
    messages: [
      { role: "system", content: "Be brief." },
      { role: "developer", content: [{ type: "text", text: "In French." }] },
      { role: "user", content: "Hi" },
    ],
  });
  assert.equal(body.system, "Be brief.\nIn French.");
  assert.deepEqual(body.messages, [{ role: "user", content: "Hi" }]);
});

Deno.test("anthropic cache_control: part markers stay on their blocks, message markers go on the message's last block", () => {
  const messages: JsonObject[] = [
    {
      role: "system",
      content: [{ type: "text", text: "One." }, { type: "text", text: "Two." }],
      cache_control: EPHEMERAL,
    },
    { role: "system", content: "Three." },
    {
      role: "user",
      content: [
        { type: "image_url", image_url: { url: PNG }, cache_control: { type: "ephemeral", ttl: "5m" } },
        { type: "text", text: "What is this?" },
      ],
    },
    {
      role: "assistant",
      content: "Let me look.",
      tool_calls: [{ id: "t1", type: "function", function: { name: "zoom", arguments: "{}" } }],
      cache_control: EPHEMERAL,
    },
    {
      role: "tool",
      tool_call_id: "t1",
      content: [{ type: "text", text: "A cat.", cache_control: EPHEMERAL }],
    },
  ];
  const body = translate({ messages });
  assert.deepEqual(body.system, [
    { type: "text", text: "One." },
    { type: "text", text: "Two.", cache_control: EPHEMERAL },
    { type: "text", text: "Three." },
  ]);
  assert.deepEqual(body.messages, [
    {
      role: "user",
      content: [
        {
          type: "image",
          source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" },
          cache_control: { type: "ephemeral", ttl: "5m" },
        },
        { type: "text", text: "What is this?" },
      ],
    },
    {
      role: "assistant",
      content: [
        { type: "text", text: "Let me look." },
        { type: "tool_use", id: "t1", name: "zoom", input: {}, cache_control: EPHEMERAL },
      ],
    },
    // The tool result's own content carries no marker: it ends the cached prefix at the result.
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t1", content: "A cat.", cache_control: EPHEMERAL }],
    },
  ]);
  assert.deepEqual(anthropicCacheDropped({ messages }), []);
});

Deno.test("anthropic cache_control: a marker with no block to carry it, or of another type, is named", () => {
  const messages: JsonObject[] = [
    {
      role: "user",
      content: [{ type: "text", text: "", cache_control: EPHEMERAL }, { type: "text", text: "Hi" }],
    },
    { role: "assistant", content: "", cache_control: EPHEMERAL },
    { role: "user", content: "Again", cache_control: { type: "persistent" } },
    { role: "system", content: "Be brief.", cache_control: "ephemeral" },
  ];
  const body = translate({ messages });
  assert.equal(body.system, "Be brief.");
  assert.doesNotMatch(JSON.stringify(body), /cache_control/);
  assert.deepEqual(anthropicCacheDropped({ messages }), [
    "messages[0].content[0].cache_control",
    "messages[1].cache_control",
    "messages[2].cache_control",
    "messages[3].cache_control",
  ]);
});

Deno.test("anthropic cache_control: the client's other fields pass; past four, the ones in the middle are left out", () => {
  const scoped = { type: "ephemeral", scope: "global" };
  const messages: JsonObject[] = [
    { role: "system", content: "S1", cache_control: EPHEMERAL },
    { role: "system", content: "S2", cache_control: EPHEMERAL },
    { role: "system", content: "S3", cache_control: EPHEMERAL },
    { role: "user", content: "U1", cache_control: EPHEMERAL },
    { role: "assistant", content: "A1", cache_control: scoped },
  ];
  const body = translate({ messages });
  assert.deepEqual(body.system, [
    { type: "text", text: "S1", cache_control: EPHEMERAL },
    { type: "text", text: "S2", cache_control: EPHEMERAL },
    { type: "text", text: "S3" },
  ]);
  assert.deepEqual(body.messages, [
    { role: "user", content: [{ type: "text", text: "U1", cache_control: EPHEMERAL }] },
    { role: "assistant", content: [{ type: "text", text: "A1", cache_control: scoped }] },
  ]);
  assert.deepEqual(anthropicCacheDropped({ messages }), ["messages[2].cache_control"]);
});

/** opencode's agent step through @ai-sdk/openai-compatible: the assistant turn's marker is on its tool call. */
const TOOL_STEP: JsonObject[] = [
  { role: "user", content: "Read a.ts" },
  {
    role: "assistant",
    content: "",
    tool_calls: [{
      id: "c1",
      type: "function",
      function: { name: "read", arguments: "{}" },
      cache_control: EPHEMERAL,
    }],
  },
  { role: "tool", tool_call_id: "c1", content: "export const a = 1;", cache_control: EPHEMERAL },
];

Deno.test("anthropic cache_control: a tool call's marker is sent on its tool_use block", () => {
  const body = translate({ messages: TOOL_STEP });
  const turns = body.messages as { content: JsonObject[] }[];
  assert.deepEqual(turns[1].content, [
    { type: "tool_use", id: "c1", name: "read", input: {}, cache_control: EPHEMERAL },
  ]);
  assert.deepEqual(anthropicCacheDropped({ messages: TOOL_STEP }), []);
});

Deno.test("anthropic cache_control: tool call markers count toward the four, and the ones cut are named", () => {
  const messages: JsonObject[] = [
    { role: "system", content: "S.", cache_control: EPHEMERAL },
    { role: "user", content: "U.", cache_control: EPHEMERAL },
    ...TOOL_STEP.slice(1),
    { role: "user", content: "More.", cache_control: EPHEMERAL },
  ];
  const body = translate({ messages });
  const turns = body.messages as { content: JsonObject[] | string }[];
  assert.equal((turns[1].content as JsonObject[])[0].cache_control, undefined);
  assert.deepEqual(anthropicCacheDropped({ messages }), ["messages[2].tool_calls[0].cache_control"]);
});

/** A tool declaration marked as LiteLLM takes it, and nanobot sends it: on the last tool. */
const MARKED_TOOLS: JsonObject[] = [
  { type: "function", function: { name: "read", parameters: { type: "object" } } },
  { type: "function", function: { name: "write", parameters: { type: "object" } }, cache_control: EPHEMERAL },
];

Deno.test("anthropic cache_control: a tool definition's marker is sent on that tool", () => {
  const request = { messages: [{ role: "user", content: "Hi" }], tools: MARKED_TOOLS };
  const body = translate(request);
  assert.deepEqual(body.tools, [
    { name: "read", input_schema: { type: "object" } },
    { name: "write", input_schema: { type: "object" }, cache_control: EPHEMERAL },
  ]);
  assert.deepEqual(anthropicCacheDropped(request), []);
});

Deno.test("anthropic cache_control: tool markers come first in the four (tools, system, messages), and are named when cut", () => {
  const tools = MARKED_TOOLS.map((t) => ({ ...t, cache_control: { type: "ephemeral", ttl: "5m" } }));
  const messages: JsonObject[] = [
    { role: "user", content: "U1", cache_control: EPHEMERAL },
    { role: "system", content: "S.", cache_control: { type: "ephemeral", ttl: "1h" } },
    { role: "assistant", content: "A1", cache_control: EPHEMERAL },
    { role: "user", content: "U2", cache_control: EPHEMERAL },
  ];
  const body = translate({ messages, tools });
  // Six markers: the tools' two are the first two, so the system's and the first user turn's are cut.
  assert.deepEqual((body.tools as JsonObject[]).map((t) => t.cache_control), [
    { type: "ephemeral", ttl: "5m" },
    { type: "ephemeral", ttl: "5m" },
  ]);
  assert.equal(body.system, "S.");
  assert.deepEqual(body.messages, [
    { role: "user", content: "U1" },
    { role: "assistant", content: [{ type: "text", text: "A1", cache_control: EPHEMERAL }] },
    { role: "user", content: [{ type: "text", text: "U2", cache_control: EPHEMERAL }] },
  ]);
  assert.deepEqual(anthropicCacheDropped({ messages, tools }), [
    "messages[0].cache_control",
    "messages[1].cache_control",
  ]);
  // A 1h tool marker after a 5m one is sent without its ttl, and named.
  const hour = [tools[0], { ...tools[1], cache_control: { type: "ephemeral", ttl: "1h" } }];
  const one = { messages: [{ role: "user", content: "Hi" }], tools: hour };
  assert.deepEqual((translate(one).tools as JsonObject[])[1].cache_control, EPHEMERAL);
  assert.deepEqual(anthropicCacheDropped(one), ["tools[1].cache_control.ttl"]);
});
