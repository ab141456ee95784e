/**
 * Who may use `/admin` and the console, over a real socket: without an admin token configured every admin route
 * answers 401 and there is no console; with one, a missing, wrong or client token is refused on every admin
 * route; the token list and the audit trail never hold a secret or a hash; `explain` for a forbidden alias names
 * the rule that forbids it. (The console's own login page is driven in tests/admin/console_browser_test.ts.)
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { ADMIN_TOKEN, ask, CI_BOT_TOKEN, sdk, WEB_APP_TOKEN } from "../helpers/console_fixture.ts";
import { startConsoleGateway } from "../helpers/console_seed.ts";

/** Every admin route with a request that an admin could make successfully. */
const ADMIN_ROUTES: { method: string; path: string; body?: unknown }[] = [
  { method: "GET", path: "/admin/tokens" },
  { method: "POST", path: "/admin/tokens", body: { name: "sneaky", models: ["chat-default"] } },
  { method: "GET", path: "/admin/tokens/cfg_ci-bot" },
  { method: "PATCH", path: "/admin/tokens/cfg_ci-bot", body: { disabled: true } },
  { method: "DELETE", path: "/admin/tokens/cfg_ci-bot" },
  { method: "POST", path: "/admin/tokens/cfg_ci-bot/rotate", body: { grace: "60s" } },
  { method: "GET", path: "/admin/audit" },
  { method: "GET", path: "/admin/explain?token=ci-bot&model=chat-default" },
  { method: "GET", path: "/admin/usage" },
  { method: "GET", path: "/admin/requests" },
  { method: "GET", path: "/admin/targets" },
  { method: "GET", path: "/admin/teams" },
  { method: "GET", path: "/admin/alerts" },
  { method: "GET", path: "/admin/config" },
  { method: "POST", path: "/admin/reload" },
];

function call(gw: TestGateway, route: (typeof ADMIN_ROUTES)[number], token?: string): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return fetch(`${gw.url}${route.path}`, {
    method: route.method,
    headers,
    body: route.body === undefined ? undefined : JSON.stringify(route.body),
  });
}

/** Asserts a 401 in OpenAI's error shape for `route` with `token`. */
async function assertRefused(gw: TestGateway, route: (typeof ADMIN_ROUTES)[number], token?: string) {
  const response = await call(gw, route, token);
  const label = `${route.method} ${route.path} with ${token === undefined ? "no token" : token.slice(0, 12)}`;
  assert.equal(response.status, 401, label);
  const body = await response.json();
  assert.equal(typeof body.error?.message, "string", label);
}

Deno.test("admin access: without an admin token configured, every admin route is 401 and there is no console", async () => {
  const { gw, stop } = await startConsoleGateway({ admin: false });
  try {
    for (const route of ADMIN_ROUTES) {
      await assertRefused(gw, route);
      await assertRefused(gw, route, ADMIN_TOKEN);
      await assertRefused(gw, route, CI_BOT_TOKEN);
    }
    for (const path of ["/console", "/console/app.js"]) {
      const page = await fetch(`${gw.url}${path}`);
      assert.equal(page.status, 404, path);
      await page.body?.cancel();
    }
    // Nothing was changed by the refused calls: the config token still works.
    await ask(sdk(gw.baseURL, CI_BOT_TOKEN), "chat-default");
  } finally {
    await stop();
  }
});

Deno.test("admin access: a missing, wrong or client token is refused on every admin route", async () => {
  const { gw, stop } = await startConsoleGateway();
  try {
    for (const route of ADMIN_ROUTES) {
      await assertRefused(gw, route);
      await assertRefused(gw, route, "gw-not-an-admin-token-0123456789");
      await assertRefused(gw, route, CI_BOT_TOKEN);
      await assertRefused(gw, route, WEB_APP_TOKEN);
    }
    const list = await call(gw, ADMIN_ROUTES[0], ADMIN_TOKEN);
    assert.equal(list.status, 200);
    const names = (await list.json()).data.map((t: { name: string }) => t.name);
    assert.deepEqual(names, ["ci-bot", "web-app"], "no token was created by a refused call");
    // The console's page itself is public: it is the login page, and its data needs the admin token.
    const page = await fetch(`${gw.url}/console`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /text\/html/);
    await page.body?.cancel();
  } finally {
    await stop();
  }
});

Deno.test("admin access: the token list and the audit trail never hold a secret or a hash", async () => {
  const { gw, stop } = await startConsoleGateway();
  const admin = (path: string, init: RequestInit = {}) =>
    fetch(`${gw.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    });
  try {
    const created = await admin("/admin/tokens", {
      method: "POST",
      body: JSON.stringify({ name: "lister", environment: "staging", models: ["chat-default"] }),
    });
    assert.equal(created.status, 201);
    const token = await created.json();
    assert.match(token.token, /^gw-/);
    const rotated = await admin(`/admin/tokens/${token.id}/rotate`, {
      method: "POST",
      body: JSON.stringify({ grace: "60s" }),
    });
    assert.equal(rotated.status, 200);
    const newSecret = (await rotated.json()).token;
    assert.match(newSecret, /^gw-/);
    assert.equal((await admin(`/admin/tokens/${token.id}`, { method: "DELETE" })).status, 200);

    const secrets = [token.token, newSecret, CI_BOT_TOKEN, WEB_APP_TOKEN, ADMIN_TOKEN];
    const forbidden = [...secrets, ...secrets.map(hashToken)];
    for (
      const path of [
        "/admin/tokens",
        "/admin/tokens?status=revoked",
        `/admin/tokens/${token.id}`,
        "/admin/audit",
      ]
    ) {
      const response = await admin(path);
      assert.equal(response.status, 200, path);
      const text = await response.text();
      for (const secret of forbidden) {
        assert.ok(!text.includes(secret), `${path} holds ${secret.slice(0, 12)}…`);
      }
      assert.ok(!/"(sha256|hash|token_hash|secret)"\s*:/.test(text), `${path} has a hash or secret field`);
    }
    const audit = await (await admin("/admin/audit")).json();
    assert.deepEqual(
      audit.data.map((e: { action: string }) => e.action),
      ["revoke", "rotate", "create"],
    );
  } finally {
    await stop();
  }
});

Deno.test("admin access: explain for a forbidden alias says which rule forbids it", async () => {
  const { gw, stop } = await startConsoleGateway();
  try {
    const response = await fetch(`${gw.url}/admin/explain?token=web-app&model=chat-fallback`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(response.status, 200);
    const explanation = await response.json();
    assert.equal(explanation.allowed, false);
    assert.equal(explanation.denied_by.rule, "token.models");
    assert.equal(typeof explanation.denied_by.message, "string");
    // And the gateway agrees: the same request is refused, as if the alias did not exist (404).
    await assert.rejects(ask(sdk(gw.baseURL, WEB_APP_TOKEN), "chat-fallback"), (err: { status?: number }) => {
      assert.equal(err.status, 404);
      return true;
    });
  } finally {
    await stop();
  }
});
