/**
 * An upstream's `x-should-retry` reaches the client with its error, on every client API. Anthropic's SDK obeys
 * it before anything else ("If the server explicitly says whether or not to retry, obey"), else retries 408,
 * 409, 429 and 5xx; OpenAI's SDK reads it the same way. Anthropic sends `x-should-retry: false` on errors a retry
 * cannot fix (a spend limit's 429): dropped, every SDK client retried it up to its `maxRetries`. The header
 * belongs to the error it came with: an error the gateway makes itself carries only what it sets. The gateway's
 * own routing obeys a `false` as well: the target is not asked again.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withTestGateway } from "../helpers/with_gateway.ts";

/** The upstream's 429, with `x-should-retry` when `shouldRetry` is set; Anthropic's or OpenAI's body by path. */
function refusal(path: string, shouldRetry: string | null): Response {
  const headers: Record<string, string> = { "content-type": "application/json", "retry-after": "0" };
  if (shouldRetry !== null) headers["x-should-retry"] = shouldRetry;
  const body = path === "/v1/messages"
    ? { type: "error", error: { type: "rate_limit_error", message: "spend limit reached" } }
    : { error: { message: "spend limit reached", type: "insufficient_quota", code: "insufficient_quota" } };
  return new Response(JSON.stringify(body), { status: 429, headers });
}

function withGateway(
  shouldRetry: string | null,
  fn: (gw: TestGateway, calls: () => number) => Promise<void>,
): Promise<void> {
  return withTestGateway(() => {
    let calls = 0;
    const upstream = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
      calls++;
      await req.body?.cancel();
      return refusal(new URL(req.url).pathname, shouldRetry);
    });
    const url = `http://127.0.0.1:${upstream.addr.port}`;
    return {
      fakes: () => calls,
      config: `
server: { host: 127.0.0.1, port: 0 }
routing: { eject_after: 1000 }
providers:
  oa: { type: openai, base_url: "${url}/v1", api_key: "k" }
  claude: { type: anthropic, base_url: "${url}", api_key: "k" }
models:
  chat-openai: { type: chat, targets: [ { provider: oa, model: up, retries: 0 } ] }
  claude: { type: chat, targets: [ { provider: claude, model: claude-up, retries: 0 } ] }
  claude-retries: { type: chat, targets: [ { provider: claude, model: claude-up, retries: 2 } ] }
${TEST_TOKENS_YAML}`,
      stop: () => upstream.shutdown(),
    };
  }, fn);
}

const MESSAGE = { max_tokens: 16, messages: [{ role: "user" as const, content: "Hi" }] };

Deno.test("x-should-retry: false from the upstream reaches Anthropic's SDK, which does not retry", async () => {
  for (const model of ["claude", "chat-openai"]) {
    await withGateway("false", async (gw, calls) => {
      const client = new Anthropic({ apiKey: TEST_TOKEN, baseURL: gw.url, maxRetries: 2 });
      const err = await client.messages.create({ model, ...MESSAGE }).then(() => null, (e) => e);
      assert.ok(err instanceof Anthropic.RateLimitError, `${model}: ${err}`);
      assert.equal(err.headers?.get("x-should-retry"), "false", model);
      assert.equal(calls(), 1, `${model}: the SDK obeyed it`);
    });
  }
});

Deno.test("x-should-retry: false from the upstream reaches OpenAI's SDK, which does not retry", async () => {
  for (const model of ["claude", "chat-openai"]) {
    await withGateway("false", async (gw, calls) => {
      const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: `${gw.url}/v1`, maxRetries: 2 });
      const err = await client.chat.completions.create({ model, ...MESSAGE }).then(() => null, (e) => e);
      assert.ok(err instanceof OpenAI.RateLimitError, `${model}: ${err}`);
      assert.equal(err.headers?.get("x-should-retry"), "false", model);
      assert.equal(calls(), 1, `${model}: the SDK obeyed it`);
    });
  }
});

Deno.test("x-should-retry: an upstream that sends none gets none added, and the SDK retries the 429", async () => {
  await withGateway(null, async (gw, calls) => {
    const client = new Anthropic({ apiKey: TEST_TOKEN, baseURL: gw.url, maxRetries: 1 });
    const err = await client.messages.create({ model: "claude", ...MESSAGE }).then(() => null, (e) => e);
    assert.ok(err instanceof Anthropic.RateLimitError, String(err));
    assert.equal(err.headers?.get("x-should-retry"), null);
    assert.equal(calls(), 2);
  });
});

// The gateway's own retries obey it too: a retry on the same upstream account would spend a call and a backoff
// on an error the upstream said a retry cannot fix.
Deno.test("x-should-retry: false stops the gateway's own retries on the target; without it they run", async () => {
  for (const [shouldRetry, upstreamCalls] of [["false", 1], [null, 3]] as const) {
    await withGateway(shouldRetry, async (gw, calls) => {
      const client = new Anthropic({ apiKey: TEST_TOKEN, baseURL: gw.url, maxRetries: 0 });
      const err = await client.messages.create({ model: "claude-retries", ...MESSAGE }).then(
        () => null,
        (e) => e,
      );
      assert.ok(err instanceof Anthropic.RateLimitError, String(err));
      assert.equal(calls(), upstreamCalls, `x-should-retry: ${shouldRetry}`);
    });
  }
});
