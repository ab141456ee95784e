import assert from "node:assert/strict";
import { hashToken } from "../auth/authenticate.ts";
import { parseConfigText } from "../config/load.ts";
import type { GatewayState } from "../http/context.ts";
import { createMemoryLogger } from "../log.ts";
import { createProviders } from "../providers/registry.ts";
import { createGateway } from "../server.ts";

const ADMIN_TOKEN = "gw-admin-console-test-0123456789";

const BASE = `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: app, token: gw-client-console-test-0123456789, models: ["*"] }
`;
const WITH_ADMIN = `${BASE}admin_tokens:\n  - { name: ops, sha256: ${hashToken(ADMIN_TOKEN)} }\n`;

function gateway(yaml: string) {
  const result = parseConfigText(yaml, { source: "<test>", env: {} });
  if (!result.ok) throw new Error(`test config invalid: ${JSON.stringify(result.issues)}`);
  const state: GatewayState = { config: result.config, providers: createProviders(result.config.providers) };
  const handler = createGateway({ state: () => state, logger: createMemoryLogger() });
  return (path: string, init: RequestInit = {}) => handler(new Request(`http://gateway.test${path}`, init));
}

Deno.test("without an admin token the console is not served at all", async () => {
  const call = gateway(BASE);
  for (const path of ["/console", "/console/", "/console/console.js", "/console/index.html"]) {
    const response = await call(path);
    assert.equal(response.status, 404, path);
    assert.doesNotMatch(await response.text(), /<html|uPlot/i, path);
  }
});

Deno.test("the page: /console and /console/ answer index.html, never cached, with strict headers", async () => {
  const call = gateway(WITH_ADMIN);
  for (const path of ["/console", "/console/", "/console/index.html"]) {
    const response = await call(path);
    assert.equal(response.status, 200, path);
    assert.equal(response.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(response.headers.get("cache-control"), "no-store");
    const csp = response.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/, "no inline or remote script");
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    assert.equal(response.headers.get("referrer-policy"), "no-referrer");
    const html = await response.text();
    assert.match(html, /<title>Gateway console<\/title>/);
    // No inline script (the CSP would block it) and nothing from another origin.
    assert.match(html, /<script type="module" src="\/console\/console\.js\?v=[0-9a-f]{8}"><\/script>/);
    assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/);
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//);
  }
});

Deno.test("assets: content types, a year of caching for the versioned URL, ETag revalidation otherwise", async () => {
  const call = gateway(WITH_ADMIN);
  const html = await (await call("/console")).text();
  const types: Record<string, string> = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "uplot.css": "text/css; charset=utf-8",
  };
  for (const [name, type] of Object.entries(types)) {
    const versioned = html.match(new RegExp(`/console/${name.replace(".", "\\.")}\\?v=[0-9a-f]{8}`))?.[0];
    assert.ok(versioned, `index.html links ${name}`);
    const response = await call(versioned);
    assert.equal(response.status, 200, name);
    assert.equal(response.headers.get("content-type"), type);
    assert.equal(response.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    const body = await response.text();
    assert.ok(body.length > 500, `${name} has content`);
    const etag = response.headers.get("etag");
    assert.ok(etag);
    const plain = await call(`/console/${name}`);
    assert.equal(plain.headers.get("cache-control"), "no-cache", "an unversioned URL revalidates");
    assert.equal(await plain.text(), body);
    const again = await call(`/console/${name}`, { headers: { "if-none-match": etag } });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), "");
  }
});

Deno.test("HEAD answers the headers without a body; other methods are 405", async () => {
  const call = gateway(WITH_ADMIN);
  for (const path of ["/console", "/console/console.js"]) {
    const response = await call(path, { method: "HEAD" });
    assert.equal(response.status, 200, path);
    const get = await call(path);
    const body = new Uint8Array(await get.arrayBuffer());
    assert.equal(response.headers.get("content-type"), get.headers.get("content-type"));
    assert.equal(response.headers.get("content-length"), String(body.byteLength));
    assert.equal(await response.text(), "");
  }
  const post = await call("/console", { method: "POST", body: "{}" });
  assert.equal(post.status, 405);
  await post.body?.cancel();
});

Deno.test("unknown assets and path tricks are 404: only the embedded files are served", async () => {
  const call = gateway(WITH_ADMIN);
  for (
    const path of [
      "/console/nope.js",
      "/console/../deno.json",
      "/console/%2e%2e/deno.json",
      "/console/..%2fmain.ts",
      "/console/assets/console.js",
      "/console/serve_console.ts",
      "/console/console.js/",
      "/console/CONSOLE.JS",
    ]
  ) {
    const response = await call(path);
    assert.equal(response.status, 404, path);
    assert.doesNotMatch(await response.text(), /import|"name"/, path);
  }
});

Deno.test("the page is public, the data is not: the admin API still wants the admin token", async () => {
  const call = gateway(WITH_ADMIN);
  const page = await call("/console");
  assert.equal(page.status, 200);
  await page.body?.cancel();
  const usage = await call("/admin/usage");
  assert.equal(usage.status, 401);
  await usage.body?.cancel();
  const withToken = await call("/admin/targets", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(withToken.status, 200);
  await withToken.body?.cancel();
});
