/**
 * A chat `file` part to Anthropic: what a Messages document becomes in the chat form (a Messages request served
 * over it, its guardrails' doing, or a chat client's file) goes back to Claude as the document it was (PDF
 * support guide), rather than a 400 for the part's type; a file Claude takes no other way is still refused.
 */
import assert from "node:assert/strict";
import { assertGatewayError, MODEL, translate } from "./request_test_helpers.ts";

Deno.test("anthropic request: files: plain text → a text document, a PDF → a base64 document, the filename as its title", () => {
  const body = translate({
    messages: [{
      role: "user",
      content: [
        {
          type: "file",
          file: { filename: "notes.txt", file_data: "data:text/plain;base64,Y2Fmw6kgYXQgbm9vbg==" },
        },
        { type: "file", file: { file_data: "data:application/pdf;base64,JVBERi0xLjQ=" } },
        { type: "text", text: "Summarize." },
      ],
    }],
  });
  assert.equal(body.model, MODEL);
  assert.deepEqual(body.messages, [{
    role: "user",
    content: [
      {
        type: "document",
        source: { type: "text", media_type: "text/plain", data: "café at noon" },
        title: "notes.txt",
      },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0xLjQ=" } },
      { type: "text", text: "Summarize." },
    ],
  }]);
});

Deno.test("anthropic request: a file by another vendor's id, or of a type Claude does not read, is refused", () => {
  for (const file of [{ file_id: "file-abc" }, { file_data: "data:text/csv;base64,YSxi" }]) {
    assertGatewayError(
      () => translate({ messages: [{ role: "user", content: [{ type: "file", file }] }] }),
      400,
      "messages[0].content[0].file",
      "unsupported_parameter",
    );
  }
});
