/** The Azure request: headers and body. */
import assert from "node:assert/strict";
import { azureHeaders } from "./adapter.ts";
import { toUpstreamChatBody } from "../openai/request.ts";
import type { ChatRequest } from "../../openai/types.ts";

Deno.test("azure request: api-key header, deployment as model, stream usage asked when configured", () => {
  const headers = azureHeaders(
    { api_key: "azure-key", headers: { "api-key": "x", "X-Extra": "1" } },
    "req_1",
    true,
  );
  assert.equal(headers["api-key"], "azure-key", "operator headers cannot replace the key");
  assert.equal(headers["X-Extra"], "1");
  assert.equal(headers.accept, "text/event-stream");
  assert.equal("authorization" in headers, false);

  const request: ChatRequest = {
    model: "chat-alias",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
  };
  assert.deepEqual(toUpstreamChatBody(request, "gpt-4o", true), {
    model: "gpt-4o",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  assert.equal(toUpstreamChatBody(request, "gpt-4o", false).stream_options, undefined);
});
