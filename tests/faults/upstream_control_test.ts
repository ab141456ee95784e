/**
 * Clients never steer the upstream call: whatever a client sends (headers meant for the upstream, hop-by-hop
 * and forwarding headers, body fields that some SDKs use to pick a base URL or headers, aliases shaped like
 * paths or URLs), the upstream sees the configured host, path and credentials, and none of the client's headers.
 * Holds a promise of SECURITY.md.
 *
 * @module
 */
import assert from "node:assert/strict";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

/** Headers a hostile or confused client may send, hoping they reach the upstream. */
const CLIENT_HEADERS: Record<string, string> = {
  "x-api-key": "client-supplied-x-api-key",
  "api-key": "client-supplied-azure-key",
  "openai-organization": "org-client-supplied",
  "openai-project": "proj-client-supplied",
  "x-forwarded-host": "evil.example",
  "x-forwarded-for": "203.0.113.7",
  "x-original-url": "/v1/admin",
  "x-http-method-override": "DELETE",
  "x-custom-client-header": "client-value",
  cookie: "session=client-cookie",
  "x-amz-security-token": "client-amz-token",
  "anthropic-version": "1999-01-01",
};

/** Body fields some SDKs and proxies read to choose the upstream; here they must only pass as unknown params. */
const STEERING_FIELDS = {
  api_base: "http://evil.example/v1",
  base_url: "http://evil.example/v1",
  api_key: "sk-client-supplied",
  extra_headers: { authorization: "Bearer sk-client-supplied" },
  headers: { authorization: "Bearer sk-client-supplied" },
};

Deno.test("upstream control: no client header, body field or alias changes the upstream's host, path or credentials", async () => {
  await withFakeGateway(startFakeOpenAI, (fake) => `
providers:
  up: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-up: { type: chat, targets: [{ provider: up, model: gpt-test }] }
  embed-up: { type: embedding, targets: [{ provider: up, model: text-embedding-test }] }
${TEST_TOKENS_YAML}`, async (gw, fake) => {
    const send = (path: string, body: Record<string, unknown>) =>
      fetch(`${gw.url}${path}`, {
        method: "POST",
        headers: {
          ...CLIENT_HEADERS,
          authorization: `Bearer ${TEST_TOKEN}`,
          "content-type": "application/json",
        },
        body: JSON.stringify(body),
      });
    const chat = await send("/v1/chat/completions", {
      model: "chat-up",
      messages: [{ role: "user", content: "hi" }],
      ...STEERING_FIELDS,
    });
    assert.equal(chat.status, 200, await chat.clone().text());
    await chat.arrayBuffer();
    const stream = await send("/v1/chat/completions", {
      model: "chat-up",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(stream.status, 200);
    await stream.arrayBuffer();
    const embed = await send("/v1/embeddings", { model: "embed-up", input: "hi" });
    assert.equal(embed.status, 200);
    await embed.arrayBuffer();
    // Aliases shaped like paths, URLs or header injections are unknown models, never a route upstream.
    for (
      const model of ["../../admin", "http://evil.example/v1", "chat-up\r\nx-injected: 1", "chat-up/../x"]
    ) {
      const res = await send("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] });
      assert.equal(res.status, 404, model);
      await res.arrayBuffer();
    }

    assert.equal(fake.requests.length, 3, "only the three valid requests reached the upstream");
    const upstreamHost = new URL(fake.baseURL).host;
    for (const request of fake.requests) {
      assert.ok(["/v1/chat/completions", "/v1/embeddings"].includes(request.path), request.path);
      assert.equal(request.headers.get("authorization"), `Bearer ${FAKE_KEY}`);
      assert.equal(request.headers.get("host"), upstreamHost);
      for (const name of Object.keys(CLIENT_HEADERS)) {
        assert.equal(request.headers.get(name), null, `client header ${name} reached the upstream`);
      }
      const seen = JSON.stringify([...request.headers]);
      assert.ok(!seen.includes(TEST_TOKEN), "the gateway token never goes upstream");
      assert.ok(!seen.includes("client-supplied") && !seen.includes("evil.example"), seen);
    }
    // The steering fields went along as the unknown parameters they are, and changed nothing.
    assert.equal(fake.requests[0].body.api_base, "http://evil.example/v1");
  });
});
