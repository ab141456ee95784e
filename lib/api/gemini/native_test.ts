/**
 * The native Gemini path's reading of `usageMetadata`: the same answer is recorded and priced the same as on the
 * translated path (a chat client of a Gemini target), whichever API the client spoke.
 */
import assert from "node:assert/strict";
import { answerSaid, answerTexts, nativeGeminiBody, nativeUsage, pushAnswerParts } from "./native.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";
import type { ResolvedContentRule } from "../../config/types.ts";
import type { JsonObject } from "../../openai/types.ts";
import { costOfUsage, tokenClassesOf } from "../../pricing/cost.ts";
import { usageFrom } from "../../providers/gemini/response.ts";

const PRICE = { input: 1_000_000, output: 10_000_000, cached_input: 100_000 };

Deno.test("gemini native usage: tool-use prompt tokens are input, as on the translated path", () => {
  const metadata = {
    promptTokenCount: 1000,
    cachedContentTokenCount: 600,
    toolUsePromptTokenCount: 500,
    candidatesTokenCount: 150,
    thoughtsTokenCount: 50,
    totalTokenCount: 1700,
  };
  const native = nativeUsage(metadata);
  assert.equal(native?.prompt, 1500, "promptTokenCount + toolUsePromptTokenCount");
  assert.equal(native?.completion, 200);
  const translated = usageFrom(metadata)!;
  const classes = tokenClassesOf(translated.prompt_tokens, translated.completion_tokens, translated);
  assert.deepEqual(costOfUsage(PRICE, native!), costOfUsage(PRICE, classes));
  assert.equal(costOfUsage(PRICE, native!).input, 900, "900 uncached input tokens at $1");
});

Deno.test("gemini native usage: a count that is not a count makes the usage untrusted (the gateway counts)", () => {
  const fields = [
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "toolUsePromptTokenCount",
    "cachedContentTokenCount",
  ];
  for (const bad of [-5000, 2.5, 1e20, "100"]) {
    for (const field of fields) {
      assert.equal(
        nativeUsage({ promptTokenCount: 10, candidatesTokenCount: 5, [field]: bad }),
        undefined,
        field,
      );
    }
  }
  assert.deepEqual(nativeUsage({ promptTokenCount: 10 }), { prompt: 10, completion: 0 });
});

const SSN = {
  name: "ssn",
  action: "redact",
  regex: /\d{3}-\d{2}-\d{4}/,
  replacement: "[SSN]",
  message: null,
} as unknown as ResolvedContentRule;

Deno.test("gemini native redaction: texts, thoughts, plain-text inlineData, function responses, on a copy", () => {
  const client: JsonObject = {
    systemInstruction: {
      parts: [{ text: "111-22-3333" }, { inlineData: { mimeType: "text/plain", data: btoa("111-22-3333") } }],
    },
    contents: [
      {
        role: "model",
        parts: [{ text: "111-22-3333", thought: true }, {
          functionCall: { name: "f", args: { s: "111-22-3333" } },
        }],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { name: "f", response: { ssn: "111-22-3333" } } },
          { inlineData: { mimeType: "image/png", data: btoa("111-22-3333") } },
        ],
      },
    ],
  };
  const before = structuredClone(client);
  const out = nativeGeminiBody(client, { model: "m", messages: [] }, [SSN]);
  assert.deepEqual(client, before, "the client's body is not changed");
  const system = (out.systemInstruction as JsonObject).parts as JsonObject[];
  assert.equal(system[0].text, "[SSN]");
  assert.equal(atob((system[1].inlineData as JsonObject).data as string), "[SSN]");
  const [model, user] = (out.contents as JsonObject[]).map((c) => c.parts as JsonObject[]);
  assert.equal(model[0].text, "[SSN]");
  assert.deepEqual(
    model[1].functionCall,
    { name: "f", args: { s: "111-22-3333" } },
    "call arguments are not judged",
  );
  assert.deepEqual(user[0].functionResponse, { name: "f", response: { ssn: "[SSN]" } });
  assert.equal(
    atob((user[1].inlineData as JsonObject).data as string),
    "111-22-3333",
    "an image is not text",
  );
});

Deno.test("gemini native redaction: a function response's plain-text media, as the chat form reads them", () => {
  const out = nativeGeminiBody(
    {
      contents: [{
        role: "user",
        parts: [{
          functionResponse: {
            name: "read_file",
            response: { output: "1 file" },
            parts: [
              { inlineData: { mimeType: "text/plain", data: btoa("111-22-3333") } },
              { inlineData: { mimeType: "image/png", data: btoa("111-22-3333") } },
            ],
          },
        }],
      }],
    },
    { model: "m", messages: [] },
    [SSN],
  );
  const media = ((((out.contents as JsonObject[])[0].parts as JsonObject[])[0].functionResponse as JsonObject)
    .parts as JsonObject[]).map((part) => atob((part.inlineData as JsonObject).data as string));
  assert.deepEqual(media, ["[SSN]", "111-22-3333"]);
});

Deno.test("gemini native texts: thoughts counted as any text, captured apart from the answer, whole or streamed alike", () => {
  const part = (p: JsonObject) => ({ candidates: [{ content: { role: "model", parts: [p] }, index: 0 }] });
  const chunks = [
    part({ text: "Planning.", thought: true }),
    part({ text: "Hello" }),
    part({ functionCall: { name: "f", args: { a: 1 } } }),
  ];
  const whole = {
    candidates: [{ content: { role: "model", parts: chunks.map((c) => c.candidates[0].content.parts[0]) } }],
  };
  assert.deepEqual(answerTexts(whole), ["Planning.", "Hello", '{"a":1}']);
  assert.deepEqual(answerSaid(whole), { text: ["Hello", '{"a":1}'], reasoning: ["Planning."] });
  const streamed = new StreamTexts();
  for (const chunk of chunks) pushAnswerParts(chunk, streamed);
  assert.deepEqual(streamed.said(), answerSaid(whole));
});
