/**
 * End-user limits over real sockets (issue 26): an alias's `end_user_limits.rpm` holds per user, whichever
 * client API names the user (chat's `user`, Responses' `safety_identifier`, Messages' `metadata.user_id`);
 * a token's block keyed by a header; each user's denial is a 429 naming `end_user.rpm`, and other users and
 * requests naming no user are untouched.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type Gated, send, startGated } from "../helpers/gated_upstream.ts";

const APP = "gw-end-users-app-0123456789abcdef";
const HDR = "gw-end-users-hdr-0123456789abcdef";

function config(up: Gated): string {
  return `
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated:
    type: chat
    targets: [ { provider: up, model: gated, retries: 0 } ]
    end_user_limits: { rpm: 2 }
  chat-free: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(APP)}, models: ["*"] }
  - name: by-header
    sha256: ${hashToken(HDR)}
    models: [chat-free]
    end_user_limits: { rpm: 1, header: X-End-User, max_users: 100 }
`;
}

async function post(gw: TestGateway, path: string, body: Record<string, unknown>): Promise<Response> {
  return await fetch(`${gw.baseURL}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${APP}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

Deno.test("end users: rpm per user across chat, Responses and Messages; a header names the user on a token", async () => {
  const up = startGated();
  up.release();
  const gw = await startGateway(config(up));
  try {
    const statuses = async (user: Record<string, unknown>) => [
      (await send(gw, APP, false, user)).status,
      (await send(gw, APP, false, user)).status,
    ];
    assert.deepEqual(await statuses({ user: "alice" }), [200, 200]);
    const third = await send(gw, APP, false, { user: "alice" });
    assert.equal(third.status, 429);
    const error = JSON.parse(third.body).error;
    assert.equal(error.code, "rate_limit_exceeded");
    assert.match(
      error.message,
      /^Rate limit reached for user "alice" of model chat-gated on requests per min/,
    );
    // Responses' safety_identifier and Messages' metadata.user_id name the same user as chat's user.
    const responses = await post(gw, "/responses", {
      model: "chat-gated",
      input: "hi",
      safety_identifier: "alice",
    });
    assert.equal(responses.status, 429);
    await responses.body?.cancel();
    const messages = await post(gw, "/messages", {
      model: "chat-gated",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
      metadata: { user_id: "alice" },
    });
    assert.equal(messages.status, 429);
    assert.equal((await messages.json()).error.type, "rate_limit_error", "in Anthropic's own error shape");
    // Another user, and requests naming none, are not held by alice's limit.
    assert.deepEqual(await statuses({ user: "bob" }), [200, 200]);
    assert.deepEqual(await statuses({}), [200, 200]);
    assert.equal((await send(gw, APP, false, {})).status, 200);

    // The token's block takes the user from its header, not the body.
    const viaHeader = (user: string, body: Record<string, unknown> = {}) =>
      send(gw, HDR, false, { model: "chat-free", ...body }, { "x-end-user": user });
    assert.equal((await viaHeader("h1", { user: "same-body" })).status, 200);
    const again = await viaHeader("h1", { user: "other-body" });
    assert.equal(again.status, 429);
    assert.match(JSON.parse(again.body).error.message, /user "h1" of token by-header/);
    assert.equal((await viaHeader("h2", { user: "same-body" })).status, 200);
  } finally {
    await gw.stop();
    await up.stop();
  }
});
