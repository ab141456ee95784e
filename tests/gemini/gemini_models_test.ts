/**
 * Google's model methods on the Gemini API, in-process: `GET` and `HEAD` of `/v1beta/models/{alias}` answer
 * alike (the server routes a HEAD as a GET and names it in `Allow`).
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { inProcessGateway } from "../helpers/in_process.ts";

const CONFIG = `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
models:
  chat-a: { type: chat, targets: [ { provider: local, model: echo } ] }
  chat-b: { type: chat, targets: [ { provider: local, model: echo } ] }
  emb: { type: embedding, targets: [ { provider: local, model: hash } ] }
  "llama3:8b": { type: chat, targets: [ { provider: local, model: echo } ] }
${TEST_TOKENS_YAML}`;

const KEY = { "x-goog-api-key": TEST_TOKEN };

Deno.test("gemini models: HEAD of a model answers as its GET does (200, 403, 404)", async () => {
  const gw = inProcessGateway(CONFIG);
  for (
    const [path, status] of [
      ["/v1beta/models/chat-a", 200],
      ["/v1beta/models/llama3:8b", 200],
      ["/v1beta/models/emb", 200],
      ["/v1beta/models/nope", 403],
      ["/v1beta/models/chat-a:generateContent", 404],
    ] as const
  ) {
    const got = await gw.fetch(path, { headers: KEY });
    const head = await gw.fetch(path, { method: "HEAD", headers: KEY });
    await got.body?.cancel();
    await head.body?.cancel();
    assert.equal(got.status, status, `GET ${path}`);
    assert.equal(head.status, status, `HEAD ${path}`);
    assert.equal(head.headers.get("content-type"), got.headers.get("content-type"), `HEAD ${path}`);
  }
});
