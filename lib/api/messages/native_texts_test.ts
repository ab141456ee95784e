import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { messagesTexts } from "./native_texts.ts";

const texts = (body: JsonObject) => messagesTexts(body).map(({ param, text }) => [param, text]);

Deno.test("messages native texts: each block's texts at its param, in turns, tool results and MCP tool results", () => {
  const searchResult = (title: string, text: string) => ({
    type: "search_result",
    source: "https://kb.example/1",
    title,
    content: [{ type: "text", text }],
    citations: { enabled: true },
  });
  const body: JsonObject = {
    system: [{ type: "text", text: "sys" }],
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "a" },
          {
            type: "document",
            source: { type: "text", media_type: "text/plain", data: "b" },
            title: "c",
            context: "d",
          },
          {
            type: "document",
            source: { type: "base64", media_type: "application/pdf", data: "Zg==" },
            title: "e",
          },
          searchResult("f", "g"),
          { type: "image", source: { type: "url", url: "https://x/y.png" } },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "no", signature: "sig" },
          { type: "tool_use", id: "t1", name: "search", input: { q: "no" } },
          { type: "mcp_tool_use", id: "m1", name: "n", server_name: "s", input: {} },
          {
            type: "mcp_tool_result",
            tool_use_id: "m1",
            is_error: false,
            content: [{ type: "text", text: "h" }],
          },
        ],
      },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "t1",
          content: [searchResult("i", "j"), { type: "text", text: "k" }],
        }],
      },
    ],
  };
  assert.deepEqual(texts(body), [
    ["system.0.text", "sys"],
    ["messages.0.content.0.text", "a"],
    ["messages.0.content.1.source.data", "b"],
    ["messages.0.content.1.title", "c"],
    ["messages.0.content.1.context", "d"],
    ["messages.0.content.2.title", "e"],
    ["messages.0.content.3.title", "f"],
    ["messages.0.content.3.content.0.text", "g"],
    ["messages.1.content.3.content.0.text", "h"],
    ["messages.2.content.0.content.0.title", "i"],
    ["messages.2.content.0.content.0.content.0.text", "j"],
    ["messages.2.content.0.content.1.text", "k"],
  ]);
});

Deno.test("messages native texts: a search result's and a document's title written back where they are", () => {
  const body: JsonObject = {
    messages: [{
      role: "user",
      content: [
        { type: "search_result", source: "s", title: "x", content: [{ type: "text", text: "x" }] },
        { type: "document", source: { type: "content", content: "x" }, title: "x", context: "x" },
      ],
    }],
  };
  for (const slot of messagesTexts(body)) slot.write(`${slot.param}!`);
  assert.deepEqual(body.messages, [{
    role: "user",
    content: [
      {
        type: "search_result",
        source: "s",
        title: "messages.0.content.0.title!",
        content: [{ type: "text", text: "messages.0.content.0.content.0.text!" }],
      },
      {
        type: "document",
        source: { type: "content", content: "messages.0.content.1.source.content!" },
        title: "messages.0.content.1.title!",
        context: "messages.0.content.1.context!",
      },
    ],
  }]);
});
