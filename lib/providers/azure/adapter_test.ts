/** The Azure request: headers and body. */
import assert from "node:assert/strict";
import { azureAdapter, azureHeaders } from "./adapter.ts";
import { type AzureProviderConfig, configSchema } from "../../config/schema.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import type { ResponsesCall } from "../types.ts";

const RES = "https://contoso.openai.azure.com";
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
  assert.deepEqual(
    toUpstreamChatBody(request, "gpt-4o", { stream_usage: true, reasoning_history: "reasoning_content" }),
    {
      model: "gpt-4o",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    },
  );
  assert.equal(
    toUpstreamChatBody(request, "gpt-4o", { stream_usage: false, reasoning_history: "reasoning_content" })
      .stream_options,
    undefined,
  );
});

Deno.test("azure native responses: only with native_responses; v1 and classic URLs, deployment as model", () => {
  const config = (extra: Record<string, unknown>) =>
    configSchema.parse({
      providers: { az: { type: "azure", api_key: "azure-key", ...extra } },
      models: {},
    }).providers.az as AzureProviderConfig;
  // The client's beta opt-in is not passed to Azure, which is not known to take it (the capability table).
  const callFor = (c: AzureProviderConfig): ResponsesCall => ({
    target: { provider: "az", providerConfig: c, model: "my-deployment" } as unknown as ResolvedTarget,
    signal: new AbortController().signal,
    requestId: "req_9",
    openaiBeta: { header: "responses_multi_agent=v1", query: true },
  });
  const off = config({ base_url: `${RES}/openai/v1` });
  assert.equal(azureAdapter(off).responsesRequest, undefined);

  const cases: [Record<string, unknown>, string][] = [
    [{ base_url: `${RES}/openai/v1/` }, `${RES}/openai/v1/responses`],
    [
      { base_url: `${RES}/openai/v1`, api_version: "preview" },
      `${RES}/openai/v1/responses?api-version=preview`,
    ],
    [
      { base_url: RES, api_version: "2025-04-01-preview" },
      `${RES}/openai/responses?api-version=2025-04-01-preview`,
    ],
    [
      { base_url: `${RES}/openai`, api_version: "2025-04-01-preview" },
      `${RES}/openai/responses?api-version=2025-04-01-preview`,
    ],
  ];
  for (const [extra, url] of cases) {
    const c = config({ ...extra, native_responses: true, headers: { "api-key": "operator" } });
    const adapter = azureAdapter(c);
    const body = { model: "my-deployment", input: "hi" };
    const request = adapter.responsesRequest!(body, callFor(c));
    assert.equal(request.url, url);
    assert.equal(request.headers["openai-beta"], undefined);
    assert.equal(request.headers.accept, "application/json");
    assert.deepEqual(JSON.parse(String(request.body)), body);
    assert.equal((adapter.authorize(request) as typeof request).headers["api-key"], "azure-key");
    const count = adapter.countTokensRequest!(
      { chat: { model: "a", messages: [] }, responses: body },
      callFor(c),
    )!;
    assert.equal(count.url, url.replace("/responses", "/responses/input_tokens"));
  }
});
