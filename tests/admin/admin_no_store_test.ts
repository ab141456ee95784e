/**
 * `Cache-Control: no-store` on every answer under `/admin`, walked from the endpoint table: every route with
 * `auth: "admin"`, every method it has, in-process and over a real socket. Each gets a successful call and the
 * errors it can answer with (no, a wrong or a client token: 401; a bad field or query: 400; an unknown id:
 * 404; a config token changed: 409; a method it does not have: 405), and admin paths no route serves get their
 * 404. The calls are keyed by route, so the compiler asks for calls for a new admin route, and the test fails
 * until each of its methods has a successful one.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { parseConfigText } from "../../lib/config/load.ts";
import type { GatewayState } from "../../lib/http/context.ts";
import { isAdminPath, matchRoute, type RouteId, ROUTES, type RouteSpec } from "../../lib/http/endpoints.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import type { ReloadStatus } from "../../lib/reload.ts";
import { createGateway } from "../../lib/server.ts";
import { createTokenDirectory } from "../../lib/tokens/directory.ts";
import { createMemoryTokenStore } from "../../lib/tokens/store_memory.ts";
import { createSqliteStore } from "../../lib/usage/sqlite_store.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { rawExchange } from "../helpers/raw_http.ts";

const ADMIN = "gw-admin-no-store-0123456789abcdef";
const CLIENT = "gw-client-no-store-0123456789abcdef";
const UNKNOWN_ID = "tok_000000000000000000000000";

const CONFIG = `
providers:
  local: { type: builtin }
models:
  chat-a: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: from-file, sha256: ${hashToken(CLIENT)}, models: ["chat-*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
teams:
  file-team: { description: from the file }
`;

/** The routes that need the admin token. */
type AdminRoute = { [K in RouteId]: (typeof ROUTES)[K]["auth"] extends "admin" ? K : never }[RouteId];

/**
 * One call and the status it must get; `{id}` in the path is a token issued for this call, `{team}` a team made
 * for it, and a body given as a
 * function is made afresh for each request (a name must be new to be issued).
 */
interface Call {
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
  readonly status: number;
}

const fresh = "/admin/tokens/{id}";
let names = 0;

/** For every admin route: a successful call for each of its methods, and the errors it can answer with. */
const CALLS: Record<AdminRoute, readonly Call[]> = {
  tokens: [
    { method: "GET", path: "/admin/tokens", status: 200 },
    { method: "GET", path: "/admin/tokens?limit=0", status: 400 },
    {
      method: "POST",
      path: "/admin/tokens",
      body: () => ({ name: `n-${names++}`, models: ["chat-a"] }),
      status: 201,
    },
    { method: "POST", path: "/admin/tokens", body: { name: 5, models: ["chat-a"] }, status: 400 },
    { method: "POST", path: "/admin/tokens", body: { name: "from-file", models: ["chat-a"] }, status: 409 },
  ],
  tokenRotate: [
    { method: "POST", path: `${fresh}/rotate`, body: { grace: "60s" }, status: 200 },
    { method: "POST", path: `${fresh}/rotate`, body: { grace: "forever" }, status: 400 },
    { method: "POST", path: `/admin/tokens/${UNKNOWN_ID}/rotate`, status: 404 },
    { method: "POST", path: "/admin/tokens/cfg_from-file/rotate", status: 409 },
  ],
  token: [
    { method: "GET", path: fresh, status: 200 },
    { method: "GET", path: `/admin/tokens/${UNKNOWN_ID}`, status: 404 },
    { method: "PATCH", path: fresh, body: { disabled: true }, status: 200 },
    { method: "PATCH", path: fresh, body: { limits: { rpm: -1 } }, status: 400 },
    { method: "PATCH", path: "/admin/tokens/cfg_from-file", body: { disabled: true }, status: 409 },
    { method: "DELETE", path: fresh, status: 200 },
    { method: "DELETE", path: `/admin/tokens/${UNKNOWN_ID}`, status: 404 },
  ],
  audit: [
    { method: "GET", path: "/admin/audit", status: 200 },
    { method: "GET", path: "/admin/audit?limit=abc", status: 400 },
  ],
  explain: [
    { method: "GET", path: "/admin/explain?token=from-file&model=chat-a", status: 200 },
    { method: "GET", path: "/admin/explain?model=chat-a", status: 400 },
    { method: "GET", path: "/admin/explain?token=nobody&model=chat-a", status: 404 },
  ],
  usage: [
    { method: "GET", path: "/admin/usage", status: 200 },
    { method: "GET", path: "/admin/usage?from=yesterday", status: 400 },
  ],
  requests: [
    { method: "GET", path: "/admin/requests", status: 200 },
    { method: "GET", path: "/admin/requests?status=abc", status: 400 },
  ],
  targets: [{ method: "GET", path: "/admin/targets", status: 200 }],
  config: [{ method: "GET", path: "/admin/config", status: 200 }],
  reload: [{ method: "POST", path: "/admin/reload", status: 200 }],
  teams: [
    { method: "GET", path: "/admin/teams", status: 200 },
    { method: "POST", path: "/admin/teams", body: () => ({ name: `t-${names++}` }), status: 201 },
    { method: "POST", path: "/admin/teams", body: { name: "no spaces" }, status: 400 },
    { method: "POST", path: "/admin/teams", body: { name: "file-team" }, status: 409 },
  ],
  team: [
    { method: "GET", path: "/admin/teams/{team}", status: 200 },
    { method: "GET", path: "/admin/teams/nobody", status: 404 },
    { method: "PATCH", path: "/admin/teams/{team}", body: { limits: { rpm: 5 } }, status: 200 },
    { method: "PATCH", path: "/admin/teams/{team}", body: { limits: { rpm: -1 } }, status: 400 },
    { method: "PATCH", path: "/admin/teams/file-team", body: { limits: { rpm: 5 } }, status: 409 },
    { method: "DELETE", path: "/admin/teams/{team}", status: 200 },
    { method: "DELETE", path: "/admin/teams/nobody", status: 404 },
  ],
  alerts: [{ method: "GET", path: "/admin/alerts", status: 200 }],
};

/** Admin paths that no route serves. */
const UNSERVED = ["/admin", "/admin/", "/admin/nope", "/admin/audit/x", "/admin/Tokens"];

type Send = (method: string, path: string, token?: string, body?: unknown) => Promise<Response>;

function adminRoutes(): [AdminRoute, RouteSpec][] {
  return (Object.entries(ROUTES) as [RouteId, RouteSpec][])
    .filter((entry): entry is [AdminRoute, RouteSpec] => entry[1].auth === "admin");
}

async function assertNoStore(response: Response, status: number, label: string): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, status, `${label}: ${text.slice(0, 300)}`);
  assert.equal(response.headers.get("cache-control"), "no-store", `${label} (${status})`);
}

/** A token issued for one call, so a DELETE or a rotation never spoils the next call. */
async function issue(send: Send): Promise<string> {
  const response = await send("POST", "/admin/tokens", ADMIN, { name: `n-${names++}`, models: ["chat-a"] });
  assert.equal(response.status, 201);
  return String((await response.json()).id);
}

/** A team made for one call, so a DELETE never spoils the next call. */
async function makeTeam(send: Send): Promise<string> {
  const name = `t-${names++}`;
  const response = await send("POST", "/admin/teams", ADMIN, { name });
  assert.equal(response.status, 201);
  await response.body?.cancel();
  return name;
}

/** Every call of every admin route, every refusal, the 405s and the unserved paths, through `send`. */
async function walk(send: Send): Promise<void> {
  for (const [id, spec] of adminRoutes()) {
    assert.ok(isAdminPath(spec.path), `${spec.path} is under /admin, where no-store is set`);
    const calls = CALLS[id];
    for (const method of spec.methods) {
      assert.ok(
        calls.some((c) => c.method === method && c.status < 300),
        `${method} ${spec.path} has a successful call in CALLS`,
      );
    }
    for (const call of calls) {
      const path = call.path.includes("{id}")
        ? call.path.replace("{id}", await issue(send))
        : call.path.includes("{team}")
        ? call.path.replace("{team}", await makeTeam(send))
        : call.path;
      assert.equal(matchRoute(path.split("?")[0])?.id, id, `${path} is served by ${id}`);
      const body = () => typeof call.body === "function" ? call.body() : call.body;
      const label = `${call.method} ${path}`;
      await assertNoStore(await send(call.method, path, ADMIN, body()), call.status, label);
      // HEAD is served as GET: what a cache would keep of it must be no-store too.
      if (call.method === "GET") {
        await assertNoStore(await send("HEAD", path, ADMIN), call.status, `HEAD ${path}`);
      }
      if (call.status >= 300) continue;
      // The refusals: no token, a wrong one, and a client token (valid, but not for /admin).
      for (const token of [undefined, "gw-not-an-admin-token-0123456789", CLIENT]) {
        await assertNoStore(await send(call.method, path, token, body()), 401, `${label} with ${token}`);
      }
    }
    await assertNoStore(
      await send("PUT", spec.path.replace("{id}", UNKNOWN_ID), ADMIN),
      405,
      `PUT ${spec.path}`,
    );
  }
  for (const path of UNSERVED) {
    await assertNoStore(await send("GET", path, ADMIN), 404, `GET ${path}`);
    await assertNoStore(await send("POST", path), 404, `POST ${path} without a token`);
  }
}

function requestInit(method: string, token?: string, body?: unknown): RequestInit {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
}

Deno.test("admin no-store: every admin route, method and error answers no-store, in-process", async () => {
  const result = parseConfigText(CONFIG, { source: "<admin-no-store>", env: {} });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const tokens = createTokenDirectory({ store: createMemoryTokenStore(), logger, pollMs: 60_000 });
  const usage = createSqliteStore(":memory:");
  const reloaded: ReloadStatus = {
    ok: true,
    at: new Date(0).toISOString(),
    trigger: "admin",
    issues: [],
    restart_required: [],
  };
  const handler = createGateway({
    state: () => state,
    logger,
    reloader: { status: () => reloaded, reload: () => Promise.resolve(reloaded) },
    services: {
      tokens,
      usage: { write: (record) => void usage.insert([record]) },
      usageStore: {
        flush: () => Promise.resolve(),
        query: (q) => usage.query(q),
        listRecords: (q) => usage.listRecords(q),
      },
    },
  });
  try {
    await walk((method, path, token, body) =>
      handler(new Request(`http://gateway.test${path}`, requestInit(method, token, body)))
    );
  } finally {
    await tokens.close();
    await usage.close();
  }
});

Deno.test("admin no-store: every admin route, method and error answers no-store, over a socket", async () => {
  const gw = await startGateway(CONFIG);
  try {
    await walk((method, path, token, body) => fetch(`${gw.url}${path}`, requestInit(method, token, body)));
  } finally {
    await gw.stop();
  }
});

Deno.test("admin no-store: /metrics answers no-store, with the admin token or refused without it", async () => {
  const gw = await startGateway(CONFIG);
  try {
    for (const token of [ADMIN, undefined]) {
      const res = await fetch(`${gw.url}/metrics`, {
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      });
      await res.body?.cancel();
      assert.equal(res.status, token === undefined ? 401 : 200);
      assert.equal(res.headers.get("cache-control"), "no-store");
    }
  } finally {
    await gw.stop();
  }
});

/** One raw exchange: status, headers (names lowercased) and body. */
async function raw(gw: TestGateway, head: string) {
  const text = await rawExchange(Number(new URL(gw.url).port), head, new Uint8Array(), 5_000);
  const end = text.indexOf("\r\n\r\n");
  const [statusLine, ...lines] = text.slice(0, end < 0 ? text.length : end).split("\r\n");
  const headers = new Map(
    lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  return { status: Number(statusLine.split(" ")[1]), headers, body: end < 0 ? "" : text.slice(end + 4) };
}

Deno.test("admin no-store: the edge's own answers under /admin (a query or header too large, bad HTTP) too", async () => {
  const gw = await startGateway(CONFIG);
  // The single binary (GATEWAY_BIN) may be Bun's, whose HTTP parser answers a head too large by itself with a
  // bare 431 (no body, nothing that lets a cache keep it), before the gateway sees the request.
  const bin = Deno.env.get("GATEWAY_BIN") !== undefined;
  try {
    const big = "x".repeat(70_000);
    for (
      const head of [
        `GET /admin/tokens?q=${big} HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${ADMIN}\r\n\r\n`,
        `GET /admin/tokens HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${ADMIN}\r\nx-pad: ${big}\r\n\r\n`,
      ]
    ) {
      const answer = await raw(gw, head);
      assert.equal(answer.status, 431, `${answer.status} ${answer.body.slice(0, 200)}`);
      if (bin && answer.body === "") {
        assert.equal(answer.headers.has("expires"), false);
        assert.equal(answer.headers.has("cache-control"), false);
        continue;
      }
      assert.equal(answer.headers.get("cache-control"), "no-store");
      assert.equal(answer.headers.get("x-content-type-options"), "nosniff");
      assert.equal(JSON.parse(answer.body).error.code, "request_headers_too_large");
    }
    if (!bin) {
      const bad = await raw(gw, "GET /admin/tokens HTTP/1.1\r\nhost: gw\r\nbad header line\r\n\r\n");
      assert.equal(bad.status, 400, bad.body);
      assert.equal(bad.headers.get("cache-control"), "no-store");
    }
  } finally {
    await gw.stop();
  }
});

Deno.test("console headers: its errors are no-store with its security headers; its files keep their caching", async () => {
  const gw = await startGateway(CONFIG);
  try {
    const errors: [string, string, number][] = [
      ["GET", "/console/missing.js", 404],
      ["POST", "/console", 405],
      ["DELETE", "/console/console.js", 405],
    ];
    for (const [method, path, status] of errors) {
      const res = await fetch(`${gw.url}${path}`, { method });
      const body = await res.json();
      assert.equal(res.status, status, `${method} ${path}: ${JSON.stringify(body)}`);
      assert.equal(typeof body.error.message, "string");
      assert.equal(res.headers.get("cache-control"), "no-store", `${method} ${path}`);
      assert.match(
        res.headers.get("content-security-policy") ?? "",
        /default-src 'self'/,
        `${method} ${path}`,
      );
      assert.equal(res.headers.get("x-content-type-options"), "nosniff", `${method} ${path}`);
      assert.equal(res.headers.get("x-frame-options"), "DENY", `${method} ${path}`);
    }
    const script = await fetch(`${gw.url}/console/console.js`);
    await script.body?.cancel();
    assert.equal(script.status, 200);
    assert.equal(script.headers.get("cache-control"), "no-cache", "an asset keeps its own caching");
  } finally {
    await gw.stop();
  }
});
