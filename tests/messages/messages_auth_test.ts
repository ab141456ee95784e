/**
 * Authentication and errors on `/v1/messages` as Anthropic's clients expect them, over real sockets with the
 * official `@anthropic-ai/sdk`: the gateway token in `x-api-key` (SDK 0.x, Claude Code with
 * `ANTHROPIC_API_KEY`) or as a Bearer token (SDK 1.x, `ANTHROPIC_AUTH_TOKEN`); every error in Anthropic's shape
 * `{"type":"error","error":{"type","message"},"request_id"}` with its status and a `request-id` header — a bad
 * token (401 `authentication_error`), an unknown or forbidden alias (404 `not_found_error`), an RPM limit (429
 * `rate_limit_error` with `retry-after`), an endpoint scope (403 `permission_error`), a wrong method (405), a
 * body too large (413 `request_too_large`), bad JSON — while the OpenAI routes keep OpenAI's shape.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { withTestGateway } from "../helpers/with_gateway.ts";

const T = {
  all: "gw-msg-all-token-0123456789abcdef",
  narrow: "gw-msg-narrow-token-0123456789abcdef",
  rpm: "gw-msg-rpm-token-0123456789abcdef",
  chatOnly: "gw-msg-chatonly-token-0123456789abcdef",
  ceiling: "gw-msg-ceiling-token-0123456789abcdef",
};

const CONFIG = `
server: { host: 127.0.0.1, port: 0, max_body_size: 64kb }
providers:
  local: { type: builtin }
models:
  coder:
    type: chat
    targets: [ { provider: local, model: echo } ]
    content_rules:
      - { name: secret, pattern: "TOPSECRET", action: deny, message: "Secrets may not be sent." }
      - { name: ssn, pattern: '\\d{3}-\\d{2}-\\d{4}', action: redact }
  secret-model: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed: { type: embedding, targets: [ { provider: local, model: hash } ] }
tokens:
  - { name: all, environment: test, sha256: ${hashToken(T.all)}, models: ["*"] }
  - { name: narrow, environment: test, sha256: ${hashToken(T.narrow)}, models: ["coder"] }
  - { name: rpm, environment: test, sha256: ${hashToken(T.rpm)}, models: ["*"], limits: { rpm: 2 } }
  - { name: chat-only, environment: test, sha256: ${hashToken(T.chatOnly)}, models: ["*"], endpoints: [chat] }
  - { name: ceiling, environment: test, sha256: ${hashToken(T.ceiling)}, models: ["*"], max_tokens: 3 }
`;

function withGateway(fn: (gw: TestGateway) => Promise<void>) {
  return withTestGateway(() => ({ fakes: undefined, config: CONFIG }), fn);
}

const PARAMS = {
  model: "coder",
  max_tokens: 50,
  messages: [{ role: "user" as const, content: "hello there" }],
};

/** A client sending the token as `x-api-key` only (the SDK's Bearer turned off). */
function apiKeyClient(gw: TestGateway, token: string): Anthropic {
  return new Anthropic({
    apiKey: null,
    authToken: null,
    baseURL: gw.url,
    maxRetries: 0,
    defaultHeaders: { "x-api-key": token },
  });
}

/** The SDK error of a call that must fail. */
async function failure(call: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  const err = await call.then(() => null, (e) => e);
  assert.ok(err instanceof Anthropic.APIError, `expected an API error, got ${err}`);
  return err;
}

/** Checks an SDK error's status, Anthropic error type and request id. */
function assertAnthropicError(
  err: InstanceType<typeof Anthropic.APIError>,
  status: number,
  type: string,
): void {
  assert.equal(err.status, status);
  const body = err.error as { type: string; error: { type: string; message: string }; request_id: string };
  assert.equal(body.type, "error");
  assert.equal(body.error.type, type);
  assert.ok(body.error.message.length > 0);
  assert.match(err.requestID ?? "", /^req_/);
  assert.equal(body.request_id, err.requestID);
}

Deno.test("messages auth: x-api-key, Bearer (apiKey) and authToken all authenticate, the same token", async () => {
  await withGateway(async (gw) => {
    const viaHeader = await apiKeyClient(gw, T.all).messages.create(PARAMS);
    assert.equal(viaHeader.content[0].type === "text" && viaHeader.content[0].text, "hello there");
    const viaBearer = await new Anthropic({ apiKey: T.all, baseURL: gw.url, maxRetries: 0 }).messages.create(
      PARAMS,
    );
    assert.equal(viaBearer.model, "coder");
    const viaToken = await new Anthropic({ authToken: T.all, apiKey: null, baseURL: gw.url, maxRetries: 0 })
      .messages.countTokens({ model: "coder", messages: PARAMS.messages });
    assert.ok(viaToken.input_tokens > 0);
    // The request id comes back as `request-id` (what Anthropic's SDKs read) and `x-request-id`.
    const raw = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": T.all, "content-type": "application/json", "anthropic-version": "2026-10-21" },
      body: JSON.stringify(PARAMS),
    });
    assert.equal(raw.status, 200);
    assert.match(raw.headers.get("request-id")!, /^req_/);
    assert.equal(raw.headers.get("request-id"), raw.headers.get("x-request-id"));
    await raw.body?.cancel();
  });
});

Deno.test("messages auth: a bad, missing or malformed key is Anthropic's 401 authentication_error", async () => {
  await withGateway(async (gw) => {
    const bad = await failure(apiKeyClient(gw, "gw-wrong-token").messages.create(PARAMS));
    assert.ok(bad instanceof Anthropic.AuthenticationError);
    assertAnthropicError(bad, 401, "authentication_error");
    const badBearer = await failure(
      new Anthropic({ apiKey: "gw-wrong-token", baseURL: gw.url, maxRetries: 0 }).messages.create(PARAMS),
    );
    assertAnthropicError(badBearer, 401, "authentication_error");
    const countBad = await failure(
      apiKeyClient(gw, "gw-wrong-token").messages.countTokens({ model: "coder", messages: PARAMS.messages }),
    );
    assertAnthropicError(countBad, 401, "authentication_error");
    const none = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(PARAMS),
    });
    assert.equal(none.status, 401);
    const body = await none.json();
    assert.equal(body.error.type, "authentication_error");
    assert.match(body.error.message, /x-api-key/);
    assert.equal(none.headers.get("request-id"), body.request_id);
    // The key never comes back in the answer or the log.
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.status === 401);
    assert.ok(!JSON.stringify(line).includes("gw-wrong-token"));
  });
});

Deno.test("messages auth: unknown and forbidden aliases are the same 404 not_found_error", async () => {
  await withGateway(async (gw) => {
    const narrow = apiKeyClient(gw, T.narrow);
    const forbidden = await failure(narrow.messages.create({ ...PARAMS, model: "secret-model" }));
    assert.ok(forbidden instanceof Anthropic.NotFoundError);
    assertAnthropicError(forbidden, 404, "not_found_error");
    const unknown = await failure(narrow.messages.create({ ...PARAMS, model: "no-such-model" }));
    assertAnthropicError(unknown, 404, "not_found_error");
    assert.equal(
      (forbidden.error as { error: { message: string } }).error.message.replace("secret-model", "X"),
      (unknown.error as { error: { message: string } }).error.message.replace("no-such-model", "X"),
    );
    // An embedding alias is the client's mistake: 400.
    const embed = await failure(apiKeyClient(gw, T.all).messages.create({ ...PARAMS, model: "embed" }));
    assertAnthropicError(embed, 400, "invalid_request_error");
  });
});

Deno.test("messages auth: an RPM limit is a 429 rate_limit_error with retry-after, streams included", async () => {
  await withGateway(async (gw) => {
    const client = apiKeyClient(gw, T.rpm);
    await client.messages.create(PARAMS);
    await client.messages.stream(PARAMS).finalMessage();
    const limited = await failure(client.messages.create(PARAMS));
    assert.ok(limited instanceof Anthropic.RateLimitError);
    assertAnthropicError(limited, 429, "rate_limit_error");
    assert.ok(Number(limited.headers?.get("retry-after")) >= 1);
    const limitedStream = await failure(client.messages.stream(PARAMS).finalMessage());
    assertAnthropicError(limitedStream, 429, "rate_limit_error");
    const line = await waitForLog(
      gw,
      (l) => l.msg === "request" && l.status === 429 && l.endpoint === "messages",
    );
    assert.equal(line.rule, "token.rpm");
  });
});

Deno.test("messages auth: an endpoint scope without messages is a 403 permission_error", async () => {
  await withGateway(async (gw) => {
    const denied = await failure(apiKeyClient(gw, T.chatOnly).messages.create(PARAMS));
    assert.ok(denied instanceof Anthropic.PermissionDeniedError);
    assertAnthropicError(denied, 403, "permission_error");
  });
});

Deno.test("messages errors: 405, 413, bad JSON and bad fields answer in Anthropic's shape", async () => {
  await withGateway(async (gw) => {
    const send = async (init: RequestInit & { path?: string }) => {
      const response = await fetch(`${gw.url}${init.path ?? "/v1/messages"}`, {
        ...init,
        headers: { "x-api-key": T.all, "content-type": "application/json", ...init.headers },
      });
      const body = await response.json();
      assert.equal(body.type, "error", JSON.stringify(body));
      assert.equal(response.headers.get("request-id"), body.request_id);
      return {
        status: response.status,
        type: body.error.type as string,
        message: body.error.message as string,
        response,
      };
    };
    const get = await send({ method: "GET" });
    assert.equal(get.status, 405);
    assert.equal(get.type, "invalid_request_error");
    assert.equal(get.response.headers.get("allow"), "POST");
    const large = await send({
      method: "POST",
      body: JSON.stringify({ ...PARAMS, pad: "x".repeat(70_000) }),
    });
    assert.equal(large.status, 413);
    assert.equal(large.type, "request_too_large");
    const json = await send({ method: "POST", body: "{not json" });
    assert.equal(json.status, 400);
    assert.equal(json.type, "invalid_request_error");
    const missing = await send({
      method: "POST",
      body: JSON.stringify({ model: "coder", messages: PARAMS.messages }),
    });
    assert.equal(missing.status, 400);
    assert.match(missing.message, /max_tokens: Field required/);
    const countGet = await send({ method: "GET", path: "/v1/messages/count_tokens" });
    assert.equal(countGet.status, 405);
    // A path of the Messages API no route serves (the batches API) is Anthropic's 404.
    const batches = await send({ method: "POST", path: "/v1/messages/batches", body: "{}" });
    assert.equal(batches.status, 404);
    assert.equal(batches.type, "not_found_error");

    // The OpenAI routes keep OpenAI's shape, and take no x-api-key.
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "x-api-key": T.all, "content-type": "application/json" },
      body: JSON.stringify({ model: "coder", messages: PARAMS.messages }),
    });
    assert.equal(chat.status, 401);
    const chatBody = await chat.json();
    assert.equal(typeof chatBody.error.message, "string");
    assert.equal(chatBody.type, undefined);
    assert.equal(chat.headers.get("request-id"), null);
  });
});

Deno.test("messages policy: content rules deny and redact, and a token's max_tokens ceiling applies", async () => {
  await withGateway(async (gw) => {
    const client = apiKeyClient(gw, T.all);
    const denied = await failure(
      client.messages.create({ ...PARAMS, system: "Never say TOPSECRET.", messages: PARAMS.messages }),
    );
    assertAnthropicError(denied, 400, "invalid_request_error");
    assert.equal((denied.error as { error: { message: string } }).error.message, "Secrets may not be sent.");
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.outcome === "deny");
    assert.equal(line.rule, "alias.content:secret");
    const redacted = await client.messages.create({
      ...PARAMS,
      messages: [{ role: "user", content: [{ type: "text", text: "my ssn is 123-45-6789" }] }],
    });
    const text = redacted.content[0].type === "text" ? redacted.content[0].text : "";
    assert.ok(!text.includes("123-45-6789") && text.startsWith("my ssn is"), text);
    const capped = await apiKeyClient(gw, T.ceiling).messages.create({
      ...PARAMS,
      max_tokens: 1000,
      messages: [{ role: "user", content: "one two three four five six" }],
    });
    assert.equal(capped.stop_reason, "max_tokens");
    assert.equal(capped.usage.output_tokens, 3);
  });
});
