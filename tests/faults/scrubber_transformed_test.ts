/**
 * An upstream that quotes the gateway's provider key transformed (lower-cased, upper-cased, base64 of the
 * `Authorization` value or of `user:key` basic auth, base64url of the key) in its error: the client, whether it
 * asked for a JSON answer or a stream, and the log lines see none of those forms. The scrubber knew each secret
 * only literally and JSON-escaped, so all of them reached the client and the logs.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, waitForLogCount } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

const KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";

const FORMS: Record<string, string> = {
  lower: KEY.toLowerCase(),
  upper: KEY.toUpperCase(),
  bearerBase64: btoa(`Bearer ${KEY}`),
  basicBase64: btoa(`gateway:${KEY}`),
  base64url: btoa(KEY).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, ""),
};

async function chat(url: string, stream: boolean): Promise<string> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-m", stream, messages: [{ role: "user", content: "hi" }] }),
  });
  return `${res.status} ${await res.text()}`;
}

Deno.test("scrubber transformed: a key quoted lower-cased, upper-cased or base64-encoded reaches no client or log", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${upstream.url}/v1", api_key: ${KEY} }
models:
  chat-m: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ] }
${TEST_TOKENS_YAML}
`);
  try {
    const leaks: string[] = [];
    for (const [name, form] of Object.entries(FORMS)) {
      const message = `Invalid header value: ${form}`;
      // An HTTP 400 with the form in its message and param.
      upstream.next = {
        status: 400,
        headers: { "content-type": "application/json" },
        chunks: [JSON.stringify({ error: { message, type: "invalid_request_error", param: form } })],
      };
      const answer = await chat(gw.url, false);
      assert.ok(answer.startsWith("400 "), answer);
      if (answer.includes(form)) leaks.push(`${name} in a JSON error: ${answer}`);
      // The same in an error event inside a stream that had answered 200.
      upstream.next = {
        status: 200,
        headers: { "content-type": "text/event-stream" },
        chunks: [`data: ${JSON.stringify({ error: { message, type: "server_error" } })}\n\n`],
      };
      const streamed = await chat(gw.url, true);
      if (streamed.includes(form)) leaks.push(`${name} in a stream: ${streamed}`);
    }
    assert.deepEqual(leaks, []);
    const lines = await waitForLogCount(gw, (line) => line.alias === "chat-m", 2 * Object.keys(FORMS).length);
    const logged = gw.logs.map((line) => JSON.stringify(line)).join("\n");
    assert.equal(lines.length >= 2 * Object.keys(FORMS).length, true);
    for (const [name, form] of Object.entries(FORMS)) assert.ok(!logged.includes(form), `${name} in the log`);
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});
