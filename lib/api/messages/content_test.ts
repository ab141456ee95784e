/** A Messages request's content blocks in the chat form, as the request parser reads them (content.ts). */
import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { hasPlaceholderName } from "../../openai/placeholder_filenames.ts";
import { parse, refused } from "./parse_test_helpers.ts";

Deno.test("messages request: a document's context reaches a translated target's model, before the document", () => {
  // Anthropic: a document's title and context are passed to the model (not cited from).
  const doc = (context: unknown, title?: string) => ({
    type: "document",
    source: { type: "text", media_type: "text/plain", data: "The grass is green." },
    context,
    ...(title === undefined ? {} : { title }),
  });
  const file = (filename: string) => ({
    type: "file",
    file: { filename, file_data: `data:text/plain;base64,${btoa("The grass is green.")}` },
  });
  const parsed = parse({
    messages: [
      { role: "user", content: [doc("Answer in French.", "Facts"), { type: "text", text: "Colour?" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "read", input: {} }] },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "t1", content: [doc("From the wiki.")] }],
      },
    ],
  });
  const [user, , , followUp] = parsed.chat.messages;
  assert.deepEqual(user.content, [
    { type: "text", text: "Context of the document that follows (Facts): Answer in French." },
    file("Facts"),
    { type: "text", text: "Colour?" },
  ]);
  assert.deepEqual((followUp.content as unknown[]).slice(1), [
    { type: "text", text: "Context of the document that follows: From the wiki." },
    file("document"),
  ]);
  assert.deepEqual(parsed.tolerance.dropped, []);
  const plain = parse({ messages: [{ role: "user", content: [doc(null, "Facts")] }] });
  assert.deepEqual(plain.chat.messages[0].content, [file("Facts")]);
  refused({ messages: [{ role: "user", content: [doc(7)] }] }, /^messages\.0\.content\.0\.context: /);
});

Deno.test("messages request: a document's title is its file's name, the client's; an untitled one's name is the gateway's", () => {
  const doc = (title?: string) => ({
    type: "document",
    source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" },
    ...(title === undefined ? {} : { title }),
  });
  const parsed = parse({ messages: [{ role: "user", content: [doc("document"), doc()] }] });
  const files = (parsed.chat.messages[0].content as JsonObject[]).map((part) => part.file as JsonObject);
  assert.deepEqual(files.map((file) => [file.filename, hasPlaceholderName(file)]), [
    ["document", false],
    ["document", true],
  ]);
});

Deno.test("messages request: an assistant turn's thinking text goes back as its reasoning_content", () => {
  const call = (id: string) => ({ type: "tool_use", id, name: "write", input: { path: "a" } });
  const result = (id: string) => ({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: id, content: "ok" }],
  });
  const parsed = parse({
    messages: [
      { role: "user", content: "Write it." },
      // As the gateway showed a chat upstream's reasoning (no Claude signature), and as Claude signs its own.
      {
        role: "assistant",
        content: [{ type: "thinking", thinking: "Call the tool.", signature: "" }, call("t1")],
      },
      result("t1"),
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "It worked.", signature: "EqQBsigned" },
          { type: "text", text: "Next." },
          { type: "thinking", thinking: "Once more.", signature: "EqQBsigned2" },
          call("t2"),
        ],
      },
      result("t2"),
      // Encrypted thinking, and thinking whose text Claude left out (`display: "omitted"`): nothing to read.
      {
        role: "assistant",
        content: [
          { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" },
          { type: "thinking", thinking: "", signature: "EqQBsigned3" },
          call("t3"),
        ],
      },
      result("t3"),
      // Thinking alone gives a chat target no turn.
      { role: "assistant", content: [{ type: "thinking", thinking: "Hmm.", signature: "" }] },
      { role: "user", content: "Go on." },
    ],
    tools: [{ name: "write", input_schema: { type: "object" } }],
  });
  const assistants = parsed.chat.messages.filter((m) => m.role === "assistant");
  assert.deepEqual(assistants.map((m) => m.reasoning_content), [
    "Call the tool.",
    "It worked.\n\nOnce more.",
    undefined,
  ]);
  assert.equal(assistants[1].content, "Next.");
  // No block reaches a translated target as a block: each is counted for `x-gateway-dropped-thinking`.
  assert.equal(parsed.droppedThinking, 6);
});
