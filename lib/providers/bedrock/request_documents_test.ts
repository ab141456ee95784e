/**
 * A chat `file` part to Converse: an inline file of a type Converse reads goes as a `document` block (DocumentBlock
 * in the Converse API reference) named as Bedrock takes names, uniquely over the request, with a text block
 * beside it where its turn has none, as the Anthropic translation sends the same part as a `document`; a file by
 * id, or of a type Converse does not read, is still a 400 naming the part.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { type ConverseMessage, toConverseRequest } from "./request.ts";
import { documentName, DocumentNames } from "./documents.ts";
import { req, TOOL_USE_ID } from "./request_test_helpers.ts";

const PDF = "data:application/pdf;base64,JVBERi0xLjQ=";
const file = (file_data: string, filename?: string) => ({
  type: "file",
  file: filename === undefined ? { file_data } : { filename, file_data },
});

Deno.test("bedrock request: files → document blocks of their format, named as Bedrock takes names", () => {
  const body = toConverseRequest(req({
    messages: [{
      role: "user",
      content: [
        file(PDF, "Q3 report_final.pdf"),
        // The masker writes a plain-text document back with its charset (lib/policy/text_slots.ts).
        file("data:text/plain;charset=utf-8;base64,Y2Fmw6kgYXQgbm9vbg==", "notes.txt"),
        file("data:text/csv;base64,YSxiCjEsMg==", "data.csv"),
        file("data:text/markdown;base64,IyBUaXRsZQ==", "README.md"),
        file("data:text/html;base64,PHA+aGk8L3A+", "page.html"),
        file("data:application/msword;base64,0M8R4A==", "old.doc"),
        file(
          "data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEsDBA==",
          "a.docx",
        ),
        file("data:application/vnd.ms-excel;base64,0M8R4A==", "sheet.xls"),
        file(
          "data:application/vnd.openxmlformats-officedocument.spreadsheetml.sheet;base64,UEsDBA==",
          "b.xlsx",
        ),
        { type: "text", text: "Summarize." },
      ],
    }],
  }));
  assert.deepEqual(body.messages, [{
    role: "user",
    content: [
      { document: { format: "pdf", name: "Q3 report final", source: { bytes: "JVBERi0xLjQ=" } } },
      { document: { format: "txt", name: "notes", source: { bytes: "Y2Fmw6kgYXQgbm9vbg==" } } },
      { document: { format: "csv", name: "data", source: { bytes: "YSxiCjEsMg==" } } },
      { document: { format: "md", name: "README", source: { bytes: "IyBUaXRsZQ==" } } },
      { document: { format: "html", name: "page", source: { bytes: "PHA+aGk8L3A+" } } },
      { document: { format: "doc", name: "old", source: { bytes: "0M8R4A==" } } },
      { document: { format: "docx", name: "a", source: { bytes: "UEsDBA==" } } },
      { document: { format: "xls", name: "sheet", source: { bytes: "0M8R4A==" } } },
      { document: { format: "xlsx", name: "b", source: { bytes: "UEsDBA==" } } },
      { text: "Summarize." },
    ],
  }]);
});

Deno.test("bedrock request: document names are unique over the request, and a turn of files alone gets text", () => {
  const body = toConverseRequest(req({
    messages: [
      { role: "user", content: [file(PDF, "report.pdf"), file(PDF)] },
      { role: "assistant", content: "Read them." },
      {
        role: "user",
        content: [file(PDF, "REPORT.docx.pdf"), file(PDF, "Report.pdf"), file(PDF, "文書.pdf")],
      },
    ],
  }));
  const names = (body.messages as ConverseMessage[]).flatMap((turn) =>
    turn.content.map((block) => (block.document as { name?: string } | undefined)?.name ?? block.text)
  );
  assert.deepEqual(names, [
    ".",
    "report",
    "document",
    "Read them.",
    ".",
    "REPORT docx",
    "Report (2)",
    "document (2)",
  ]);
});

Deno.test("bedrock request: a file beside tool results gets text after them, where Converse wants results first", () => {
  const body = toConverseRequest(req({
    messages: [
      { role: "user", content: "Read it." },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: TOOL_USE_ID, type: "function", function: { name: "read", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: TOOL_USE_ID, content: "Attached below." },
      // How the Messages API sends a tool result's documents: a user message after it.
      { role: "user", content: [file(PDF, "page.pdf")] },
    ],
  }));
  assert.deepEqual((body.messages as ConverseMessage[])[2].content, [
    { toolResult: { toolUseId: TOOL_USE_ID, content: [{ text: "Attached below." }] } },
    { text: "." },
    { document: { format: "pdf", name: "page", source: { bytes: "JVBERi0xLjQ=" } } },
  ]);
});

Deno.test("bedrock request: a document name keeps only what Bedrock takes, within 200 characters", () => {
  assert.equal(documentName("C:\\Users\\me\\Résumé — v2 (final) [draft].pdf"), "Resume v2 (final) [draft]");
  assert.equal(documentName("a\t\tb  c_d.e.txt"), "a b c d e");
  assert.equal(documentName(".pdf"), "document");
  assert.equal(documentName(undefined), "document");
  const long = documentName(`${"x".repeat(300)}.pdf`);
  assert.equal(long, "x".repeat(200));
  const names = new DocumentNames();
  names.next(long);
  assert.equal(names.next(long), `${"x".repeat(196)} (2)`);
  for (const name of [long, "Resume v2 (final) [draft]", "a b c d e"]) {
    assert.match(name, /^[A-Za-z0-9()[\]-]+(?: [A-Za-z0-9()[\]-]+)*$/);
  }
});

Deno.test("bedrock request: a file by id, of a type Converse does not read, or not base64 is refused", () => {
  const cases: [unknown, string, string | null][] = [
    [{ type: "file", file: { file_id: "file-abc" } }, "messages[0].content[0].file", "unsupported_parameter"],
    [file("https://example.com/a.pdf"), "messages[0].content[0].file", "unsupported_parameter"],
    [
      file("data:application/zip;base64,UEsDBA=="),
      "messages[0].content[0].file.file_data",
      "unsupported_file_type",
    ],
    [file("data:application/pdf;base64,***"), "messages[0].content[0].file.file_data", null],
    [file("data:application/pdf;base64,"), "messages[0].content[0].file.file_data", null],
  ];
  for (const [part, param, code] of cases) {
    assert.throws(
      () =>
        toConverseRequest(
          req({ messages: [{ role: "user", content: [part, { type: "text", text: "?" }] }] }),
        ),
      (e) => e instanceof GatewayError && e.status === 400 && e.param === param && e.code === code,
      JSON.stringify(part),
    );
  }
});
