/** The pure rewriting of a Messages request passed through natively, and of its answer. */
import assert from "node:assert/strict";
import type { ResolvedContentRule } from "../../config/types.ts";
import type { JsonObject } from "../../openai/types.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";
import {
  clientMessage,
  clientMessageEvent,
  eventText,
  messageSaid,
  messageTexts,
  nativeMessagesBody,
  pushEventText,
  readMessagesUsage,
  redactMessages,
  usageTokens,
} from "./native.ts";

const CLIENT: JsonObject = {
  model: "claude-alias",
  max_tokens: 8000,
  thinking: { type: "enabled", budget_tokens: 4000 },
  system: [{ type: "text", text: "Sys", cache_control: { type: "ephemeral" } }],
  messages: [{ role: "user", content: "Hi" }],
  stream: true,
};

Deno.test("messages native body: the target's model, everything else as sent", () => {
  const body = nativeMessagesBody(CLIENT, { model: "claude-sonnet-4-5", maxTokens: 8000 });
  assert.deepEqual(body, { ...CLIENT, model: "claude-sonnet-4-5" });
  assert.equal(CLIENT.model, "claude-alias", "the client's body is not changed");
  assert.deepEqual(nativeMessagesBody(CLIENT, { model: "m", maxTokens: null }).max_tokens, 8000);
});

Deno.test("messages native body: the token's ceiling lowers max_tokens, and a thinking budget with it", () => {
  const lowered = nativeMessagesBody(CLIENT, { model: "m", maxTokens: 3000 });
  assert.equal(lowered.max_tokens, 3000);
  assert.deepEqual(lowered.thinking, { type: "enabled", budget_tokens: 2999 });
  assert.deepEqual(CLIENT.thinking, { type: "enabled", budget_tokens: 4000 });
  const floor = nativeMessagesBody(CLIENT, { model: "m", maxTokens: 500 });
  assert.deepEqual(
    floor.thinking,
    { type: "enabled", budget_tokens: 1024 },
    "never below Anthropic's minimum",
  );
  const roomy = nativeMessagesBody(CLIENT, { model: "m", maxTokens: 6000 });
  assert.deepEqual(roomy.thinking, CLIENT.thinking, "a budget that still fits is kept");
  assert.equal(nativeMessagesBody(CLIENT, { model: "m", maxTokens: 9000 }).max_tokens, 8000, "never raised");
});

const rule = (regex: RegExp, replacement: string): ResolvedContentRule =>
  ({ name: "r", action: "redact", regex, replacement, message: null }) as unknown as ResolvedContentRule;

Deno.test("messages native redaction: system, string and text blocks, tool results; thinking untouched", () => {
  const body: JsonObject = {
    system: [{ type: "text", text: "mail a@b.co", cache_control: { type: "ephemeral" } }],
    messages: [
      { role: "user", content: "I am a@b.co" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "a@b.co again", signature: "sig" },
          { type: "tool_use", id: "t1", name: "f", input: { to: "a@b.co" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "t1", content: "sent to a@b.co" },
          { type: "tool_result", tool_use_id: "t2", content: [{ type: "text", text: "a@b.co" }] },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "a@b.co" } },
        ],
      },
    ],
  };
  const out = redactMessages(structuredClone(body), [rule(/[a-z]@[a-z.]+/, "[EMAIL]")]);
  const messages = out.messages as JsonObject[];
  assert.deepEqual(out.system, [{
    type: "text",
    text: "mail [EMAIL]",
    cache_control: { type: "ephemeral" },
  }]);
  assert.equal(messages[0].content, "I am [EMAIL]");
  assert.deepEqual(messages[1], (body.messages as JsonObject[])[1], "thinking (signed) and tool input kept");
  const results = messages[2].content as JsonObject[];
  assert.equal(results[0].content, "sent to [EMAIL]");
  assert.deepEqual(results[1].content, [{ type: "text", text: "[EMAIL]" }]);
  assert.equal((results[2].source as JsonObject).data, "a@b.co", "images are not text");
  const none = structuredClone(body);
  assert.deepEqual(
    redactMessages(none, [{ ...rule(/a/, "x"), action: "deny" }]),
    body,
    "deny rules do not redact",
  );
});

Deno.test("messages native redaction: documents' texts, in turns and tool results, on a copy", () => {
  const doc = (source: JsonObject) => ({ type: "document", source });
  const body: JsonObject = {
    messages: [{
      role: "user",
      content: [
        doc({ type: "text", media_type: "text/plain", data: "a@b.co" }),
        doc({ type: "base64", media_type: "text/plain", data: btoa("a@b.co") }),
        doc({ type: "base64", media_type: "application/pdf", data: btoa("a@b.co") }),
        doc({ type: "content", content: [{ type: "text", text: "a@b.co" }] }),
        { type: "tool_result", tool_use_id: "t", content: [doc({ type: "text", data: "a@b.co" })] },
      ],
    }],
  };
  const before = structuredClone(body);
  const out = redactMessages(body, [rule(/[a-z]@[a-z.]+/, "[EMAIL]")]);
  assert.deepEqual(body, before, "the client's body is not changed");
  const blocks = (out.messages as JsonObject[])[0].content as JsonObject[];
  const source = (i: number) => blocks[i].source as JsonObject;
  assert.equal(source(0).data, "[EMAIL]");
  assert.equal(atob(source(1).data as string), "[EMAIL]");
  assert.equal(atob(source(2).data as string), "a@b.co", "a PDF is not text");
  assert.deepEqual(source(3).content, [{ type: "text", text: "[EMAIL]" }]);
  assert.deepEqual(blocks[4].content, [doc({ type: "text", data: "[EMAIL]" })]);
});

const MESSAGE: JsonObject = {
  id: "msg_up_1",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content: [
    { type: "thinking", thinking: "Hmm", signature: "sig==" },
    { type: "text", text: "Hello" },
    { type: "tool_use", id: "toolu_1", name: "f", input: { a: 1 } },
  ],
  stop_reason: "tool_use",
  usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 3, cache_read_input_tokens: 100 },
};

Deno.test("messages native answer: the alias as model, the upstream's id and blocks as they are", () => {
  assert.deepEqual(clientMessage(MESSAGE, "my-alias"), { ...MESSAGE, model: "my-alias" });
  const start = clientMessageEvent({ type: "message_start", message: MESSAGE }, "my-alias");
  assert.equal((start.message as JsonObject).model, "my-alias");
  assert.equal((start.message as JsonObject).id, "msg_up_1");
  const delta = { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "s" } };
  assert.equal(clientMessageEvent(delta, "a"), delta, "other events are passed as they are");
});

Deno.test("messages native usage: cache counts in the prompt; message_delta counts laid over message_start's", () => {
  const usage = readMessagesUsage(MESSAGE.usage)!;
  assert.deepEqual(usage, {
    input: 10,
    output: 5,
    cacheCreation: 3,
    cacheCreation1h: 0,
    cacheRead: 100,
    webSearches: 0,
  });
  assert.deepEqual(usageTokens(usage), {
    prompt: 113,
    completion: 5,
    cachedRead: 100,
    cacheWrite5m: 3,
    cacheWrite1h: 0,
  });
  // `cache_creation` splits the writes by lifetime; the hour-long ones are priced as such.
  const split = readMessagesUsage({
    input_tokens: 10,
    output_tokens: 5,
    cache_creation_input_tokens: 1000,
    cache_creation: { ephemeral_5m_input_tokens: 400, ephemeral_1h_input_tokens: 600 },
  })!;
  assert.deepEqual(usageTokens(split), {
    prompt: 1010,
    completion: 5,
    cachedRead: 0,
    cacheWrite5m: 400,
    cacheWrite1h: 600,
  });
  assert.equal(
    readMessagesUsage({ output_tokens: 9 }, split)!.cacheCreation1h,
    600,
    "kept over a later delta",
  );
  const later = readMessagesUsage({ output_tokens: 42 }, usage)!;
  assert.deepEqual(later, { ...usage, output: 42 });
  assert.equal(readMessagesUsage({ output_tokens: 3 }), undefined, "no input count, no usage");
  assert.equal(readMessagesUsage({ input_tokens: -1, output_tokens: 3 }), undefined);
  assert.deepEqual(readMessagesUsage({ input_tokens: 1, output_tokens: 2 }), {
    input: 1,
    output: 2,
    cacheCreation: 0,
    cacheCreation1h: 0,
    cacheRead: 0,
    webSearches: 0,
  });
});

Deno.test("messages native usage: the web searches Anthropic ran, kept over later deltas and priced per search", () => {
  const start = readMessagesUsage({
    input_tokens: 10,
    output_tokens: 1,
    server_tool_use: { web_search_requests: 0, web_fetch_requests: 1 },
  })!;
  assert.equal(start.webSearches, 0);
  // message_delta's usage is cumulative: its count of searches replaces message_start's.
  const end = readMessagesUsage({ output_tokens: 80, server_tool_use: { web_search_requests: 3 } }, start)!;
  assert.equal(end.webSearches, 3);
  assert.equal(
    readMessagesUsage({ output_tokens: 90 }, end)!.webSearches,
    3,
    "kept when a delta leaves it out",
  );
  assert.deepEqual(usageTokens(end), {
    prompt: 10,
    completion: 80,
    cachedRead: 0,
    cacheWrite5m: 0,
    cacheWrite1h: 0,
    webSearches: 3,
  });
  // A count that is not one makes the usage untrusted, as any other count does.
  assert.equal(
    readMessagesUsage({ input_tokens: 1, output_tokens: 2, server_tool_use: { web_search_requests: -2 } }),
    undefined,
  );
});

Deno.test("messages native texts: what a message and its stream deltas add, for counting without usage", () => {
  assert.deepEqual(messageTexts(MESSAGE), ["Hmm", "Hello", '{"a":1}']);
  // For capture, the thinking apart from the answer, whole or streamed alike.
  assert.deepEqual(messageSaid(MESSAGE), { text: ["Hello", '{"a":1}'], reasoning: ["Hmm"] });
  const streamed = new StreamTexts();
  for (
    const d of [
      { type: "thinking_delta", thinking: "Hmm" },
      { type: "signature_delta", signature: "s" },
      { type: "text_delta", text: "Hello" },
      { type: "input_json_delta", partial_json: '{"a":1}' },
    ]
  ) pushEventText({ type: "content_block_delta", index: 0, delta: d }, streamed);
  assert.deepEqual(streamed.said(), messageSaid(MESSAGE));
  const delta = (d: JsonObject) => eventText({ type: "content_block_delta", index: 0, delta: d });
  assert.equal(delta({ type: "text_delta", text: "a" }), "a");
  assert.equal(delta({ type: "thinking_delta", thinking: "b" }), "b");
  assert.equal(delta({ type: "input_json_delta", partial_json: '{"' }), '{"');
  assert.equal(delta({ type: "signature_delta", signature: "s" }), undefined);
  assert.equal(eventText({ type: "ping" }), undefined);
});
