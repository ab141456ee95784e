import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { hasPlaceholderName } from "../../openai/placeholder_filenames.ts";
import { isObject } from "../../openai/types.ts";
import { parseGeminiRequest } from "./request.ts";

const PNG = "iVBORw0KGgo=";
const ask = { role: "user", parts: [{ text: "Read shot.png" }] };
const call = {
  role: "model",
  parts: [{ functionCall: { id: "c1", name: "read_file", args: { path: "shot.png" } } }],
};

Deno.test("gemini request: a model turn's images, files and code execution are served by Gemini targets only", () => {
  const parts = [
    { inlineData: { mimeType: "image/png", data: PNG } },
    { fileData: { mimeType: "image/png", fileUri: "https://example.com/a.png" } },
    { executableCode: { language: "PYTHON", code: "print(6*7)" } },
    { codeExecutionResult: { outcome: "OUTCOME_OK", output: "42" } },
  ];
  parts.forEach((part, j) => {
    const { chat, tolerance } = parseGeminiRequest(
      { contents: [ask, { role: "model", parts: [{ text: "Here: " }, part] }, ask] },
      "alias",
      false,
    );
    assert.ok(tolerance.refusal instanceof GatewayError, JSON.stringify(part));
    assert.equal(tolerance.refusal.param, "contents[1].parts[1]");
    assert.match(
      tolerance.refusal.message,
      /'contents\[1\]\.parts\[1\]' is a part only Gemini targets serve/,
    );
    // The refusal is what a translated target would answer without; the chat form keeps the turn's text.
    assert.equal(chat.messages[1].content, "Here: ", `part ${j}`);
  });
  // A thought (an interim image too) is the model's own state, left out as before, refusing nothing.
  const thought = parseGeminiRequest(
    {
      contents: [ask, {
        role: "model",
        parts: [{ thought: true, inlineData: { mimeType: "image/png", data: PNG } }, { text: "Done." }],
      }, ask],
    },
    "alias",
    false,
  );
  assert.deepEqual(thought.tolerance, { refusal: null, native: [], dropped: [] });
  assert.equal(thought.chat.messages[1].content, "Done.");
});

Deno.test("gemini request: a function response's media follow the results, as a tool result's images do", () => {
  const { chat, tolerance, params } = parseGeminiRequest(
    {
      contents: [ask, call, {
        role: "user",
        parts: [{
          functionResponse: {
            id: "c1",
            name: "read_file",
            response: { output: "Binary content provided (1 item)." },
            parts: [
              { inlineData: { mimeType: "image/png", data: PNG } },
              { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
            ],
          },
        }, { text: "What is in it?" }],
      }],
    },
    "alias",
    false,
  );
  assert.deepEqual(tolerance, { refusal: null, native: [], dropped: [] });
  assert.deepEqual(chat.messages.slice(2), [
    { role: "tool", tool_call_id: "c1", content: '{"output":"Binary content provided (1 item)."}' },
    {
      role: "user",
      content: [
        { type: "text", text: "(returned by the tool)" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: "file", file: { filename: "file", file_data: "data:application/pdf;base64,JVBERi0=" } },
      ],
    },
    { role: "user", content: "What is in it?" },
  ]);
  assert.deepEqual(params.messages.slice(2), [
    "contents[2].parts[0].functionResponse",
    "contents[2]",
    "contents[2]",
  ]);
  // Gemini names no file: the chat form's name is the gateway's, which no rule judges.
  const media = chat.messages[3].content;
  const file = Array.isArray(media) ? media[2].file : undefined;
  assert.ok(isObject(file) && hasPlaceholderName(file));
  // A file by Google's URI only Google reads: the rule of a user turn's file.
  const google = parseGeminiRequest(
    {
      contents: [ask, call, {
        role: "user",
        parts: [{
          functionResponse: {
            name: "read_file",
            response: {},
            parts: [{ fileData: { mimeType: "image/png", fileUri: "gs://bucket/shot.png" } }],
          },
        }],
      }],
    },
    "alias",
    false,
  );
  assert.equal(google.tolerance.refusal?.param, "contents[2].parts[0].functionResponse.parts[0].fileData");
  assert.throws(
    () =>
      parseGeminiRequest(
        {
          contents: [ask, call, {
            parts: [{ functionResponse: { name: "read_file", parts: [{ inlineData: {} }] } }],
          }],
        },
        "alias",
        false,
      ),
    (e: unknown) =>
      e instanceof GatewayError &&
      e.param === "contents[2].parts[0].functionResponse.parts[0].inlineData.mimeType",
  );
});

Deno.test("gemini request: contents of parts only Gemini serves are a prompt; contents of empty parts are none", () => {
  const file = { fileData: { mimeType: "video/mp4", fileUri: "gs://bucket/clip.mp4" } };
  const { chat, tolerance } = parseGeminiRequest(
    { contents: [{ role: "user", parts: [file] }] },
    "alias",
    false,
  );
  assert.deepEqual(chat.messages, []);
  assert.equal(tolerance.refusal?.param, "contents[0].parts[0].fileData");
  // A model turn's thought alone: nothing a translated target could be sent, for Google to judge.
  const thought = parseGeminiRequest(
    { contents: [{ role: "model", parts: [{ thought: true, text: "Hmm." }] }] },
    "alias",
    false,
  );
  assert.equal(thought.tolerance.refusal?.param, "contents");
  for (const parts of [[], [{}], [{ text: null }]]) {
    assert.throws(
      () => parseGeminiRequest({ contents: [{ role: "user", parts }] }, "alias", false),
      (e: unknown) => e instanceof GatewayError && /must hold at least one content/.test(e.message),
      JSON.stringify(parts),
    );
  }
});
