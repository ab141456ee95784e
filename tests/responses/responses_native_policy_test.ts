/**
 * Content rules on a Responses request passed through to a native target: the upstream gets the client's body,
 * so every text the rules judge in the chat form is redacted there too (tool results, an assistant's history),
 * and what only a native target reads (a reasoning item's summary, a plain-text file) is judged and redacted.
 */
import assert from "node:assert/strict";
import { NATIVE_KEY, startFakeNativeResponses } from "../helpers/fake_openai_responses.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { decodeUtf8Base64, encodeUtf8Base64 } from "../../lib/encoding/utf8_base64.ts";

const SSN = /\d{3}-\d{2}-\d{4}/g;
const textFile = (text: string) => `data:text/plain;base64,${encodeUtf8Base64(text)}`;

async function withNative(fn: (url: string, sent: () => string) => Promise<void>) {
  const fake = startFakeNativeResponses();
  const gw = await startGateway(`
providers:
  native: { type: openai, base_url: "${fake.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-native:
    type: chat
    targets: [{ provider: native, model: resp-ok }]
    content_rules:
      - { name: forbidden, pattern: FORBIDDENWORD, action: deny }
      - { name: ssn, pattern: '\\b\\d{3}-\\d{2}-\\d{4}\\b', action: redact }
${TEST_TOKENS_YAML}`);
  try {
    // What the upstream got last, decoding plain-text files so a match inside one shows.
    const sent = () => {
      const text = JSON.stringify(fake.requests.at(-1)?.body ?? {});
      return text.replace(
        /data:text\/plain;base64,([A-Za-z0-9+/=]*)/g,
        (_, data) => decodeUtf8Base64(data) ?? "",
      );
    };
    await fn(gw.url, sent);
  } finally {
    await gw.stop();
    await fake.stop();
  }
}

function post(url: string, input: unknown[]) {
  return fetch(`${url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "chat-native",
      input,
      tools: [
        { type: "function", name: "lookup", parameters: { type: "object", properties: {} } },
        { type: "custom", name: "shell" },
      ],
    }),
  });
}

Deno.test("responses native policy: redact rules reach every text the upstream reads", async () => {
  await withNative(async (url, sent) => {
    const res = await post(url, [
      { role: "user", content: [{ type: "input_text", text: "my ssn 111-22-3333" }] },
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "ssn 222-33-4444" }] },
      {
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "Yours is 444-55-6666" }],
      },
      { type: "function_call", call_id: "c1", name: "lookup", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "record: ssn 777-88-9999" },
      { type: "custom_tool_call", call_id: "c2", name: "shell", input: "ls" },
      {
        type: "custom_tool_call_output",
        call_id: "c2",
        output: [{ type: "input_text", text: "555-66-7777" }],
      },
      {
        role: "user",
        content: [{ type: "input_file", filename: "a.txt", file_data: textFile("doc 888-99-0000 é") }],
      },
    ]);
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    const upstream = sent();
    assert.deepEqual(upstream.match(SSN) ?? [], [], upstream);
    assert.match(upstream, /doc \[REDACTED\] é/, "a plain-text file is redacted and encoded back");
  });
});

Deno.test("responses native policy: deny rules judge texts only a native target reads", async () => {
  await withNative(async (url, sent) => {
    const cases: Record<string, unknown[]> = {
      // No assistant turn follows: the chat form has no place for it, but the upstream reads it.
      reasoning_summary: [
        { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "FORBIDDENWORD" }] },
        { role: "user", content: "hi" },
      ],
      // The chat form keeps the reasoning text, and the upstream reads the summary too.
      reasoning_summary_beside_text: [
        {
          type: "reasoning",
          id: "rs_1",
          content: [{ type: "reasoning_text", text: "fine" }],
          summary: [{ type: "summary_text", text: "FORBIDDENWORD" }],
        },
        { type: "message", role: "assistant", content: "ok" },
        { role: "user", content: "hi" },
      ],
      input_file_text: [{
        role: "user",
        content: [{ type: "input_file", filename: "a.txt", file_data: textFile("doc FORBIDDENWORD") }],
      }],
    };
    for (const [name, input] of Object.entries(cases)) {
      const res = await post(url, input);
      const body = await res.json();
      assert.equal(res.status, 400, `${name}: ${JSON.stringify(body)}`);
      assert.equal(body.error.code, "content_policy_violation", name);
      assert.match(body.error.param, /^input\[0\]\./, name);
      assert.ok(!sent().includes("FORBIDDENWORD"), `${name}: the forbidden text reached the upstream`);
    }
  });
});
