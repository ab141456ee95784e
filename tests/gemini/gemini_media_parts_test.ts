/**
 * What the Gemini API's `generateContent` does with what a chat target's history cannot hold as sent, over real
 * sockets: a model turn's image (or code the `codeExecution` tool ran) goes to the alias's Gemini target, and is
 * Google's 400 naming the part when it has none, as a user turn's Gemini-only part is; a function response's
 * image (Gemini CLI's `read_file` of one) reaches a translated target after the tool's result.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { ANTHROPIC_OK, GEMINI_OK, json, withMixedVendors } from "../helpers/mixed_vendors.ts";

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

async function generate(gw: TestGateway, alias: string, contents: unknown[]) {
  const response = await fetch(`${gw.url}/v1beta/models/${alias}:generateContent`, {
    method: "POST",
    headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
    body: JSON.stringify({ contents, tools: [{ functionDeclarations: [{ name: "read_file" }] }] }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

const ask = { role: "user", parts: [{ text: "Draw a dot, then read shot.png" }] };
const call = { functionCall: { id: "c1", name: "read_file", args: { path: "shot.png" } } };

Deno.test("gemini parts: a model turn's image goes to a Gemini target, and is a 400 without one", async () => {
  await withMixedVendors(async (gw, up) => {
    const contents = [
      ask,
      { role: "model", parts: [{ inlineData: { mimeType: "image/png", data: PNG } }] },
      ask,
    ];
    up.next = json(GEMINI_OK);
    for (let i = 0; i < 4; i++) {
      const answer = await generate(gw, "chat-weighted-gemini", contents);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.headers.get("x-gateway-provider"), "gemini");
      assert.ok(up.requests.at(-1)!.body.includes(PNG));
    }
    const before = up.requests.length;
    const code = [ask, {
      role: "model",
      parts: [{ executableCode: { language: "PYTHON", code: "print(6*7)" } }, {
        codeExecutionResult: { outcome: "OUTCOME_OK", output: "42" },
      }],
    }, ask];
    for (const history of [contents, code]) {
      const refused = await generate(gw, "chat-translated", history);
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.status, "INVALID_ARGUMENT");
      assert.match(
        refused.body.error.message,
        /'contents\[1\]\.parts\[0\]' is a part only Gemini targets serve/,
      );
    }
    assert.equal(up.requests.length, before);
  });
});

Deno.test("gemini parts: a function response's image reaches a translated target after the result", async () => {
  await withMixedVendors(async (gw, up) => {
    up.next = json(ANTHROPIC_OK);
    const answer = await generate(gw, "chat-only-anthropic", [ask, { role: "model", parts: [call] }, {
      role: "user",
      parts: [{
        functionResponse: {
          id: "c1",
          name: "read_file",
          response: { output: "Binary content provided (1 item)." },
          parts: [{ inlineData: { mimeType: "image/png", data: PNG } }],
        },
      }],
    }]);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.headers.get("x-gateway-dropped"), null);
    const sent = JSON.parse(up.requests.at(-1)!.body);
    const last = sent.messages.at(-1);
    assert.equal(last.role, "user");
    assert.equal(last.content[0].type, "tool_result");
    assert.equal(last.content[0].tool_use_id, "c1");
    const image = last.content.find((block: { type: string }) => block.type === "image");
    assert.deepEqual(image?.source, { type: "base64", media_type: "image/png", data: PNG });
  });
});

Deno.test("gemini parts: a prompt of a Files API file alone reaches a Gemini target, and is a 400 without one", async () => {
  await withMixedVendors(async (gw, up) => {
    const file = {
      fileData: {
        mimeType: "application/pdf",
        fileUri: "https://generativelanguage.googleapis.com/v1beta/files/abc123",
      },
    };
    const body = {
      systemInstruction: { parts: [{ text: "Summarise the document." }] },
      contents: [{ role: "user", parts: [file] }],
    };
    up.stepFor = (request) => json(request.path.endsWith(":countTokens") ? { totalTokens: 259 } : GEMINI_OK);
    const call = (alias: string, method: string) =>
      fetch(`${gw.url}/v1beta/models/${alias}:${method}`, {
        method: "POST",
        headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const answer = await call("chat-mixed-gemini", "generateContent");
    assert.equal(answer.status, 200, await answer.clone().text());
    assert.equal(answer.headers.get("x-gateway-provider"), "gemini");
    assert.equal((await answer.json()).candidates[0].content.parts[0].text, "hi");
    assert.deepEqual(JSON.parse(up.requests.at(-1)!.body).contents, body.contents, "the file as sent");
    const count = await call("chat-mixed-gemini", "countTokens");
    assert.deepEqual([count.status, await count.json()], [200, { totalTokens: 259 }]);
    // Without a Gemini target, the refusal names the part it could not serve, not an empty prompt.
    const before = up.requests.length;
    const refused = await call("chat-translated", "generateContent");
    assert.equal(refused.status, 400);
    assert.match(
      (await refused.json()).error.message,
      /'contents\[0\]\.parts\[0\]\.fileData' is served only by Gemini/,
    );
    assert.equal(up.requests.length, before);
  });
});

Deno.test("gemini parts: an inline PDF reaches a Claude target as a document with no title the client never wrote", async () => {
  // The Gemini API names no file; the chat form calls it `file`, which Claude was shown as the document's title.
  await withMixedVendors(async (gw, up) => {
    up.next = json(ANTHROPIC_OK);
    const answer = await generate(gw, "chat-only-anthropic", [{
      role: "user",
      parts: [{ text: "Summarise this" }, {
        inlineData: { mimeType: "application/pdf", data: "JVBERi0xLjQK" },
      }],
    }]);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const sent = JSON.parse(up.requests.at(-1)!.body);
    const document = sent.messages[0].content.find((block: { type: string }) => block.type === "document");
    assert.deepEqual(document, {
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: "JVBERi0xLjQK" },
    });
  });
});
