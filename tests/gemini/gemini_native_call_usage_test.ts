/**
 * A native Gemini target that reports no usage has its answer counted by the gateway (`tokens_estimated`): a
 * `functionCall` part's args, and an `executableCode` part's code (code execution: the model wrote it, the vendor
 * bills it as output), are counted as the same text in a `text` part is, in a JSON answer and in a stream.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-gemini-call-usage-0123456789";
const ARGS = { location: "Reykjavik, Iceland", unit: "celsius", days: 5, include: ["wind", "humidity"] };
const TEXT = JSON.stringify(ARGS);

/** The part the upstream says {@linkcode TEXT} in. */
type Kind = "text" | "functionCall" | "executableCode";

/** A Gemini upstream answering one part of `kind` holding {@linkcode TEXT}, without any usage metadata. */
function startUpstream(kind: Kind) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request) => {
    const part = kind === "text"
      ? { text: TEXT }
      : kind === "functionCall"
      ? { functionCall: { name: "get_weather", args: ARGS } }
      : { executableCode: { language: "PYTHON", code: TEXT } };
    const answer = {
      candidates: [{ index: 0, content: { role: "model", parts: [part] }, finishReason: "STOP" }],
      modelVersion: "m",
      responseId: "r1",
    };
    if (!new URL(request.url).pathname.endsWith(":streamGenerateContent")) return Response.json(answer);
    return new Response(`data: ${JSON.stringify(answer)}\n\n`, {
      headers: { "content-type": "text/event-stream" },
    });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1beta`, stop: () => server.shutdown() };
}

function gateway(baseURL: string): InProcessGateway {
  return inProcessGateway(`
providers:
  up: { type: gemini, base_url: "${baseURL}", api_key: AIza-scripted-0123456789 }
models:
  gem: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
}

/** The usage record of one request answered as `kind`, JSON or streamed (its record is written as it ends). */
async function recordOf(kind: Kind, stream: boolean): Promise<UsageRecord> {
  const up = startUpstream(kind);
  try {
    const gw = gateway(up.baseURL);
    const method = stream ? "streamGenerateContent?alt=sse" : "generateContent";
    const res = await gw.fetch(`/v1beta/models/gem:${method}`, {
      method: "POST",
      headers: { "x-goog-api-key": TOKEN, "content-type": "application/json" },
      body: JSON.stringify({
        contents: [{ role: "user", parts: [{ text: "weather" }] }],
        tools: [{ functionDeclarations: [{ name: "get_weather" }] }, { codeExecution: {} }],
      }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert(text.includes("Reykjavik"), text);
    for (let waited = 0; gw.records.length === 0 && waited < 5000; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(gw.records.length, 1);
    return gw.records[0];
  } finally {
    await up.stop();
  }
}

for (const stream of [false, true]) {
  for (const kind of ["functionCall", "executableCode"] as const) {
    Deno.test(
      `gemini native usage: without the upstream's usage, a ${kind} part is counted as text is (${
        stream ? "stream" : "JSON"
      })`,
      async () => {
        const call = await recordOf(kind, stream);
        const text = await recordOf("text", stream);
        assert.equal(call.tokens_estimated, true);
        assert.equal(text.tokens_estimated, true);
        assert(text.completion_tokens > 10, JSON.stringify(text));
        assert.equal(call.completion_tokens, text.completion_tokens, JSON.stringify(call));
      },
    );
  }
}
